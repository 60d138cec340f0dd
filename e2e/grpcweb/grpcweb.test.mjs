// gRPC-Web on the HTTP port from real clients, unmodified: Connect-ES's gRPC-Web
// transport (binary frames) and Google's grpc-web runtime (its default text mode,
// base64 both ways). Neither needs a protoc plugin: the messages and the service
// come from userpb/user.proto's FileDescriptorProto, which the Go test
// TestGRPCWebClients passes in QUARTET_USERPB_DESCRIPTOR (base64) with QUARTET_URL
// and QUARTET_TOKEN (a token with the write scope; the service checks tokens).
// Every answer is compared with REST's for the same users.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { fileDesc } from '@bufbuild/protobuf/codegenv2';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcWebTransport } from '@connectrpc/connect-node';
import XMLHttpRequest from 'xhr2';
import grpcWeb from 'grpc-web';

const base = process.env.QUARTET_URL;
const token = process.env.QUARTET_TOKEN;
const file = fileDesc(process.env.QUARTET_USERPB_DESCRIPTOR ?? '');
const UserService = file.services.find((s) => s.name === 'UserService');
const schema = (name) => file.messages.find((m) => m.name === name);

// rest reads path from REST, the reference for every answer here.
async function rest(path) {
  const resp = await fetch(base + path);
  assert.equal(resp.status, 200, `GET ${path}`);
  return resp.json();
}

// sameUser says whether a gRPC user (created_at "2006-01-02 15:04:05", UTC) is
// REST's (createdAt RFC 3339).
function assertSameUser(got, want) {
  assert.deepEqual(
    { id: got.id, name: got.name, email: got.email, createdAt: got.createdAt.replace(' ', 'T') + 'Z' },
    { id: want.id, name: want.name, email: want.email, createdAt: want.createdAt.replace(/\.\d+Z$/, 'Z') });
}

const withToken = { headers: { authorization: `Bearer ${token}` } };

test('Connect-ES gRPC-Web transport', async () => {
  assert.ok(base && token && UserService, 'QUARTET_URL, QUARTET_TOKEN and QUARTET_USERPB_DESCRIPTOR must be set');
  const client = createClient(UserService, createGrpcWebTransport({ baseUrl: base, httpVersion: '1.1' }));

  await assert.rejects(client.getUser({ id: 1 }),
    (err) => err instanceof ConnectError && err.code === Code.Unauthenticated && err.rawMessage === 'token missing');
  assertSameUser(await client.getUser({ id: 1 }, withToken), await rest('/api/users/1'));
  await assert.rejects(client.getUser({ id: 999999 }, withToken),
    (err) => err instanceof ConnectError && err.code === Code.NotFound && err.rawMessage === 'user 999999 not found');

  // The whole client stream in one body: what an HTTP/1.1 client can send.
  async function* users() {
    yield { name: 'Connect One', email: 'connect1@example.com' };
    yield { name: 'Connect Two', email: 'connect2@example.com' };
  }
  const created = await client.createUsers(users(), withToken);
  assert.equal(created.usersCreated, 2);

  const streamed = [];
  for await (const u of client.getAllUsers({}, withToken)) {
    streamed.push(u);
  }
  const all = await rest('/api/users');
  assert.equal(streamed.length, all.length);
  streamed.forEach((u, i) => assertSameUser(u, all[i]));
  assert.deepEqual(streamed.slice(-2).map((u) => u.name), ['Connect One', 'Connect Two']);

  async function* chat() {
    yield { userName: 'Ann', message: 'hello' };
    yield { userName: 'Ann', message: 'again' };
  }
  const echoes = [];
  for await (const m of client.chatWithUsers(chat(), withToken)) {
    echoes.push(`${m.userName}: ${m.message}`);
  }
  assert.deepEqual(echoes, ['Server: Echo: hello', 'Server: Echo: again']);
});

// The compiled runtime exports thenableCall as unaryCall, which its types call deprecated.

// googleMethod describes a method to grpc-web as its protoc plugin would, with
// @bufbuild/protobuf doing the (de)serialising.
function googleMethod(name, type, input, output) {
  return new grpcWeb.MethodDescriptor(`/user.UserService/${name}`, type, Object, Object,
    (req) => toBinary(schema(input), create(schema(input), req)),
    (bytes) => fromBinary(schema(output), bytes));
}

test("Google's grpc-web runtime, text mode", async () => {
  assert.ok(base && token && UserService, 'QUARTET_URL, QUARTET_TOKEN and QUARTET_USERPB_DESCRIPTOR must be set');
  globalThis.XMLHttpRequest = XMLHttpRequest; // grpc-web is written for browsers
  const client = new grpcWeb.GrpcWebClientBase({ format: 'text' });
  const getUser = googleMethod('GetUser', grpcWeb.MethodType.UNARY, 'GetUserRequest', 'UserResponse');
  const auth = { authorization: `Bearer ${token}` };

  assertSameUser(await client.unaryCall(base + getUser.getName(), { id: 2 }, auth, getUser), await rest('/api/users/2'));
  await assert.rejects(client.unaryCall(base + getUser.getName(), { id: 2 }, {}, getUser),
    (err) => err.code === grpcWeb.StatusCode.UNAUTHENTICATED && err.message === 'token missing');
  await assert.rejects(client.unaryCall(base + getUser.getName(), { id: 0 }, auth, getUser),
    (err) => err.code === grpcWeb.StatusCode.INVALID_ARGUMENT && err.message === 'user id must be positive');

  const getAllUsers = googleMethod('GetAllUsers', grpcWeb.MethodType.SERVER_STREAMING, 'Empty', 'UserResponse');
  const { streamed, status } = await new Promise((resolve, reject) => {
    const streamed = [];
    const stream = client.serverStreaming(base + getAllUsers.getName(), {}, auth, getAllUsers);
    stream.on('data', (u) => streamed.push(u));
    stream.on('status', (status) => resolve({ streamed, status }));
    stream.on('error', reject);
  });
  assert.equal(status.code, grpcWeb.StatusCode.OK);
  const all = await rest('/api/users');
  assert.equal(streamed.length, all.length);
  streamed.forEach((u, i) => assertSameUser(u, all[i]));
});
