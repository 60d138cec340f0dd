// quartet behind Prism's validation proxy (@stoplight/prism-cli): what a team
// that points Prism at the served document sees.
//
// `prism proxy <GET /openapi.json> <service> --errors` checks every request and
// every answer that passes through against the document, and with --errors
// turns a violation into an error answer of its own (422 for a request, 500
// for an answer, with an sl-violations header). Through it: a create (POST
// /api/users, a name far from ASCII) is 201 and the read of that user 200,
// neither with a violation. When the document asks for a bearer token on
// writes (a service run with -jwt-secret), the create carries the write token,
// which Prism must pass on, and a create without one is refused with 401, by
// Prism or by the service, as the document says.
//
// Prism starts once per run of this file (a few seconds).
//
// Environment:
//
//	QUARTET_URL          base URL of the service under test (required)
//	QUARTET_WRITE_TOKEN  a bearer token with the write scope (required when the
//	                     document asks for one)
//
// Run: go test -run TestOpenAPITools (after npm ci in e2e/).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { needsToken, openAPIChecker, send } from './openapi-check.mjs';

const base = process.env.QUARTET_URL;
if (!base) throw new Error('QUARTET_URL must be set (go test -run TestOpenAPITools sets it)');
const writeToken = process.env.QUARTET_WRITE_TOKEN;

const NAME = 'Zoë Ωμέγα 山田 עִבְרִית 👩‍👩‍👧‍👦 🏳️‍🌈'; // Latin, Greek, CJK, Hebrew with points, ZWJ emoji

let doc;
let checker;
let prism; // the child process
let proxy; // its base URL
let output = ''; // what it printed

// freePort is a port on 127.0.0.1 that nothing listened on a moment ago.
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

before(async () => {
  const resp = await fetch(base + '/openapi.json');
  assert.equal(resp.status, 200);
  doc = await resp.json();
  checker = openAPIChecker(doc);
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('@stoplight/prism-cli/package.json');
  const bin = join(dirname(pkg), require(pkg).bin.prism);
  const port = await freePort();
  proxy = `http://127.0.0.1:${port}`;
  prism = spawn(process.execPath, [bin, 'proxy', base + '/openapi.json', base, '--errors', '-h', '127.0.0.1', '-p', String(port)],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism did not start listening in 60 s:\n${output}`)), 60_000);
    const read = (chunk) => {
      output += chunk;
      if (/Prism is listening/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    prism.stdout.on('data', read);
    prism.stderr.on('data', read);
    prism.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Prism exited (${code}) before listening:\n${output}`));
    });
  });
});

after(() => prism?.kill());

// viaPrism sends a request through the proxy, and checks that Prism saw no
// violation in it or in its answer; the answer is returned.
async function viaPrism(method, path, opts) {
  const ans = await send(proxy, method, path, opts);
  const what = `${method} ${path} through Prism -> ${ans.status}`;
  assert.equal(ans.headers['sl-violations'], undefined, `${what}: Prism found violations: ${ans.headers['sl-violations']}\n${ans.body}`);
  assert.doesNotMatch(ans.body, /stoplight\.io\/prism\/errors#(VIOLATIONS|UNPROCESSABLE_ENTITY|NO_)/, `${what}: Prism answered for the service`);
  return ans;
}

// prismProblems are the lines in which Prism reported a violation or an error.
const prismProblems = () => output.split('\n').filter((l) => /violation|✖|error/i.test(l) && !/Request received|Forwarding/.test(l));

test('a create and a read pass through Prism without a violation', async () => {
  const create = doc.paths['/api/users'].post;
  const token = needsToken(doc, create) ? writeToken : undefined;
  assert.ok(!needsToken(doc, create) || token, 'the document asks for a bearer token on POST /api/users: set QUARTET_WRITE_TOKEN');
  const before = prismProblems().length;
  const created = await viaPrism('POST', '/api/users', { token, body: JSON.stringify({ name: NAME, email: 'zoe@example.com' }) });
  assert.equal(created.status, 201, `create: ${created.body}`);
  checker.check(created, 'through Prism');
  const user = JSON.parse(created.body);
  assert.equal(user.name, NAME);
  const read = await viaPrism('GET', `/api/users/${user.id}`, { token });
  assert.equal(read.status, 200, `read: ${read.body}`);
  checker.check(read, 'through Prism');
  assert.deepEqual(JSON.parse(read.body), user);
  assert.deepEqual(prismProblems().slice(before), [], 'Prism logged problems');
});

test('a write without a token is refused as the document says, where it asks for one', async (t) => {
  const create = doc.paths['/api/users'].post;
  if (!needsToken(doc, create)) {
    // Nothing to refuse: the document of a service without authentication must
    // not document a refusal either.
    assert.equal(create.responses['401'], undefined, 'POST /api/users documents 401 but asks for no token');
    t.diagnostic('POST /api/users asks for no token: nothing to refuse');
    return;
  }
  assert.ok(create.responses['401'], 'POST /api/users asks for a token but documents no 401');
  const ans = await send(proxy, 'POST', '/api/users', { body: JSON.stringify({ name: NAME, email: 'zoe@example.com' }) });
  assert.equal(ans.status, 401, `without a token: ${ans.body}`);
  if (!/stoplight\.io\/prism/.test(ans.body)) checker.check(ans, 'through Prism, from the service');
  t.diagnostic(/stoplight\.io\/prism/.test(ans.body) ? 'refused by Prism' : 'refused by the service');
});
