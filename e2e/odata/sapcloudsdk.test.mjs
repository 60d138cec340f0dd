// The SAP Cloud SDK's OData client generator against the running service (QUARTET_URL),
// set up exactly as docs/odata.md says: its options-per-service.json and its
// generate-odata-client command line are read out of that document and run as written,
// on the service's own $metadata. The generated client then reads through the SDK's
// runtime; every answer is compared with a plain GET of the same resource, so a base
// path the generator did not take, or a $batch request sent outside the service, fails
// here.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { base, get, root } from "./plain.mjs";

const here = dirname(fileURLToPath(import.meta.url));

// docOf returns the generator's part of docs/odata.md: its options-per-service.json
// and the arguments of its generate-odata-client command.
function docOf() {
  const doc = readFileSync(join(here, "..", "..", "docs", "odata.md"), "utf8");
  const start = doc.indexOf("**SAP Cloud SDK**");
  assert.ok(start >= 0, "docs/odata.md has no **SAP Cloud SDK** part");
  const part = doc.slice(start, doc.indexOf("\n## ", start));
  const json = part.match(/```json\n([\s\S]*?)```/);
  assert.ok(json, "no options-per-service.json block in the SAP Cloud SDK part of docs/odata.md");
  const command = part.split("\n").find((l) => l.startsWith("npx generate-odata-client "));
  assert.ok(command, "no generate-odata-client command in the SAP Cloud SDK part of docs/odata.md");
  return { options: JSON.parse(json[1]), args: command.split(/\s+/).slice(2) };
}

// One generation for every test: the documented files and command in a fresh directory.
let dir, genOutput, sdk, desc, BigNumber, moment;
before(async () => {
  const { options, args } = docOf();
  dir = mkdtempSync(join(tmpdir(), "quartet-sapgen-"));
  // The generated code and its type check require the SDK runtime of this folder.
  symlinkSync(join(here, "node_modules"), join(dir, "node_modules"), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "commonjs" }));
  writeFileSync(join(dir, "options-per-service.json"), JSON.stringify(options));
  const [edmx] = Object.keys(options);
  mkdirSync(join(dir, dirname(edmx)), { recursive: true });
  const res = await fetch(root + "$metadata");
  assert.equal(res.status, 200);
  writeFileSync(join(dir, edmx), await res.text());

  const cli = join(here, "node_modules", "@sap-cloud-sdk", "generator", "dist", "cli.js");
  const run = spawnSync(process.execPath, [cli, ...args], { cwd: dir, encoding: "utf8" });
  genOutput = run.stdout + run.stderr;
  assert.equal(run.status, 0, `generate-odata-client ${args.join(" ")}:\n${genOutput}`);

  const out = args[args.findIndex((a) => a === "-o" || a === "--outputDir") + 1];
  const require = createRequire(join(dir, "index.js"));
  sdk = require(`./${out}/${options[edmx].directoryName}`);
  ({ desc } = require("@sap-cloud-sdk/odata-v4"));
  BigNumber = require("bignumber.js");
  moment = require("moment");
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

// plain is what the client read of e, in the JSON form of want: decimals as numbers,
// date-times as instants.
function plain(e, want) {
  const out = {};
  for (const k of Object.keys(want)) {
    const v = e[k];
    out[k] = BigNumber.isBigNumber(v) ? v.toNumber() : moment.isMoment(v) ? v.valueOf() : v;
  }
  return out;
}
function instants(want, e) {
  const out = { ...want };
  for (const k of Object.keys(want)) if (moment.isMoment(e[k])) out[k] = Date.parse(want[k]);
  return out;
}
function same(e, want, msg) {
  assert.deepEqual(plain(e, want), instants(want, e), msg);
}

test("sap cloud sdk: the generator takes /api as the base path, with no warning", async () => {
  assert.doesNotMatch(genOutput, /No base path could be determined/);
  const { productsApi } = sdk.quartet();
  const url = await productsApi.requestBuilder().getByKey(5).url({ url: base });
  assert.equal(url, root + "Products(id=5)");
});

test("sap cloud sdk: one product by key", async () => {
  const { productsApi } = sdk.quartet();
  const p = await productsApi.requestBuilder().getByKey(5).execute({ url: base });
  const want = await get("Products(5)");
  same(p, want);
  assert.equal(p.name, want.name);
});

test("sap cloud sdk: filter, order and top on a collection", async () => {
  const { productsApi } = sdk.quartet();
  const got = await productsApi.requestBuilder().getAll()
    .filter(productsApi.schema.PRICE.greaterThan(100))
    .orderBy(desc(productsApi.schema.PRICE)).top(3).execute({ url: base });
  const want = (await get("Products?$filter=price gt 100&$orderby=price desc&$top=3")).value;
  assert.equal(got.length, 3);
  got.forEach((p, i) => same(p, want[i], `product ${i}`));
  for (const p of got) assert.ok(p.price.gt(100), `${p.name} costs ${p.price}`);
});

// batchOf is the documented batch: product 5 and the orders of product 1.
function batchOf({ productsApi, ordersApi, batch }) {
  return batch(
    productsApi.requestBuilder().getByKey(5),
    ordersApi.requestBuilder().getAll().filter(ordersApi.schema.PRODUCT_ID.equals(1)),
  ).skipCsrfTokenFetching();
}

async function checkBatch(destination) {
  const api = sdk.quartet();
  const [product, orders] = await batchOf(api).execute(destination);
  assert.equal(product.httpCode, 200, JSON.stringify(product.body));
  assert.equal(orders.httpCode, 200, JSON.stringify(orders.body));
  const [p] = product.as(api.productsApi);
  same(p, await get("Products(5)"));
  const wantOrders = (await get("Orders?$filter=productId eq 1")).value;
  assert.ok(wantOrders.length > 0, "product 1 has orders in the demo data");
  const got = orders.as(api.ordersApi);
  assert.equal(got.length, wantOrders.length);
  got.forEach((o, i) => same(o, wantOrders[i], `order ${i}`));
}

test("sap cloud sdk: a $batch of two reads, each answered inside the service", async () => {
  await checkBatch({ url: base });
});

// Behind a proxy that adds a path prefix, the destination's url is -public-url's value,
// prefix included, and basePath stays /api: the batch's own URL goes through the proxy,
// and the paths of its requests reach the service as the generator wrote them.
test("sap cloud sdk: the same $batch behind a proxy that adds /shop", async (t) => {
  const upstream = new URL(base);
  const proxy = createServer((req, res) => {
    if (!req.url.startsWith("/shop/")) {
      res.writeHead(404).end();
      return;
    }
    const fwd = request({ host: upstream.hostname, port: upstream.port, method: req.method,
      path: req.url.slice("/shop".length), headers: req.headers }, (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
    fwd.on("error", (err) => res.destroy(err));
    req.pipe(fwd);
  });
  await new Promise((ok) => proxy.listen(0, "127.0.0.1", ok));
  t.after(() => new Promise((ok) => {
    proxy.close(ok);
    proxy.closeAllConnections();
  }));
  const publicURL = `http://127.0.0.1:${proxy.address().port}/shop`;
  const { productsApi } = sdk.quartet();
  const p = await productsApi.requestBuilder().getByKey(5).execute({ url: publicURL });
  assert.equal(p.id, 5);
  await checkBatch({ url: publicURL });
});
