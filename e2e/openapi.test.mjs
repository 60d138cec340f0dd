// Checks quartet's OpenAPI document against real answers.
//
// The document served at GET /openapi.json must be valid OpenAPI 3.1
// (@apidevtools/swagger-parser), and every answer below must match what it
// says for the answer's route, method and status (openapi-check.mjs: ajv,
// JSON Schema 2020-12, with ajv-formats): the status must be documented, the
// Content-Type must be one of the documented media types, the body must match
// the schema and the
// required headers (Location, WWW-Authenticate, Allow) must be there and match
// theirs, and a header a client acts on (Allow, Location, WWW-Authenticate,
// ETag, Last-Modified) may be answered only where it is documented. Checked:
//
//   - every transcript in the REST golden files (testdata/rest/*.golden),
//     which TestGoldenHTTP holds to the service's real answers; a request the
//     service accepted (2xx) must also match the documented request body;
//   - live answers of a service with authentication on and -auth-reads: 401
//     and 403 on every operation that can give them, 413, 415, 304 and 412,
//     and a CRUD round on users and orders with a token; 429 from a copy of the
//     service whose queue is full.
//
// A client generated from the document (openapi-typescript types, openapi-fetch)
// must type-check (TypeScript, strict) and do a CRUD round against the service.
//
// HEAD answers are checked against the GET operation (no body), OPTIONS and
// an undocumented method against the path's documented methods (Allow) and
// components.responses.MethodNotAllowed, an unknown path against
// components.responses.NotFound. Finally every documented status of every
// /api operation must have been seen at least once.
//
// Environment:
//
//	QUARTET_URL          base URL of the service under test (required), run
//	                     with -jwt-secret and -auth-reads
//	QUARTET_BUSY_URL     the same service with every work slot held and no
//	                     request allowed to wait: every request gets 429 (required)
//	QUARTET_WRITE_TOKEN  a bearer token with the write scope (required)
//	QUARTET_READ_TOKEN   a valid bearer token without it (required)
//	QUARTET_GOLDEN_DIR   the REST golden files (default ../testdata/rest)
//
// Run: go test -run TestOpenAPIAgainstAnswers (after npm ci in e2e/).

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import { METHODS, openAPIChecker, send } from './openapi-check.mjs';

const base = process.env.QUARTET_URL;
const writeToken = process.env.QUARTET_WRITE_TOKEN;
const readToken = process.env.QUARTET_READ_TOKEN;
const busy = process.env.QUARTET_BUSY_URL;
if (!base || !writeToken || !readToken || !busy) {
  throw new Error('QUARTET_URL, QUARTET_BUSY_URL, QUARTET_WRITE_TOKEN and QUARTET_READ_TOKEN must be set (go test -run TestOpenAPIAgainstAnswers sets them)');
}
const goldenDir = process.env.QUARTET_GOLDEN_DIR || join(dirname(fileURLToPath(import.meta.url)), '..', 'testdata', 'rest');

// GOLDEN_HEADERS are the response headers golden files record (golden_test.go
// goldenHeaders): only these can be missing from a golden answer.
const GOLDEN_HEADERS = ['allow', 'content-type', 'location', 'odata-version', 'www-authenticate'];

let doc; // the document as served
let check; // openAPIChecker(doc).check
let seen; // "METHOD /path STATUS" of every answer checked

before(async () => {
  const resp = await fetch(base + '/openapi.json');
  assert.equal(resp.status, 200);
  assert.equal(resp.headers.get('content-type'), 'application/json');
  doc = await resp.json();
  ({ check, seen } = openAPIChecker(doc));
});

