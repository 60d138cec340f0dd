// /metrics read by a real Prometheus text-format parser (parse-prometheus-text-format,
// whose output follows prom2json's): every line must parse, and the families the
// README promises must be there with sane values after a few requests.
// Run by the Go test TestRealClients with QUARTET_URL set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

const base = process.env.QUARTET_URL;

test('/metrics parses and counts what was asked', async () => {
  assert.ok(base, 'QUARTET_URL is not set');
  // Known traffic on each HTTP surface, and a 404, before reading.
  for (const path of ['/api/users/1', '/api/users/1', '/api/products?$top=1', '/api/users/999999']) {
    (await fetch(base + path)).body?.cancel();
  }
  await (await fetch(base + '/graphql', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: '{ __typename }' }),
  })).text();

  const res = await fetch(base + '/metrics');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
  // Every family the text declares was read, with its declared type.
  const declared = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)];
  assert.ok(declared.length >= 6, 'families declared');
  for (const [, name, type] of declared) {
    assert.equal(families.get(name)?.type, type.toUpperCase(), `family ${name}`);
  }

  const requests = families.get('quartet_requests_total');
  assert.equal(requests?.type, 'COUNTER');
  const count = (labels) => Number(requests.metrics.find((m) =>
    Object.entries(labels).every(([k, v]) => m.labels[k] === v))?.value ?? 0);
  assert.ok(count({ surface: 'rest', route: 'GET /api/users/{id}', code: '200' }) >= 2);
  assert.ok(count({ surface: 'rest', route: 'GET /api/users/{id}', code: '404' }) >= 1);
  assert.ok(count({ surface: 'odata', code: '200' }) >= 1);
  assert.ok(count({ surface: 'graphql', code: '200' }) >= 1);

  // The parser folds the series of a histogram into one (its flattenMetrics keys
  // buckets by "le" alone, so the last series' buckets stand); what it keeps must
  // still be a well-formed histogram: cumulative buckets up to +Inf.
  const duration = families.get('quartet_request_duration_seconds');
  assert.equal(duration?.type, 'HISTOGRAM');
  const buckets = Object.entries(duration.metrics[0].buckets)
    .map(([le, n]) => [le === '+Inf' ? Infinity : Number(le), Number(n)]).sort((a, b) => a[0] - b[0]);
  assert.equal(buckets.at(-1)[0], Infinity, 'the last bucket is +Inf');
  assert.ok(buckets.at(-1)[1] >= 1, 'the +Inf bucket counts every request of its series');
  for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i][1] >= buckets[i - 1][1], 'buckets are cumulative');

  const inFlight = families.get('quartet_requests_in_flight');
  assert.equal(inFlight?.type, 'GAUGE');
  assert.ok(inFlight.metrics.some((m) => m.labels.protocol === 'http' && Number(m.value) >= 1), 'this request is in flight');

  const records = families.get('quartet_store_records');
  assert.equal(records?.type, 'GAUGE');
  assert.ok(Number(records.metrics.find((m) => m.labels.table === 'users')?.value) > 0, 'users are counted');
  assert.equal(families.get('quartet_websocket_subscriptions')?.type, 'GAUGE');

  // The Go runtime's and the process's series, as Prometheus's Go client names them.
  const gc = families.get('go_gc_duration_seconds');
  assert.equal(gc?.type, 'SUMMARY');
  assert.deepEqual(Object.keys(gc.metrics[0].quantiles).sort(), ['0', '0.25', '0.5', '0.75', '1']);
  const one = (name) => Number(families.get(name)?.metrics[0]?.value);
  for (const name of ['go_goroutines', 'go_threads', 'go_memstats_heap_alloc_bytes', 'go_memstats_heap_inuse_bytes',
    'go_memstats_heap_sys_bytes', 'go_memstats_sys_bytes', 'go_memstats_alloc_bytes_total', 'process_open_fds',
    'process_max_fds', 'process_resident_memory_bytes', 'process_virtual_memory_bytes', 'process_start_time_seconds']) {
    assert.ok(one(name) > 0, `${name} is ${one(name)}`);
  }
  assert.ok(one('go_memstats_heap_alloc_bytes') <= one('go_memstats_heap_inuse_bytes'), 'heap in use holds the allocated heap');
  assert.equal(families.get('process_cpu_seconds_total')?.type, 'COUNTER');
});
