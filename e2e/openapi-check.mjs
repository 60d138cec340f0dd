// Checks answers of the service against its OpenAPI document: shared by
// openapi.test.mjs (golden and live answers) and openapi-props.test.mjs
// (answers to sampled request bodies).
//
// An answer is { method, target, status, headers, body, reqHeaders, reqBody,
// recordedHeaders? }, headers with lower-case names and the body as text
// without its final newlines. check(ans, where) holds it to what the document
// says for its route, method and status: the status must be documented, the
// Content-Type must be one of the documented media types, the body must match
// the schema (ajv, JSON Schema 2020-12, with ajv-formats), the required
// headers must be there and match theirs, a header a client acts on (Allow,
// Location, WWW-Authenticate, ETag, Last-Modified) may be answered only where
// it is documented, and a request the service accepted (2xx) must match the
// documented parameters and request body. HEAD is checked against GET (no
// body), OPTIONS and an undocumented method against the path's documented
// methods (Allow) and components.responses.MethodNotAllowed, an unknown path
// against components.responses.NotFound.

import assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// DESCRIBED_HEADERS are the response headers a client acts on: where one is
// answered, the response object must document it.
const DESCRIBED_HEADERS = ['allow', 'location', 'www-authenticate', 'etag', 'last-modified'];

// newAjv is the validator every check uses. Its patterns compile with the `u`
// flag (ajv's default, unicodeRegExp), which the document's Unicode property
// escapes (\p{...}) need.
export function newAjv() {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  return ajv;
}

// pointer is a JSON pointer fragment for the given keys.
export const pointer = (...keys) => '#/' + keys.map((k) => String(k).replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

// needsToken reports whether an operation's security requirement (its own, else
// the document's) asks for a credential: absent, [] or one empty alternative ({})
// means anyone may call it.
export function needsToken(doc, op) {
  const security = op.security ?? doc.security ?? [];
  return security.length > 0 && !security.some((req) => Object.keys(req).length === 0);
}

// send makes a request to base + path and returns the answer, unchecked.
export async function send(base, method, path, { token, body, contentType = 'application/json', extra = {} } = {}) {
  const headers = { ...extra };
  if (token) headers.authorization = 'Bearer ' + token;
  if (body !== undefined) headers['content-type'] = contentType;
  const resp = await fetch(base + path, { method, headers, body });
  return {
    method,
    target: path,
    status: resp.status,
    headers: Object.fromEntries(resp.headers),
    body: (await resp.text()).replace(/\n+$/, ''),
    reqHeaders: headers,
    reqBody: typeof body === 'string' ? body : undefined,
  };
}

// asServiceReads is a JSON request body as the service reads it, for its schema
// to judge. The service matches JSON names case-insensitively (docs/contract.md),
// which JSON Schema cannot say: they are spelt as the schema does. It also
// ignores members it does not read in a JSON body, and trims the white space
// around texts (the document's descriptions say both; the schemas list only the
// members it reads, trimmed), but not in a merge patch, which refuses them. Its
// white space is Unicode's White_Space (Go's unicode.IsSpace), not JavaScript's
// trim(), which differs on U+0085 and U+FEFF.
export function asServiceReads(body, schema, mediaType) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const names = Object.keys(schema.properties ?? {});
  const trim = (v) => (typeof v === 'string' ? v.replace(/^\p{White_Space}+|\p{White_Space}+$/gu, '') : v);
  return Object.fromEntries(Object.entries(body)
    .map(([k, v]) => [names.find((n) => n.toLowerCase() === k.toLowerCase()) ?? k, trim(v)])
    .filter(([k]) => mediaType !== 'application/json' || names.includes(k)));
}

