// quartet's OpenAPI document through Redocly's linter (@redocly/cli): `lint`
// with the `recommended` ruleset on the document as served must find no error.
// Its warnings are printed (rule, JSON pointer, message), not failed on: they
// are advice on the document, for its owner to take or leave.
//
// Redocly runs with its telemetry and update notice off, from an empty folder
// (so that no redocly.yaml around changes the rules).
//
// Environment:
//
//	QUARTET_URL  base URL of the service under test (required)
//
// Run: go test -run TestOpenAPITools (after npm ci in e2e/).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const base = process.env.QUARTET_URL;
if (!base) throw new Error('QUARTET_URL must be set (go test -run TestOpenAPITools sets it)');

test('redocly lint --extends=recommended finds no error in the served document', async (t) => {
  const resp = await fetch(base + '/openapi.json');
  assert.equal(resp.status, 200);
  const text = await resp.text();
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('@redocly/cli/package.json');
  const bin = join(dirname(pkg), require(pkg).bin.redocly);
  const dir = mkdtempSync(join(tmpdir(), 'quartet-lint-'));
  try {
    writeFileSync(join(dir, 'openapi.json'), text);
    const run = await promisify(execFile)(process.execPath, [bin, 'lint', '--extends=recommended', '--format=json', 'openapi.json'], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      maxBuffer: 64 << 20,
    }).catch((err) => err); // a non-zero exit is what errors give: read the report all the same
    let report;
    try {
      report = JSON.parse(run.stdout);
    } catch {
      assert.fail(`redocly lint gave no JSON report (exit ${run.code ?? 0}):\n${run.stdout}\n${run.stderr}`);
    }
    const line = (p) => `${p.severity} ${p.ruleId} ${p.location.map((l) => l.pointer).join(' ')}: ${p.message}`;
    for (const p of report.problems.filter((p) => p.severity !== 'error')) t.diagnostic(line(p));
    t.diagnostic(`redocly ${report.version}: ${report.totals.errors} errors, ${report.totals.warnings} warnings`);
    assert.deepEqual(report.problems.filter((p) => p.severity === 'error').map(line), [], 'redocly lint errors');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
