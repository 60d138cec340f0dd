// Apollo Client, unmodified, against the service's GraphQL endpoint: automatic
// persisted queries (its createPersistedQueryLink, SHA-256 from node:crypto) and
// array batching (its BatchHttpLink; the service runs with -graphql-batch-max).
// What the server did is read off the wire: a fetch that records each request
// and answer is handed to the links. Run by the Go test TestRealClients with
// QUARTET_URL set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { BatchHttpLink } from '@apollo/client/link/batch-http';

const uri = `${process.env.QUARTET_URL}/graphql`;
const sha256 = (text) => createHash('sha256').update(text).digest('hex');

// recorder returns a fetch that keeps, for each exchange, the method, the parsed
// request body (or the GET parameters) and the parsed answer.
function recorder() {
  const exchanges = [];
  const recordingFetch = async (input, init = {}) => {
    const url = new URL(typeof input === 'string' ? input : input.url);
    const res = await fetch(input, init);
    const text = await res.clone().text();
    exchanges.push({
      method: init.method ?? 'GET',
      body: init.body ? JSON.parse(init.body) : Object.fromEntries(url.searchParams),
      status: res.status,
      answer: JSON.parse(text),
    });
    return res;
  };
  return { exchanges, fetch: recordingFetch };
}

const UserQuery = gql`
  query ApqUser($id: Int!) {
    user(id: $id) { id name }
  }
`;

test('automatic persisted queries: a miss, the query sent once, then hash-only hits', async () => {
  assert.ok(process.env.QUARTET_URL, 'QUARTET_URL is not set');
  const rec = recorder();
  const client = new ApolloClient({
    link: createPersistedQueryLink({ sha256 }).concat(new HttpLink({ uri, fetch: rec.fetch })),
    cache: new InMemoryCache(),
  });
  const first = await client.query({ query: UserQuery, variables: { id: 1 }, fetchPolicy: 'network-only' });
  assert.equal(first.data.user.name, 'Alice Johnson');
  assert.equal(rec.exchanges.length, 2, 'a miss and the retry with the query');
  const [miss, register] = rec.exchanges;
  assert.equal(miss.body.query, undefined, 'the first request carries the hash only');
  assert.deepEqual(miss.answer.errors.map((e) => e.extensions.code), ['PERSISTED_QUERY_NOT_FOUND']);
  assert.equal(typeof register.body.query, 'string');
  assert.equal(register.body.extensions.persistedQuery.sha256Hash, sha256(register.body.query));
  assert.equal(miss.body.extensions.persistedQuery.sha256Hash, sha256(register.body.query));

  const second = await client.query({ query: UserQuery, variables: { id: 2 }, fetchPolicy: 'network-only' });
  assert.equal(second.data.user.id, 2);
  assert.equal(rec.exchanges.length, 3, 'one request: the server knew the hash');
  assert.equal(rec.exchanges[2].body.query, undefined, 'the hit carries no query');
  assert.equal(rec.exchanges[2].answer.errors, undefined);

  // A new client, hashed queries by GET (cacheable URLs): known from the start.
  const getRec = recorder();
  const getClient = new ApolloClient({
    link: createPersistedQueryLink({ sha256, useGETForHashedQueries: true }).concat(new HttpLink({ uri, fetch: getRec.fetch })),
    cache: new InMemoryCache(),
  });
  const third = await getClient.query({ query: UserQuery, variables: { id: 3 } });
  assert.equal(third.data.user.id, 3);
  assert.equal(getRec.exchanges.length, 1);
  assert.equal(getRec.exchanges[0].method, 'GET');
  assert.equal(getRec.exchanges[0].body.query, undefined);
});

test('BatchHttpLink: three queries in one request, answered in order', async () => {
  assert.ok(process.env.QUARTET_URL, 'QUARTET_URL is not set');
  const rec = recorder();
  const client = new ApolloClient({
    link: new BatchHttpLink({ uri, fetch: rec.fetch, batchMax: 5, batchInterval: 50 }),
    cache: new InMemoryCache(),
  });
  const ids = [3, 1, 2];
  const results = await Promise.all(ids.map((id) =>
    client.query({ query: gql`query Batched($id: Int!) { user(id: $id) { id name } }`, variables: { id }, fetchPolicy: 'network-only' })));
  assert.deepEqual(results.map((r) => r.data.user.id), ids);
  assert.equal(rec.exchanges.length, 1, 'one HTTP request for the three');
  const [batch] = rec.exchanges;
  assert.ok(Array.isArray(batch.body) && batch.body.length === 3, 'the body is an array of operations');
  assert.equal(batch.status, 200);
  assert.ok(Array.isArray(batch.answer) && batch.answer.length === 3, 'the answer is an array of results');
  assert.deepEqual(batch.answer.map((r) => r.data.user.id), ids);
});
