// Real clients, unmodified, reading the service's /graphql streams: the graphql-sse
// client in distinct and single connection modes (a query, a @defer query, a
// subscription that gets a user created over REST), Apollo Client 4's HttpLink
// subscribing over multipart, and meros reading a multipart subscription from
// node:http. Run by the Go test TestSSEClients with QUARTET_URL set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createClient } from 'graphql-sse';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { meros } from 'meros/node';

const base = process.env.QUARTET_URL;
const url = `${base}/graphql`;

let created = 0;

// createUser creates a user over REST and returns its name.
async function createUser(prefix) {
  const name = `${prefix} ${++created}`;
  const res = await fetch(`${base}/api/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, email: `${prefix.toLowerCase()}${created}@example.com` }),
  });
  assert.equal(res.status, 201);
  return name;
}

// untilEvent creates users over REST every 100 ms until got resolves: a subscription
// whose set-up the client does not tell still sees one of them.
async function untilEvent(prefix, got) {
  let done = false;
  got.finally(() => { done = true; });
  while (!done) {
    await createUser(prefix);
    await Promise.race([got.catch(() => {}), new Promise((r) => setTimeout(r, 100))]);
  }
  return got;
}

// collect runs request on client and resolves with every result, once complete.
function collect(client, request) {
  return new Promise((resolve, reject) => {
    const all = [];
    client.subscribe(request, { next: (r) => all.push(r), error: reject, complete: () => resolve(all) });
  });
}

// firstEvent subscribes on client and resolves with the first result whose user's
// name starts with prefix, then disposes the subscription.
function firstEvent(client, query, prefix) {
  return new Promise((resolve, reject) => {
    const dispose = client.subscribe({ query }, {
      next(r) {
        if (r.data?.onUserCreated?.name.startsWith(prefix)) {
          dispose();
          resolve(r);
        }
      },
      error: reject,
      complete() {},
    });
  });
}

for (const singleConnection of [false, true]) {
  const mode = singleConnection ? 'single connection mode' : 'distinct connections mode';

  test(`graphql-sse, ${mode}: a query`, async () => {
    assert.ok(base, 'QUARTET_URL is not set');
    const client = createClient({ url, singleConnection, retryAttempts: 0 });
    try {
      assert.deepEqual(await collect(client, { query: '{ user(id: 1) { id name } }' }), [
        { data: { user: { id: 1, name: 'Alice Johnson' } } },
      ]);
    } finally {
      client.dispose();
    }
  });

  test(`graphql-sse, ${mode}: a @defer query, the deferred part after the rest`, async () => {
    const client = createClient({ url, singleConnection, retryAttempts: 0 });
    try {
      assert.deepEqual(await collect(client, { query: '{ user(id: 1) { id ... @defer(label: "more") { email } } }' }), [
        { data: { user: { id: 1 } }, hasNext: true },
        { incremental: [{ data: { email: 'alice@example.com' }, path: ['user'], label: 'more' }], hasNext: false },
      ]);
    } finally {
      client.dispose();
    }
  });

  test(`graphql-sse, ${mode}: a subscription gets a user created over REST`, async () => {
    const client = createClient({ url, singleConnection, retryAttempts: 0 });
    const prefix = singleConnection ? 'Single' : 'Distinct';
    try {
      const got = await untilEvent(prefix, firstEvent(client, 'subscription { onUserCreated { id name } }', prefix));
      assert.match(got.data.onUserCreated.name, new RegExp(`^${prefix} \\d+$`));
      assert.equal(typeof got.data.onUserCreated.id, 'number');
    } finally {
      client.dispose();
    }
  });
}

test('graphql-sse, distinct connections mode: a validation error comes as a result', async () => {
  const client = createClient({ url, retryAttempts: 0 });
  try {
    const [result] = await collect(client, { query: '{ user(id: 1) { nope } }' });
    assert.equal(result.errors[0].extensions.code, 'GRAPHQL_VALIDATION_FAILED');
  } finally {
    client.dispose();
  }
});

test("Apollo Client 4 HttpLink subscribes over multipart", async () => {
  const seen = [];
  const client = new ApolloClient({
    link: new HttpLink({
      uri: url,
      fetch: async (input, init = {}) => {
        const res = await fetch(input, init);
        seen.push({ accept: new Headers(init.headers).get('accept'), contentType: res.headers.get('content-type') });
        return res;
      },
    }),
    cache: new InMemoryCache(),
  });
  const got = new Promise((resolve, reject) => {
    const sub = client.subscribe({ query: gql('subscription { onUserCreated { id name } }') }).subscribe({
      next(r) {
        if (r.data?.onUserCreated?.name.startsWith('Apollo')) {
          sub.unsubscribe();
          resolve(r);
        }
      },
      error: reject,
    });
  });
  const r = await untilEvent('Apollo', got);
  assert.match(r.data.onUserCreated.name, /^Apollo \d+$/);
  assert.ok(seen[0].accept.includes('subscriptionSpec=1.0'), seen[0].accept);
  assert.equal(seen[0].contentType, 'multipart/mixed; boundary="graphql"; subscriptionSpec="1.0"');
});

test('meros reads a multipart subscription part by part', async () => {
  const body = JSON.stringify({ query: 'subscription { onUserCreated { name } }' });
  const res = await new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec=1.0, application/json' },
    }, resolve);
    req.on('error', reject);
    req.end(body);
  });
  assert.equal(res.headers['cache-control'], 'no-cache');
  assert.equal(res.headers['x-accel-buffering'], 'no');
  const name = await createUser('Meros');
  for await (const part of await meros(res)) {
    assert.ok(part.json, `a part that is not JSON: ${part.body}`);
    if (Object.keys(part.body).length === 0) continue; // a heartbeat
    assert.deepEqual(part.body, { payload: { data: { onUserCreated: { name } } } });
    break;
  }
  res.destroy();
});