// openAPIChecker returns the checks for the document doc (as served). seen
// collects "METHOD /path STATUS" of every answer checked.
export function openAPIChecker(doc) {
  const ajv = newAjv();
  ajv.addSchema(doc, 'openapi.json');
  const seen = new Set();

  // at returns what the JSON pointer ptr ("#/a/b") names in doc.
  const at = (ptr) => ptr.slice(2).split('/').map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~')).reduce((o, k) => o?.[k], doc);

  // resolve follows a local $ref ("#/components/...") in doc.
  function resolve(obj) {
    while (obj && obj.$ref) obj = at(obj.$ref);
    return obj;
  }

  // validator is the compiled schema at the JSON pointer ptr of the document.
  const validator = (ptr) => ajv.getSchema('openapi.json' + ptr) ?? ajv.compile({ $ref: 'openapi.json' + ptr });

  // validate checks value against the schema at the JSON pointer ptr of the document.
  function validate(ptr, value, what) {
    const v = validator(ptr);
    if (!v(value)) {
      assert.fail(`${what}: does not match ${ptr}:\n${ajv.errorsText(v.errors, { separator: '\n' })}\n${JSON.stringify(value)}`);
    }
  }

  // route finds the documented path template matching a concrete path.
  function route(path) {
    for (const template of Object.keys(doc.paths)) {
      const re = new RegExp('^' + template.replace(/\{[^}]+\}/g, '[^/]+') + '$');
      if (re.test(path)) return template;
    }
    return null;
  }

  // allowFor is the Allow header a documented path answers with.
  function allowFor(template) {
    const item = doc.paths[template];
    const methods = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase());
    if (methods.includes('GET')) methods.push('HEAD');
    methods.push('OPTIONS');
    return [...new Set(methods)].sort().join(', ');
  }

  // checkResponse checks an answer against the response object at ptr (in doc).
  function checkResponse(ptr, ans, what) {
    const raw = at(ptr);
    assert.ok(raw, `${what}: nothing documented at ${ptr}`);
    const respPtr = raw.$ref ?? ptr;
    const response = resolve(raw);
    for (const [name, h] of Object.entries(response.headers ?? {})) {
      const value = ans.headers[name.toLowerCase()];
      if (value === undefined) {
        const recorded = !ans.recordedHeaders || ans.recordedHeaders.includes(name.toLowerCase());
        assert.ok(!recorded || !resolve(h).required, `${what}: required header ${name} missing`);
        continue;
      }
      validate((h.$ref ?? `${respPtr}/headers/${pointer(name).slice(2)}`) + '/schema', value, `${what}: header ${name}`);
    }
    const documented = Object.keys(response.headers ?? {}).map((n) => n.toLowerCase());
    for (const name of DESCRIBED_HEADERS) {
      assert.ok(ans.headers[name] === undefined || documented.includes(name), `${what}: answered header ${name} is not documented`);
    }
    const content = response.content;
    if (!content || ans.method === 'HEAD') {
      assert.equal(ans.body, '', `${what}: ${content ? 'HEAD answered a body' : 'documented without a body'}`);
      return;
    }
    const ct = ans.headers['content-type'] ?? '';
    const mediaType = ct.split(';')[0].trim().toLowerCase();
    assert.ok(content[mediaType], `${what}: Content-Type ${ct} is not documented (${Object.keys(content)})`);
    const value = mediaType.endsWith('json') ? JSON.parse(ans.body) : ans.body;
    validate(`${respPtr}/content/${pointer(mediaType).slice(2)}/schema`, value, `${what}: body`);
  }

  // check validates one answer against the document.
  function check(ans, where) {
    const path = ans.target.split('?')[0];
    const what = `${where}: ${ans.method} ${ans.target} -> ${ans.status}`;
    const template = route(path);
    if (!template) {
      assert.equal(ans.status, 404, `${what}: no documented path matches ${path}`);
      checkResponse(pointer('components', 'responses', 'NotFound'), ans, what);
      return;
    }
    const item = doc.paths[template];
    const method = ans.method.toLowerCase();
    if (method === 'options' && !item.options) {
      assert.equal(ans.status, 204, what);
      assert.equal(ans.headers.allow, allowFor(template), `${what}: Allow`);
      seen.add(`OPTIONS ${template} 204`);
      return;
    }
    const opMethod = method === 'head' && !item.head ? 'get' : method;
    if (!item[opMethod]) {
      assert.equal(ans.status, 405, `${what}: ${ans.method} is not documented on ${template}`);
      assert.equal(ans.headers.allow, allowFor(template), `${what}: Allow`);
      checkResponse(pointer('components', 'responses', 'MethodNotAllowed'), ans, what);
      return;
    }
    const op = item[opMethod];
    const status = String(ans.status);
    const key = op.responses[status] ? status : op.responses.default && ans.status >= 500 ? 'default' : null;
    assert.ok(key, `${what}: status ${status} is not documented for ${opMethod.toUpperCase()} ${template} (${Object.keys(op.responses)})`);
    seen.add(`${opMethod.toUpperCase()} ${template} ${key}`);
    checkResponse(pointer('paths', template, opMethod, 'responses', key), ans, what);
    if (ans.status < 300) checkParameters(template, item, op, ans.target, what);
    if (ans.status < 300 && ans.reqBody !== undefined && op.requestBody) {
      const rb = resolve(op.requestBody);
      const mediaType = (ans.reqHeaders['content-type'] ?? '').split(';')[0].trim().toLowerCase();
      assert.ok(rb.content[mediaType], `${what}: request Content-Type ${mediaType} was accepted but is not documented`);
      const body = asServiceReads(JSON.parse(ans.reqBody), resolve(rb.content[mediaType].schema), mediaType);
      validate(pointer('paths', template, opMethod, 'requestBody', 'content', mediaType, 'schema'), body, `${what}: accepted request body`);
    }
  }

  // checkParameters checks that a request the service accepted (2xx) sent its path
  // and query parameters as documented: a documented parameter the service reads as
  // valid must be valid by its schema too. Query names match case-insensitively, as
  // the service reads them; values are strings on the wire, so integers are converted.
  function checkParameters(template, item, op, target, what) {
    const url = new URL(target, 'http://x');
    const names = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const values = new RegExp('^' + template.replace(/\{[^}]+\}/g, '([^/]+)') + '$').exec(url.pathname).slice(1);
    const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(resolve);
    for (const p of params) {
      let raw;
      if (p.in === 'path') raw = decodeURIComponent(values[names.indexOf(p.name)]);
      else if (p.in === 'query') {
        const found = [...url.searchParams].filter(([k]) => k.toLowerCase() === p.name.toLowerCase());
        assert.ok(found.length <= 1, `${what}: query parameter ${p.name} given twice was accepted`);
        if (found.length === 0) continue;
        raw = found[0][1];
      } else continue; // headers: the service reads any value
      if (p.required) assert.ok(raw !== undefined, `${what}: required parameter ${p.name} missing`);
      const schema = resolve(p.schema);
      const value = schema.type === 'integer' && /^-?[0-9]+$/.test(raw) ? Number(raw) : raw;
      const check = ajv.compile(schema);
      assert.ok(check(value), `${what}: accepted ${p.in} parameter ${p.name}=${raw} does not match its schema: ${ajv.errorsText(check.errors)}`);
    }
  }

  return { ajv, seen, at, resolve, validator, validate, route, allowFor, checkResponse, check };
}
