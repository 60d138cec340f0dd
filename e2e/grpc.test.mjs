// The gRPC surface from Node's own gRPC stack, unmodified: @grpc/grpc-js with the
// client loaded from userpb/user.proto by @grpc/proto-loader, every call
// gzip-compressed, and the health service through grpc-health-check's client
// definition. Run by the Go test TestRealClients with QUARTET_GRPC set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';

const target = process.env.QUARTET_GRPC;
const protoFile = fileURLToPath(new URL('../userpb/user.proto', import.meta.url));

// unary makes a callback-style unary call a promise.
const unary = (client, method, request, metadata = new grpc.Metadata()) =>
  new Promise((resolve, reject) => client[method](request, metadata, (err, res) => (err ? reject(err) : resolve(res))));

test('UserService over gzip', async (t) => {
  assert.ok(target, 'QUARTET_GRPC is not set');
  const def = protoLoader.loadSync(protoFile, { keepCase: true });
  const { user } = grpc.loadPackageDefinition(def);
  // grpc.default_compression_algorithm 2 is gzip: every message the client sends
  // is compressed, and it advertises gzip for the answers.
  const client = new user.UserService(target, grpc.credentials.createInsecure(),
    { 'grpc.default_compression_algorithm': 2, 'grpc.default_compression_level': 2 });
  t.after(() => client.close());

  // A server without gzip refuses the compressed request (UNIMPLEMENTED, as
  // grpc-js reports it); with it, the call succeeds.
  const got = await unary(client, 'GetUser', { id: 1 });
  assert.equal(got.id, 1);
  assert.equal(got.name, 'Alice Johnson');
  assert.match(got.created_at, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);

  await assert.rejects(unary(client, 'GetUser', { id: 999999 }), (err) => err.code === grpc.status.NOT_FOUND);

  // A client stream, compressed message by message.
  const created = await new Promise((resolve, reject) => {
    const call = client.CreateUsers((err, res) => (err ? reject(err) : resolve(res)));
    call.write({ name: 'Gzip One', email: 'gzip1@example.com' });
    call.write({ name: 'Gzip Two', email: 'gzip2@example.com' });
    call.end();
  });
  assert.equal(created.users_created, 2);
});

test('grpc-health-check: user.UserService is SERVING', async (t) => {
  assert.ok(target, 'QUARTET_GRPC is not set');
  const Health = grpc.makeClientConstructor(healthService, 'grpc.health.v1.Health');
  const health = new Health(target, grpc.credentials.createInsecure());
  t.after(() => health.close());
  for (const service of ['user.UserService', '']) {
    const res = await unary(health, 'check', { service });
    assert.equal(res.status, 'SERVING', `health of "${service}"`);
  }
  await assert.rejects(unary(health, 'check', { service: 'no.SuchService' }), (err) => err.code === grpc.status.NOT_FOUND);
});