// parseHTTP reads a .http file (see golden_test.go) into requests.
function parseHTTP(text) {
  return text.split('\n###\n').map((part) => {
    const [head, ...rest] = part.replace(/^\n+/, '').split('\n\n');
    const [line, ...headerLines] = head.replace(/\n+$/, '').split('\n');
    const headers = {};
    for (const h of headerLines) {
      const i = h.indexOf(':');
      headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
    }
    // "@[N]" stands for N arrays nested in each other, as golden_test.go reads it.
    const body = rest.join('\n\n').replace(/\n$/, '').replace(/@\[([0-9]+)\]/g, (_, n) => '['.repeat(+n) + ']'.repeat(+n));
    return { line, headers, body: body === '' ? undefined : body };
  });
}

// parseGolden reads a .golden transcript into answers.
function parseGolden(text) {
  return text.split('\n###\n').map((part) => {
    const i = part.indexOf('\n\n');
    const head = part.slice(0, i).split('\n');
    const [method, ...target] = head[0].split(' ');
    const status = Number(head[1].replace(/^HTTP /, ''));
    const headers = {};
    for (const h of head.slice(2)) {
      const j = h.indexOf(':');
      headers[h.slice(0, j).trim().toLowerCase()] = h.slice(j + 1).trim();
    }
    return { method, target: target.join(' '), status, headers, body: part.slice(i + 2).replace(/\n+$/, '') };
  });
}

test('the served document is valid OpenAPI 3.1', async () => {
  assert.equal(doc.openapi, '3.1.0');
  const api = await SwaggerParser.validate(structuredClone(doc));
  assert.ok(api.paths['/api/users']);
});

test('every REST golden answer matches the document', () => {
  const files = readdirSync(goldenDir).filter((f) => f.endsWith('.golden'));
  assert.ok(files.length > 0, `no golden files in ${goldenDir}`);
  let n = 0;
  for (const file of files) {
    const answers = parseGolden(readFileSync(join(goldenDir, file), 'utf8'));
    const requests = parseHTTP(readFileSync(join(goldenDir, file.replace(/\.golden$/, '.http')), 'utf8'));
    assert.equal(answers.length, requests.length, `${file}: answers and requests differ in number`);
    answers.forEach((ans, i) => {
      const req = requests[i];
      ans.reqHeaders = req.headers;
      ans.recordedHeaders = GOLDEN_HEADERS;
      ans.reqBody = req.body?.startsWith('@json-string-of ') ? undefined : req.body;
      check(ans, `${file} #${i + 1}`);
      n++;
    });
  }
  assert.ok(n > 50, `only ${n} golden answers checked`);
});

// call sends a live request (to base, or to the service at) and checks its
// answer against the document.
async function call(method, path, { at = base, ...opts } = {}) {
  const ans = await send(at, method, path, opts);
  check(ans, 'live');
  return ans;
}

