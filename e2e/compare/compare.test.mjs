// The side-by-side page (/compare) in headless Chromium, driven by
// playwright-core, against a running quartet: every read, and for each the
// columns of the styles that serve it are checked against what this script
// reads itself (REST and OData with fetch, gRPC's times derived from REST's),
// the command each column shows is run by sh and must answer the same, the
// other columns must say they are not served, and the comparison must say
// the records match. With QUARTET_TOKEN the service requires a token for
// reads: the page sends it to every style, and without it every column shows
// the refusal. A record whose name is markup must show as text, making no element.
// Run by the Go test TestComparePageInBrowser.
//
//	QUARTET_URL             the service's HTTP base URL (required)
//	QUARTET_GRPC            its gRPC address, host:port (required)
//	QUARTET_TOKEN           a token for reads; set when reads need one
//	QUARTET_SCREENSHOT_DIR  where to save a PNG of each read (optional)
//	CHROMIUM                the browser executable (default /usr/bin/chromium)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const base = process.env.QUARTET_URL;
const grpcAddress = process.env.QUARTET_GRPC;
const token = process.env.QUARTET_TOKEN || '';
const shots = process.env.QUARTET_SCREENSHOT_DIR;
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const origin = new URL(base).origin;

let userDataDir, context, page;
const foreign = []; // requests aimed anywhere but the service
const problems = []; // console errors and uncaught exceptions in the page

before(async () => {
  assert.ok(base && grpcAddress, 'QUARTET_URL and QUARTET_GRPC must be set');
  if (shots) mkdirSync(shots, { recursive: true });
  userDataDir = mkdtempSync(join(tmpdir(), 'quartet-compare-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    viewport: { width: 1500, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE ${new URL(base).hostname}`],
  });
  page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(15000);
  // Watched, not intercepted: an intercepted request would change the
  // Resource Timing figures the page shows.
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (url.origin !== origin && url.protocol !== 'data:') foreign.push(url.href);
  });
  page.on('console', (msg) => {
    // Chromium logs every 4xx fetch: a user not found, and the runs without a token.
    if (msg.type() === 'error' && !/status of (401|404|502)/.test(msg.text())) problems.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`exception: ${err.message}`));
  const res = await page.goto(`${base}/compare`);
  assert.equal(res.status(), 200);
});

after(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  assert.deepEqual(foreign, [], 'the page asked another host');
  assert.deepEqual(problems, [], 'the page logged errors');
});

