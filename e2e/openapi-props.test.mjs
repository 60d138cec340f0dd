// Property-based test of quartet's OpenAPI document against the service: a body
// the document says is valid is accepted, one it says is invalid is refused, and
// every answer is one the document describes.
//
// For every operation with a JSON request body in GET /openapi.json, request
// bodies are drawn from the operation's schema by a seeded sampler
// (schema-sample.mjs) and sorted by ajv (the options openapi.test.mjs uses,
// patterns with the `u` flag) into schema-valid and schema-invalid. Most must
// come out valid: a sampler that mostly misses the schema tests little. Each
// body is sent (the path's ids those of a user this test created; a bearer
// token when the operation's security asks for one) and every answer is checked
// against the document by openapi-check.mjs: documented status, Content-Type,
// headers, body schema. At most 1% of the valid bodies may be refused (4xx);
// none may fail (5xx). Bodies broken on purpose in one place (a bound, a type,
// a control character; see invalidFrom), and bodies the sampler drew, that the
// schema refuses even as the service reads them (trimmed, unread members left
// out) and for more than a `format`, must be refused with a documented 4xx.
//
// The seed is printed; a failure prints the bodies that failed, as JSON, and
// QUARTET_SEED=<seed> draws the same bodies again.
//
// Environment:
//
//	QUARTET_URL          base URL of the service under test (required)
//	QUARTET_WRITE_TOKEN  a bearer token with the write scope, for a service run
//	                     with -jwt-secret (required when the document asks for one)
//	QUARTET_SEED         the seed (an unsigned 32-bit integer; default 20260127)
//	QUARTET_SAMPLES      bodies drawn per operation (default 200)
//
// Run: go test -run TestOpenAPITools (after npm ci in e2e/).

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { METHODS, asServiceReads, needsToken, openAPIChecker, pointer, send } from './openapi-check.mjs';
import { createRandom, createSampler, seedFor } from './schema-sample.mjs';

const base = process.env.QUARTET_URL;
if (!base) throw new Error('QUARTET_URL must be set (go test -run TestOpenAPITools sets it)');
const writeToken = process.env.QUARTET_WRITE_TOKEN;
const seed = Number(process.env.QUARTET_SEED ?? 20260127);
const samples = Number(process.env.QUARTET_SAMPLES ?? 200);
if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) throw new Error(`QUARTET_SEED=${process.env.QUARTET_SEED}: not an unsigned 32-bit integer`);
if (!Number.isInteger(samples) || samples < 1) throw new Error(`QUARTET_SAMPLES=${process.env.QUARTET_SAMPLES}: not a positive integer`);

const MIN_VALID = 0.75; // of the bodies drawn, the share the schema must find valid
const MAX_REFUSED = 0.01; // of the valid bodies sent, the share that may be refused
const INVALID_SENT = 20; // bodies of each kind of invalid sent per operation

let doc;
let checker;
let userId; // a user this test created: the path's ids

before(async () => {
  const resp = await fetch(base + '/openapi.json');
  assert.equal(resp.status, 200);
  doc = await resp.json();
  checker = openAPIChecker(doc);
  const create = doc.paths['/api/users']?.post;
  assert.ok(create, 'the document has no POST /api/users to create the user the paths need');
  const ans = await send(base, 'POST', '/api/users', { token: tokenFor(create), body: JSON.stringify({ name: 'Props Owner', email: 'props@example.com' }) });
  checker.check(ans, 'setup');
  assert.equal(ans.status, 201, `creating the test's user: ${ans.body}`);
  userId = JSON.parse(ans.body).id;
});

// tokenFor is the token to send to op: the write token when its security asks for one.
function tokenFor(op) {
  if (!needsToken(doc, op)) return undefined;
  assert.ok(writeToken, 'the document asks for a bearer token: set QUARTET_WRITE_TOKEN');
  return writeToken;
}

// jsonBodyOperations are the operations whose request body is JSON (application/json
// or a +json type such as application/merge-patch+json), with that media type.
function jsonBodyOperations() {
  const ops = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op?.requestBody) continue;
      const content = checker.resolve(op.requestBody).content ?? {};
      const mediaType = Object.keys(content).find((t) => t === 'application/json' || t.endsWith('+json'));
      if (mediaType) ops.push({ template, method, op, mediaType });
    }
  }
  return ops;
}

// pathFor fills a template's parameters with the test's user's id. Every path
// with a body names at most one resource, the user: more would need more ids.
function pathFor(template) {
  const params = template.match(/\{[^}]+\}/g) ?? [];
  assert.ok(params.length <= 1, `${template}: more than one path parameter; the test creates only a user`);
  return template.replace(/\{[^}]+\}/, String(userId));
}

// legible escapes, in JSON text, the characters that would not show or would
// reorder a terminal's line (format, separator, space other than U+0020 and
// noncharacters): the text stays the same JSON.
const legible = (json) => json.replace(/[\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Noncharacter_Code_Point}]/gu, (c) =>
  c === ' ' ? c : [...Array(c.length).keys()].map((i) => '\\u' + c.charCodeAt(i).toString(16).padStart(4, '0')).join(''));

