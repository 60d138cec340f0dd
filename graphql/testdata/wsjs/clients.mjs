// Used by the Go test TestWebSocketNodeClients:
//   node clients.mjs URL
// Connects to URL with the graphql-ws client (graphql-transport-ws) and with
// the legacy subscriptions-transport-ws client (graphql-ws), one after the
// other runs a query and a mutation, then with both opens two
// onUserCreated subscriptions: "long", kept until the server completes it,
// and "short", which the client ends after its first event. The Go side
// publishes events and then ends the source. Prints what each client saw as
// JSON and exits 0, or exits 1 on any error.
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import legacyPkg from 'subscriptions-transport-ws';

const { SubscriptionClient } = legacyPkg;
const [url] = process.argv.slice(2);

const guard = setTimeout(() => {
  console.error('timed out');
  process.exit(1);
}, 60_000);

// Both clients as one interface: subscribe(payload, sink) returns an
// unsubscribe function.
function transportClient() {
  const client = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: 'Bearer node-transport' },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: (err) => fail('graphql-ws connection', err),
  });
  return {
    subscribe: (payload, sink) => client.subscribe(payload, sink),
    close: () => client.dispose(),
  };
}

function legacyClient() {
  const client = new SubscriptionClient(
    url,
    { reconnect: false, connectionParams: { Authorization: 'Bearer node-legacy' } },
    WebSocket,
  );
  client.onError((err) => fail('subscriptions-transport-ws connection', err));
  return {
    subscribe: (payload, sink) => {
      const sub = client.request(payload).subscribe(sink);
      return () => sub.unsubscribe();
    },
    close: () => client.close(),
  };
}

function fail(what, err) {
  console.error(what + ':', err instanceof Error ? err.stack : JSON.stringify(err));
  process.exit(1);
}

// once runs a single-result operation.
function once(client, query) {
  return new Promise((resolve, reject) => {
    const results = [];
    client.subscribe({ query }, {
      next: (v) => results.push(v),
      error: reject,
      complete: () => resolve(results),
    });
  });
}

// subscriptions opens "long" and "short" and resolves when "long" completes.
function subscriptions(client) {
  const seen = { long: [], short: [], longCompleted: false };
  const long = new Promise((resolve, reject) => {
    client.subscribe({ query: 'subscription { onUserCreated { id name } }' }, {
      next: (v) => seen.long.push(v),
      error: reject,
      complete: () => {
        seen.longCompleted = true;
        resolve(seen);
      },
    });
  });
  const unsubscribe = client.subscribe({ query: 'subscription Short { onUserCreated { email } }' }, {
    next: (v) => {
      seen.short.push(v);
      unsubscribe();
    },
    error: (err) => fail('short subscription', err),
    complete: () => {},
  });
  return long;
}

try {
  const clients = { transport: transportClient(), legacy: legacyClient() };
  const out = {};
  for (const [name, client] of Object.entries(clients)) {
    out[name] = {
      query: await once(client, '{ user(id: 1) { name } }'),
      mutation: await once(client, `mutation { createUser(name: "${name}", email: "${name}@example.com") { id name } }`),
    };
  }
  const subs = await Promise.all(Object.values(clients).map(subscriptions));
  Object.keys(clients).forEach((name, i) => Object.assign(out[name], subs[i]));
  for (const client of Object.values(clients)) {
    await client.close();
  }
  clearTimeout(guard);
  process.stdout.write(JSON.stringify(out, null, 1) + '\n');
} catch (err) {
  fail('operations', err);
}
