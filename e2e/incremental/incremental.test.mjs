// Real clients, unmodified, reading @defer and @stream over multipart/mixed from
// the service's /graphql: Apollo Client 4's HttpLink under Defer20220824Handler
// and GraphQL17Alpha9Handler, urql with @stream over GET and POST, and meros on
// the raw stream of node:http. Each client sees the partial result first, then
// the whole one, equal to what the same query without the directives answers.
// Run by the Go test TestIncrementalClients with QUARTET_URL set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { Defer20220824Handler, GraphQL17Alpha9Handler } from '@apollo/client/incremental';
import { Client, fetchExchange } from '@urql/core';
import { meros } from 'meros/node';

const uri = `${process.env.QUARTET_URL}/graphql`;

// recordingFetch is fetch that notes each request's method and Accept, and the
// answer's Content-Type.
function recordingFetch() {
  const seen = [];
  const f = async (input, init = {}) => {
    const res = await fetch(input, init);
    const headers = new Headers(init.headers);
    seen.push({ method: init.method ?? 'GET', accept: headers.get('accept'), contentType: res.headers.get('content-type') });
    return res;
  };
  return { seen, fetch: f };
}

// plain answers a query over plain JSON, to compare the merged result with.
async function plain(query) {
  const res = await fetch(uri, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  assert.equal(res.status, 200);
  return (await res.json()).data;
}

const deferred = 'query DeferredUsers { users { id name ... @defer { email posts(limit: 1) { id title } } } }';
const whole = 'query DeferredUsers { users { id name email posts(limit: 1) { id title } } }';

for (const [Handler, spec] of [[Defer20220824Handler, 'deferSpec=20220824'], [GraphQL17Alpha9Handler, 'incrementalSpec=v0.2']]) {
  test(`Apollo Client HttpLink, @defer under ${Handler.name}`, async () => {
    assert.ok(process.env.QUARTET_URL, 'QUARTET_URL is not set');
    const rec = recordingFetch();
    const client = new ApolloClient({
      link: new HttpLink({ uri, fetch: rec.fetch }),
      cache: new InMemoryCache(),
      incrementalHandler: new Handler(),
    });
    const results = await new Promise((resolve, reject) => {
      const all = [];
      const sub = client.watchQuery({ query: gql(deferred), fetchPolicy: 'network-only' }).subscribe({
        next(r) {
          all.push(r);
          if (r.dataState === 'complete' && !r.loading) {
            sub.unsubscribe();
            resolve(all);
          }
        },
        error: reject,
      });
    });
    assert.ok(rec.seen[0].accept.includes(`multipart/mixed;${spec}`), rec.seen[0].accept);
    assert.match(rec.seen[0].contentType, new RegExp(`^multipart/mixed; boundary="-"; ${spec.replace('.', '\\.')}$`));
    const streaming = results.find((r) => r.dataState === 'streaming');
    assert.ok(streaming, `no partial result among ${JSON.stringify(results)}`);
    assert.ok(streaming.data.users.some((u) => u.email === undefined), 'the partial result already has every email');
    const last = results.at(-1);
    const { __typename, ...data } = JSON.parse(JSON.stringify(last.data, (k, v) => (k === '__typename' ? undefined : v)));
    assert.deepEqual(data, await plain(whole));
  });
}

const streamed = 'query StreamedUsers { users @stream(initialCount: 1) { id name } }';

for (const preferGetMethod of ['force', false]) {
  test(`urql, @stream(initialCount: 1) over ${preferGetMethod ? 'GET' : 'POST'}`, async () => {
    const rec = recordingFetch();
    const client = new Client({ url: uri, exchanges: [fetchExchange], preferGetMethod, fetch: rec.fetch });
    const results = await new Promise((resolve, reject) => {
      const all = [];
      const { unsubscribe } = client.query(streamed, {}).subscribe((r) => {
        if (r.error) reject(r.error);
        all.push(r);
        if (!r.hasNext) {
          setImmediate(() => unsubscribe());
          resolve(all);
        }
      });
    });
    assert.equal(rec.seen[0].method, preferGetMethod ? 'GET' : 'POST');
    assert.match(rec.seen[0].contentType, /^multipart\/mixed; boundary="-"; deferSpec=20220824$/);
    assert.equal(results[0].data.users.length, 1, 'the first result holds the initial item alone');
    assert.ok(results.length > 2, `${results.length} results: want one per item`);
    assert.deepEqual(results.at(-1).data.users, (await plain('{ users { id name } }')).users);
  });
}

test('meros reads the raw stream part by part', async () => {
  const body = JSON.stringify({ query: '{ user(id: 1) { id ... @defer(label: "more") { email } } }' });
  const res = await new Promise((resolve, reject) => {
    const req = http.request(uri, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
    }, resolve);
    req.on('error', reject);
    req.end(body);
  });
  assert.equal(res.headers['cache-control'], 'no-cache');
  assert.equal(res.headers['x-accel-buffering'], 'no');
  const parts = [];
  for await (const part of await meros(res)) {
    assert.ok(part.json, `a part that is not JSON: ${part.body}`);
    assert.equal(part.headers['content-type'], 'application/json; charset=utf-8');
    parts.push(part.body);
  }
  assert.deepEqual(parts, [
    { data: { user: { id: 1 } }, hasNext: true },
    { incremental: [{ data: { email: 'alice@example.com' }, path: ['user'], label: 'more' }], hasNext: false },
  ]);
});

test('the 406 a JSON-only client gets for @defer says which Accept to send', async () => {
  const res = await fetch(uri, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: deferred }),
  });
  assert.equal(res.status, 406);
  assert.match((await res.json()).errors[0].message, /multipart\/mixed;deferSpec=20220824/);
});