test('live answers with authentication on match the document', async () => {
  const user = JSON.stringify({ name: 'Olga', email: 'olga@example.com' });
  const order = JSON.stringify({ productId: 3, quantity: 2 });
  // 401 without a token (reads too, under -auth-reads) or with a bad one; 403 with a token lacking write.
  for (const [method, path, body, contentType] of [
    ['GET', '/api/users'], ['GET', '/api/users/1'], ['GET', '/api/users/1/orders'], ['GET', '/api/users/1/orders/1'],
    ['POST', '/api/users', user], ['PUT', '/api/users/1', user], ['PATCH', '/api/users/1', user, 'application/merge-patch+json'],
    ['DELETE', '/api/users/1'], ['POST', '/api/users/1/orders', order],
  ]) {
    const a = await call(method, path, { body, contentType });
    assert.equal(a.status, 401);
    assert.equal((await call(method, path, { body, contentType, token: 'not.a.token' })).status, 401);
    if (method !== 'GET') assert.equal((await call(method, path, { body, contentType, token: readToken })).status, 403);
  }
  // A round of CRUD with a write token.
  const created = await call('POST', '/api/users', { token: writeToken, body: user });
  assert.equal(created.status, 201);
  const id = JSON.parse(created.body).id;
  assert.equal((await call('GET', created.headers.location, { token: readToken })).status, 200);
  assert.equal((await call('GET', '/api/users', { token: readToken })).status, 200);
  assert.equal((await call('GET', '/api/users?page=1&pageSize=2&sortBy=name&search=o', { token: readToken })).status, 200);
  assert.equal((await call('GET', '/api/users?pageSize=101', { token: readToken })).status, 400);
  assert.equal((await call('PUT', `/api/users/${id}`, { token: writeToken, body: JSON.stringify({ id, name: 'Olga K', email: 'olga@example.com' }) })).status, 200);
  assert.equal((await call('PUT', `/api/users/${id}`, { token: writeToken, body: JSON.stringify({ name: '', email: 'nope' }) })).status, 400);
  const placed = await call('POST', `/api/users/${id}/orders`, { token: writeToken, body: order });
  assert.equal(placed.status, 201);
  assert.equal((await call('GET', placed.headers.location, { token: readToken })).status, 200);
  assert.equal((await call('GET', `/api/users/${id}/orders`, { token: readToken })).status, 200);
  // Conditional requests: 304 for a current ETag, 412 for a stale one.
  const got = await call('GET', placed.headers.location, { token: readToken });
  assert.equal((await call('GET', placed.headers.location, { token: readToken, extra: { 'if-none-match': got.headers.etag } })).status, 304);
  const patch = { token: writeToken, body: JSON.stringify({ name: 'Olga P' }), contentType: 'application/merge-patch+json' };
  assert.equal((await call('PATCH', `/api/users/${id}`, { ...patch, extra: { 'if-match': '"stale"' } })).status, 412);
  const patched = await call('PATCH', `/api/users/${id}`, patch);
  assert.equal(patched.status, 200);
  assert.equal((await call('PATCH', `/api/users/${id}`, { ...patch, extra: { 'if-match': patched.headers.etag } })).status, 200);
  // 413 and 415 on every operation with a body.
  const big = JSON.stringify({ name: 'a'.repeat(2 << 20), email: 'a@b.c' });
  for (const [method, path, contentType] of [['POST', '/api/users'], ['PUT', `/api/users/${id}`], ['PATCH', `/api/users/${id}`, 'application/merge-patch+json'], ['POST', `/api/users/${id}/orders`]]) {
    assert.equal((await call(method, path, { token: writeToken, body: big, contentType })).status, 413);
    assert.equal((await call(method, path, { token: writeToken, body: user, contentType: 'text/plain' })).status, 415);
  }
  assert.equal((await call('DELETE', `/api/users/${id}`, { token: writeToken })).status, 204);
  assert.equal((await call('DELETE', `/api/users/${id}`, { token: writeToken })).status, 404);
  assert.equal((await call('GET', '/healthz')).status, 200);
  assert.equal((await call('GET', '/graphql/schema.graphql')).status, 200);
  assert.equal((await call('GET', '/openapi.json')).status, 200);
});