// show is a body, and the answer it got if it was sent, for a failure message.
const show = (f) => `${f.how ? f.how + ': ' : ''}${legible(JSON.stringify(f.body))}` +
  (f.status === undefined ? '' : `\n    -> ${f.status} ${legible(f.answer)}`) + (f.error ? `\n    ${legible(f.error)}` : '');

test('the document has the JSON request bodies this test samples', () => {
  const found = jsonBodyOperations().map(({ method, template }) => `${method.toUpperCase()} ${template}`).sort();
  for (const want of ['POST /api/users', 'PUT /api/users/{id}', 'PATCH /api/users/{id}', 'POST /api/users/{userId}/orders']) {
    assert.ok(found.includes(want), `no JSON request body on ${want} (found ${found})`);
  }
});

test(`bodies drawn from each request schema (seed ${seed}; QUARTET_SEED=${seed} draws them again)`, async (t) => {
  t.diagnostic(`seed ${seed}, ${samples} bodies per operation`);
  for (const { template, method, op, mediaType } of jsonBodyOperations()) {
    const name = `${method.toUpperCase()} ${template}`;
    await t.test(name, async () => {
      const random = createRandom(seedFor(seed, name));
      const sampler = createSampler(random, doc);
      const schemaPtr = pointer('paths', template, method, 'requestBody', 'content', mediaType, 'schema');
      const schema = checker.at(schemaPtr);
      const valid = checker.validator(schemaPtr);
      const token = tokenFor(op);
      const path = pathFor(template);

      // refusable says why the schema refuses body even as the service reads it
      // (trimmed, unread members left out: asServiceReads), for more than a
      // `format`, which JSON Schema leaves to each tool; "" if it does not.
      const refusable = (body) => {
        if (valid(asServiceReads(body, checker.resolve(schema), mediaType))) return '';
        return valid.errors.some((e) => e.keyword !== 'format') ? checker.ajv.errorsText(valid.errors) : '';
      };

      // Draw, and sort by the schema.
      const good = [];
      const drawnBad = [];
      for (let i = 0; i < samples; i++) {
        const body = sampler.sample(schema);
        if (valid(body)) good.push({ body });
        else {
          const why = refusable(body);
          if (why) drawnBad.push({ body, how: 'drawn, ' + why });
        }
      }
      t.diagnostic(`${name}: ${good.length} of ${samples} drawn bodies schema-valid`);
      assert.ok(good.length >= MIN_VALID * samples,
        `${name}: only ${good.length} of ${samples} drawn bodies are schema-valid (the sampler should mostly hit the schema); some that were not:\n` +
        drawnBad.slice(0, 5).map(show).join('\n'));

      // Broken on purpose: one place each. A break the schema still accepts is a
      // valid body, held to the valid bodies' rule.
      const broken = [];
      for (let i = 0; broken.length < INVALID_SENT && i < 10 * INVALID_SENT; i++) {
        const [how, body] = sampler.invalidFrom(schema, good[i % good.length].body);
        if (valid(body)) good.push({ body, how: `still valid after "${how}"` });
        else if (refusable(body)) broken.push({ body, how });
      }
      const invalid = [...broken, ...drawnBad.slice(0, INVALID_SENT)];

      const failures = []; // answers that do not match the document, 5xx, invalid bodies accepted
      const refused = []; // valid bodies refused
      const sendOne = async (entry) => {
        const ans = await send(base, method.toUpperCase(), path, { token, body: JSON.stringify(entry.body), contentType: mediaType });
        entry.status = ans.status;
        entry.answer = ans.body.slice(0, 300);
        try {
          checker.check(ans, 'props');
        } catch (err) {
          entry.error = err.message.split('\n').slice(0, 4).join(' | ');
        }
        return ans;
      };
      for (const entry of good) {
        const ans = await sendOne(entry);
        if (entry.error || ans.status >= 500) failures.push(entry);
        else if (ans.status >= 400) refused.push(entry);
      }
      for (const entry of invalid) {
        const ans = await sendOne(entry);
        if (entry.error || ans.status < 400 || ans.status >= 500) failures.push(entry);
      }
      t.diagnostic(`${name}: ${good.length} valid sent, ${refused.length} refused; ${invalid.length} invalid sent (${broken.length} broken on purpose)`);
      const problems = [];
      if (refused.length > MAX_REFUSED * good.length) {
        problems.push(`${refused.length} of ${good.length} schema-valid bodies refused (at most ${MAX_REFUSED * 100}% may be):\n` + refused.slice(0, 15).map(show).join('\n'));
      }
      if (failures.length > 0) {
        problems.push(`${failures.length} answers that break the document (undocumented, 5xx, or an invalid body accepted):\n` + failures.slice(0, 15).map(show).join('\n'));
      }
      assert.ok(problems.length === 0, `${name}, seed ${seed} (QUARTET_SEED=${seed} draws the same bodies):\n${problems.join('\n\n')}`);
    });
  }
});
