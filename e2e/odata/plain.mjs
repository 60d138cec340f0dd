// The plain answers the OData clients' tests compare with: what a GET of the service
// under test (QUARTET_URL) answers, without the control information a client strips.
import assert from "node:assert/strict";

const base = process.env.QUARTET_URL;
if (!base) throw new Error("QUARTET_URL is not set (the Go test TestODataClients sets it)");

// base is the service's URL, root its OData service root.
export { base };
export const root = base + "/api/";

// get is the body of GET root+path: JSON without its @odata annotations, other
// answers (a $count) as text.
export async function get(path) {
  const res = await fetch(root + path);
  assert.equal(res.status, 200, `GET ${path}: ${res.status} ${await res.clone().text()}`);
  const type = res.headers.get("content-type") ?? "";
  if (!type.startsWith("application/json")) return res.text();
  return stripControl(await res.json());
}

// stripControl removes the @odata.* annotations of a JSON payload, at every level.
export function stripControl(v) {
  if (Array.isArray(v)) return v.map(stripControl);
  if (v === null || typeof v !== "object") return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith("@odata.") && !k.includes("@odata.")) out[k] = stripControl(x);
  return out;
}