// The client a REST user generates: openapi-typescript turns the served document
// into types, a CRUD round written against them with openapi-fetch must type-check
// (TypeScript, strict), and the same code, types stripped, runs against the service.
const clientSource = `
import createClient from 'openapi-fetch';
import type { paths, components } from './api';

type User = components['schemas']['User'];

export async function crud(baseUrl: string, token: string): Promise<string[]> {
  const client = createClient<paths>({ baseUrl, headers: { authorization: 'Bearer ' + token } });
  const log: string[] = [];
  const created = await client.POST('/api/users', { body: { name: 'Gen', email: 'gen@example.com' } });
  if (!created.data) throw new Error('create: ' + JSON.stringify(created.error));
  const user: User = created.data;
  log.push('created ' + user.id + ' ' + created.response.headers.get('location'));
  const got = await client.GET('/api/users/{id}', { params: { path: { id: user.id } } });
  log.push('got ' + got.data?.name);
  const page = await client.GET('/api/users', { params: { query: { page: 1, pageSize: 2, search: 'gen', sortBy: 'name' } } });
  const items = page.data && !Array.isArray(page.data) ? page.data.items : [];
  log.push('page ' + items.map((u) => u.name).join(','));
  const updated = await client.PUT('/api/users/{id}', { params: { path: { id: user.id } }, body: { name: 'Gen 2', email: 'gen@example.com' } });
  log.push('updated ' + updated.data?.name);
  const bad = await client.PUT('/api/users/{id}', { params: { path: { id: user.id } }, body: { name: ' ', email: 'x' } });
  log.push('invalid ' + bad.response.status + ' ' + Object.keys(bad.error?.errors ?? {}).sort().join(','));
  const order = await client.POST('/api/users/{userId}/orders', { params: { path: { userId: user.id } }, body: { productId: 3, quantity: 2 } });
  log.push('ordered ' + order.data?.customerName + ' x' + order.data?.quantity);
  const orders = await client.GET('/api/users/{userId}/orders', { params: { path: { userId: user.id } } });
  log.push('orders ' + orders.data?.length);
  const deleted = await client.DELETE('/api/users/{id}', { params: { path: { id: user.id } } });
  log.push('deleted ' + deleted.response.status);
  const gone = await client.GET('/api/users/{id}', { params: { path: { id: user.id } } });
  log.push('gone ' + gone.response.status + ' ' + gone.error?.title);
  return log;
}
`;

test('a client generated from the document (openapi-typescript + openapi-fetch) type-checks and does CRUD', async () => {
  const { default: openapiTS, astToString } = await import('openapi-typescript');
  const ts = (await import('typescript')).default;
  const here = dirname(fileURLToPath(import.meta.url));
  const dir = mkdtempSync(join(here, '.openapi-client-')); // inside e2e/: node_modules resolves
  try {
    writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS(structuredClone(doc))));
    writeFileSync(join(dir, 'client.ts'), clientSource);
    const program = ts.createProgram([join(dir, 'client.ts')], {
      strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler, skipLibCheck: true, lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(diagnostics, [], 'the client written against the generated types does not type-check');
    const js = ts.transpileModule(clientSource, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    writeFileSync(join(dir, 'client.mjs'), js);
    const { crud } = await import(pathToFileURL(join(dir, 'client.mjs')).href);
    const log = await crud(base, writeToken);
    assert.match(log[0], /^created \d+ \/api\/users\/\d+$/);
    assert.deepEqual(log.slice(1), ['got Gen', 'page Gen', 'updated Gen 2', 'invalid 400 email,name', 'ordered Gen 2 x2', 'orders 1', 'deleted 204', 'gone 404 Not Found']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every operation answers 429 as documented when its client may wait no more', async () => {
  for (const [method, path] of [['GET', '/api/users'], ['POST', '/api/users'], ['GET', '/api/users/1'], ['PUT', '/api/users/1'],
    ['PATCH', '/api/users/1'], ['DELETE', '/api/users/1'], ['GET', '/api/users/1/orders'], ['POST', '/api/users/1/orders'],
    ['GET', '/api/users/1/orders/1'], ['GET', '/healthz'], ['GET', '/openapi.json']]) {
    assert.equal((await call(method, path, { token: writeToken, at: busy })).status, 429, `${method} ${path}`);
  }
});

test('every documented status of every /api operation was seen', () => {
  const missing = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    if (!template.startsWith('/api/')) continue;
    for (const m of METHODS) {
      if (!item[m]) continue;
      for (const status of Object.keys(item[m].responses)) {
        if (status === 'default') continue; // 500: not something a test can cause from outside
        if (!seen.has(`${m.toUpperCase()} ${template} ${status}`)) missing.push(`${m.toUpperCase()} ${template} ${status}`);
      }
    }
  }
  assert.deepEqual(missing, [], 'documented but never answered by the goldens or the live calls');
});
