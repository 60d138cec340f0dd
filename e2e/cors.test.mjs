// CORS as a browser enforces it: headless Chromium (Debian's, driven by
// playwright-core) opens a page served by a Node server on another port, and the
// page calls REST, GraphQL and OData on the service with fetch. The service runs
// with -cors-origins 'http://localhost:*', so the page loaded as
// http://localhost:PORT is allowed (preflights included, with credentials), and the
// same page loaded as http://127.0.0.1:PORT, an origin not listed, is refused by
// the browser. Run by the Go test TestRealClients with QUARTET_URL set.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const base = process.env.QUARTET_URL;
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

let pageServer, port, userDataDir, context;

before(async () => {
  assert.ok(base, 'QUARTET_URL is not set');
  pageServer = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><meta charset="utf-8"><title>elsewhere</title><p>A page of another origin.</p>');
  });
  await new Promise((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
  port = pageServer.address().port;
  userDataDir = mkdtempSync(join(tmpdir(), 'quartet-cors-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync',
      // localhost is the page server's loopback address too; no other name resolves.
      '--host-resolver-rules=MAP localhost 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'],
  });
});

after(async () => {
  await context?.close();
  pageServer?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

// callAll runs in the page: each call of the three styles, reporting the status
// and body read, or the error fetch threw (a CORS refusal is a TypeError).
async function callAll({ service, newName }) {
  const attempt = async (name, url, init) => {
    try {
      const res = await fetch(url, init);
      return [name, { status: res.status, etag: res.headers.get('ETag'), grpcStatus: res.headers.get('grpc-status'), body: await res.text() }];
    } catch (err) {
      return [name, { error: `${err.name}: ${err.message}` }];
    }
  };
  return Object.fromEntries(await Promise.all([
    // A simple request: no preflight, the answer's headers decide.
    attempt('rest', `${service}/api/users/1`),
    // Preflighted: a JSON body, and credentials.
    attempt('graphql', `${service}/graphql`, {
      method: 'POST', credentials: 'include',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: '{ user(id: 2) { name } }' }),
    }),
    // Preflighted by OData's own header.
    attempt('odata', `${service}/api/products?$top=1&$select=name`, { headers: { 'OData-MaxVersion': '4.0' } }),
    // gRPC-Web, text mode, preflighted by its media type and the headers its clients
    // send: GetUser for id 1 (frames in base64), and for id 99, whose trailers-only
    // status the page reads from exposed headers.
    ...[1, 99].map((id) => attempt(`grpcweb${id}`, `${service}/user.UserService/GetUser`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/grpc-web-text', 'X-Grpc-Web': '1', 'X-User-Agent': 'grpc-web-javascript/0.1', 'Grpc-Timeout': '10S' },
      body: btoa(String.fromCharCode(0, 0, 0, 0, 2, 8, id)),
    })),
    // Preflighted by its method and media type.
    attempt('patch', `${service}/api/users/3`, {
      method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ name: newName }),
    }),
  ]));
}

async function openPage(origin) {
  const page = await context.newPage();
  const console = [];
  page.on('console', (msg) => console.push(msg.text()));
  const res = await page.goto(`${origin}/index.html`);
  assert.equal(res.status(), 200);
  assert.equal(await page.evaluate(() => location.origin), origin);
  return { page, console };
}

test('a listed origin calls REST, GraphQL, OData and gRPC-Web', async () => {
  const { page } = await openPage(`http://localhost:${port}`);
  const got = await page.evaluate(callAll, { service: base, newName: 'Carol From Elsewhere' });
  await page.close();
  for (const [name, r] of Object.entries(got)) assert.equal(r.error, undefined, `${name}: ${r.error}`);
  assert.equal(got.rest.status, 200);
  assert.equal(JSON.parse(got.rest.body).name, 'Alice Johnson');
  assert.match(got.rest.etag ?? '', /^"[^"]+"$/, 'ETag is exposed to the page');
  assert.equal(got.graphql.status, 200);
  assert.deepEqual(JSON.parse(got.graphql.body), { data: { user: { name: 'Bob Smith' } } });
  assert.equal(got.odata.status, 200);
  assert.equal(JSON.parse(got.odata.body).value.length, 1);
  assert.equal(got.patch.status, 200);
  assert.equal(JSON.parse(got.patch.body).name, 'Carol From Elsewhere');
  assert.equal(got.grpcweb1.status, 200);
  // Padded base64 chunks, one a flush: decoded one by one.
  const frames = got.grpcweb1.body.match(/[^=]+=*/g).map((chunk) => Buffer.from(chunk, 'base64').toString('latin1')).join('');
  assert.match(frames, /Alice Johnson[^]*grpc-status: 0\r\n$/);
  assert.deepEqual([got.grpcweb99.status, got.grpcweb99.grpcStatus, got.grpcweb99.body], [200, '5', '']);
});

test('an origin not listed is refused by the browser', async () => {
  const nameBefore = (await (await fetch(`${base}/api/users/3`)).json()).name;
  const { page, console } = await openPage(`http://127.0.0.1:${port}`);
  const got = await page.evaluate(callAll, { service: base, newName: 'Carol Refused' });
  await page.close();
  for (const [name, r] of Object.entries(got)) {
    assert.match(r.error ?? `status ${r.status}`, /^TypeError: Failed to fetch/, `${name} reached the page`);
  }
  assert.ok(console.some((line) => /blocked by CORS policy/.test(line)), `Chromium names CORS:\n${console.join('\n')}`);
  // The refused PATCH did not run: its preflight failed, so it was never sent.
  const res = await fetch(`${base}/api/users/3`);
  assert.equal((await res.json()).name, nameBefore);
  assert.notEqual(nameBefore, 'Carol Refused');
});