async function get(path) {
  const res = await fetch(base + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  assert.equal(res.status, 200, `GET ${path}`);
  return res.json();
}

// grpcTime is gRPC's form of an RFC 3339 time in UTC.
const grpcTime = (s) => s.replace('T', ' ').replace(/Z$/, '');
const user = (u) => ({ id: u.id, name: u.name, email: u.email, createdAt: u.createdAt });
const grpcUser = (u) => ({ ...user(u), createdAt: grpcTime(u.createdAt) });

// The reads, what to fill in, and for each style that serves one the request
// line it must show and the records its answer must hold, from this script's
// own reads. GraphQL and gRPC answer every user for the page of users: the
// page sorts and cuts them, and its badge counts the page.
const READS = [
  {
    name: 'user', fill: { '#user-id': '2' },
    expect: async () => {
      const u = await get('/api/users/2');
      return {
        records: 1,
        rest: ['GET /api/users/2', (b) => [b], [u]],
        graphql: ['POST /graphql', (b) => [b.data.user], [user(u)]],
        grpc: ['POST /user.UserService/GetUser', (ms) => ms, [grpcUser(u)]],
      };
    },
  },
  {
    name: 'user-missing', read: 'user', fill: { '#user-id': '99' },
    expect: async () => ({
      records: 0,
      rest: ['GET /api/users/99', () => [], []],
      graphql: ['POST /graphql', (b) => (b.data.user ? [b.data.user] : []), []],
      grpc: ['POST /user.UserService/GetUser', (ms) => ms, []],
    }),
  },
  {
    name: 'users', fill: { '#users-sort': 'email', '#users-page': '2', '#users-size': '2' },
    expect: async () => {
      const page = await get('/api/users?sortBy=email&page=2&pageSize=2');
      const all = await get('/api/users');
      return {
        records: page.items.length,
        rest: ['GET /api/users?sortBy=email&page=2&pageSize=2', (b) => b.items, page.items],
        graphql: ['POST /graphql', (b) => b.data.users, all.map(user)],
        grpc: ['POST /user.UserService/GetAllUsers', (ms) => ms, all.map(grpcUser)],
      };
    },
  },
  {
    name: 'orders', fill: { '#orders-user': '2' },
    expect: async () => {
      const orders = await get('/api/users/2/orders');
      return {
        records: orders.length,
        rest: ['GET /api/users/2/orders', (b) => b, orders],
        odata: [`GET /api/orders?$filter=${encodeURIComponent('userId eq 2')}&$orderby=id`, (b) => b.value, orders],
      };
    },
  },
  {
    name: 'products', fill: { '#products-filter': "category eq 'Electronics'", '#products-orderby': 'price desc', '#products-top': '3', '#products-skip': '1' },
    expect: async () => {
      const query = `$filter=${encodeURIComponent("category eq 'Electronics'")}&$orderby=${encodeURIComponent('price desc')}&$top=3&$skip=1&$count=true`;
      const products = await get(`/api/products?${query}`);
      return { records: products.value.length, odata: [`GET /api/products?${query}`, (b) => b.value, products.value] };
    },
  },
];

async function send(read, fill, withToken) {
  await page.selectOption('#read', read);
  for (const [sel, value] of Object.entries(fill)) {
    if (sel === '#users-sort') await page.selectOption(sel, value);
    else await page.fill(sel, value);
  }
  await page.fill('#token', withToken ? token : '');
  await page.click('#run');
  await page.waitForFunction(() => !document.getElementById('run').disabled && document.getElementById('verdict').dataset.state !== 'running');
}

// columns reads every column as a person sees it.
const columns = () => page.$$eval('.column', (cols) => Object.fromEntries(cols.map((c) => [c.dataset.style, {
  state: c.dataset.state,
  text: c.innerText,
  badge: c.querySelector('.badge')?.innerText,
  request: c.querySelector('.request')?.innerText,
  status: c.querySelector('.status')?.innerText,
  answer: c.querySelector('.answer')?.innerText,
  commands: [...c.querySelectorAll('.command code')].map((e) => e.innerText),
  wire: Object.fromEntries([...c.querySelectorAll('.wire dt')].map((dt) => [dt.innerText, dt.nextElementSibling.innerText])),
}])));

const verdict = () => page.$eval('#verdict', (v) => ({ state: v.dataset.state, text: v.innerText }));

// sh runs a column's command with $TOKEN set, as a reader would paste it.
const sh = (command) => execFileSync('sh', ['-c', command], { env: { ...process.env, TOKEN: token }, maxBuffer: 1 << 24 });

// grpcMessages reads the messages out of the gRPC column's answer: each a
// JSON object after a "// message" line.
const grpcMessages = (answer) => answer.split(/^\/\/ .*$/m).map((s) => s.trim())
  .filter((s) => s.startsWith('{')).map((s) => JSON.parse(s));

for (const { name, read = name, fill } of READS) {
  test(`${name}: every style that serves it answers the same records, shown in full`, async () => {
    const want = await READS.find((r) => r.name === name).expect();
    await send(read, fill, true);
    if (shots) await page.screenshot({ path: join(shots, `compare-${name}${token ? '-auth' : ''}.png`), fullPage: true });
    const got = await columns();
    assert.deepEqual(Object.keys(got), ['rest', 'graphql', 'odata', 'grpc']);
    for (const [style, col] of Object.entries(got)) {
      if (!want[style]) {
        assert.equal(col.state, 'not-served', `${style}: ${col.text}`);
        assert.match(col.text, /Not served here\. \w/, style);
        continue;
      }
      const [requestLine, pick, records] = want[style];
      assert.equal(col.state, 'answered', `${style}: ${col.text}`);
      assert.equal(col.badge, `${want.records} record${want.records === 1 ? '' : 's'}`, style);
      const sent = new URL(requestLine.split(' ')[1], base); // as the browser encodes it
      assert.equal(col.request.split('\n')[0], `${requestLine.split(' ')[0]} ${sent.pathname}${sent.search}`, style);
      assert.equal(/^authorization: Bearer /m.test(col.request), Boolean(token), `${style}: the token in the request\n${col.request}`);
      // The column names the header, never the token: a screenshot or a shared screen must not carry any of it.
      if (token) assert.ok(!col.text.includes(token.slice(0, 8)), `${style}: part of the token is shown\n${col.request}`);
      for (const fact of ['sent', 'received', 'first byte', 'end', 'round trips']) assert.ok(col.wire[fact], `${style}: no ${fact}`);
      assert.match(col.wire['first byte'], /^\d+\.\d ms$/);
      assert.match(col.wire.received, /^[\d,]+ B: body [\d,]+ B/);
      if (style === 'grpc') {
        assert.match(col.status, /^HTTP 200, grpc-status (0 OK|5 NOT_FOUND) · application\/grpc-web\+proto$/);
        assert.deepEqual(grpcMessages(col.answer), records, 'gRPC-Web decoded');
        const [grpcurl, curl] = col.commands;
        assert.match(grpcurl, new RegExp(`^grpcurl -plaintext ${token ? '-H "authorization: Bearer \\$TOKEN" ' : ''}.*${grpcAddress.replace(/[.[\]]/g, '\\$&')} user\\.UserService/`));
        const wire = sh(curl.replace(/ \| od -c$/, ''));
        if (records.length) {
          assert.equal(wire[0], 0, 'the curl command answers frames');
          for (const r of records) assert.ok(wire.includes(Buffer.from(r.email)), `the curl command's answer lacks ${r.email}`);
          assert.ok(wire.includes(Buffer.from('grpc-status: 0')), 'the curl command answers a trailer frame with status 0');
        } else {
          assert.equal(wire.length, 0, 'a trailers-only answer has no body');
        }
        continue;
      }
      const body = JSON.parse(col.answer);
      assert.deepEqual(pick(body), records, `${style}: the answer shown`);
      assert.equal(col.commands.length, 1);
      const repeated = sh(col.commands[0]).toString();
      assert.deepEqual(JSON.parse(repeated), body, `${style}: the curl command answers as the page was answered`);
    }
    const v = await verdict();
    if (Object.keys(want).filter((k) => k !== 'records').length > 1) {
      assert.equal(v.state, 'same', v.text);
      assert.match(v.text, want.records ? new RegExp(`hold the same ${want.records} records?`) : /agree: no record answers this read/);
    } else {
      assert.equal(v.state, 'single', v.text);
    }
  });
}

test('a changed answer is told apart, naming the record and the field', async () => {
  const route = (r) => r.fetch().then(async (res) => r.fulfill({ response: res, json: { ...(await res.json()), email: 'someone.else@example.org' } }));
  await page.route('**/api/users/2', route);
  try {
    await send('user', { '#user-id': '2' }, true);
  } finally {
    await page.unroute('**/api/users/2', route);
  }
  const v = await verdict();
  assert.equal(v.state, 'differ', v.text);
  assert.match(v.text, /record 2, email: REST "someone\.else@example\.org", GraphQL "bob/);
  assert.match(v.text, /record 2, email: REST "someone\.else@example\.org", gRPC-Web "bob/);
});

test('a gRPC-Web answer that is not one, or whose frame is cut, is an error in its column, not a blank', async () => {
  for (const [answer, want] of [
    [{ status: 502, contentType: 'text/html', body: '<p>bad gateway</p>' }, /HTTP 502: the answer is not gRPC-Web/],
    [{ status: 200, contentType: 'application/grpc-web+proto', body: Buffer.from([0, 0, 0, 0, 9, 8, 2]) }, /a frame is longer than the rest of the body/],
  ]) {
    const route = (r) => r.fulfill(answer);
    await page.route('**/user.UserService/GetUser', route);
    try {
      await send('user', { '#user-id': '2' }, true);
    } finally {
      await page.unroute('**/user.UserService/GetUser', route);
    }
    const { grpc } = await columns();
    assert.equal(grpc.state, 'error', grpc.text);
    assert.match(grpc.text, want);
    assert.equal((await verdict()).state, 'failed');
  }
});

test('without the token a service that needs one refuses every style, and each column says so', { skip: !token && 'reads need no token here' }, async () => {
  for (const [read, styles] of [['user', ['rest', 'graphql', 'grpc']], ['orders', ['rest', 'odata']]]) {
    await send(read, {}, false);
    const got = await columns();
    for (const style of styles) {
      assert.equal(got[style].state, 'error', `${style}: ${got[style].text}`);
      assert.match(got[style].text, style === 'grpc' ? /UNAUTHENTICATED: token missing/ : /401|token missing/, style);
      assert.doesNotMatch(got[style].request, /authorization/);
    }
    const v = await verdict();
    assert.equal(v.state, 'failed', v.text);
  }
});

test('markup stored in a record shows as text in every column: nothing runs, no element is made', { skip: token ? 'writing needs a token with the write scope' : false }, async () => {
  const name = '<img src=x onerror=alert(1)></script>"><svg onload=alert(2)>';
  const res = await fetch(`${base}/api/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, email: 'markup@example.com' }) });
  assert.ok(res.ok, `POST /api/users: ${res.status}`);
  const { id } = await res.json();
  const dialogs = [];
  const dismiss = (d) => { dialogs.push(d.message()); return d.dismiss(); };
  page.on('dialog', dismiss);
  try {
    await send('user', { '#user-id': String(id) }, false);
  } finally {
    page.off('dialog', dismiss);
  }
  const got = await columns();
  for (const style of ['rest', 'graphql', 'grpc']) {
    assert.equal(got[style].state, 'answered', `${style}: ${got[style].text}`);
    assert.ok(got[style].answer.includes(JSON.stringify(name)), `${style}: the name is not shown as JSON text\n${got[style].answer}`);
  }
  assert.deepEqual(await page.$$eval('main img, main svg, main script, main iframe', (es) => es.map((e) => e.outerHTML)), []);
  assert.deepEqual(dialogs, []);
  assert.equal((await verdict()).state, 'same');
});

test('the page links to the editor and the front page, and both link back', async () => {
  const links = await page.$$eval('.bar a', (as) => as.map((a) => a.href));
  assert.deepEqual(links, [`${origin}/graphql`, `${origin}/`]);
  await page.goto(`${base}/`);
  assert.ok(await page.$('a[href="compare"]'), 'the front page links to the comparison');
  assert.match(await page.$eval('.grpc-address', (e) => e.textContent), new RegExp(grpcAddress.replace(/[.[\]]/g, '\\$&')));
  await page.goto(`${base}/graphql`, { waitUntil: 'domcontentloaded' });
  await page.click('a[href="compare"]');
  await page.waitForURL(`${base}/compare`);
});
