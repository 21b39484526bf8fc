#!/usr/bin/env node
/**
 * Runs the test tiers named on the command line (`unit`, `model`, `e2e`), one `node --test` per
 * tier, in that order. A tier is every `*.test.ts` in `test/<tier>/`, read when the run starts, so a
 * new file needs no edit here; an empty or missing folder runs nothing. A test file anywhere else
 * under test/ (outside test/helpers) is an error: it would run in no tier.
 *
 * Concurrency is files at a time: unit files are short and CPU-bound (one per core); model files run
 * ORT sessions on both cores of a 2-core machine, so two at once only queue; e2e files mostly wait on
 * the child processes they start. A later --test-concurrency among the options wins.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const TIERS = { unit: 2, model: 1, e2e: 2 };
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TEST = join(ROOT, 'test');

// Options (`--test-name-pattern=...`, `--test-concurrency=1`) go to node --test; the rest are tiers.
const options = process.argv.slice(2).filter((a) => a.startsWith('-'));
const asked = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = asked.filter((t) => !(t in TIERS));
if (!asked.length || unknown.length) {
  console.error(`usage: node scripts/test.mjs ${Object.keys(TIERS).join('|')} ...${unknown.length ? ` (unknown tier: ${unknown.join(', ')})` : ''}`);
  process.exit(2);
}

const stray = readdirSync(TEST, { recursive: true })
  .filter((p) => p.endsWith('.test.ts') && !Object.keys(TIERS).some((t) => p.startsWith(`${t}/`)) && !p.startsWith('helpers/'));
if (stray.length) {
  console.error(`Test files outside the tier folders would run in no tier: ${stray.map((p) => `test/${p}`).join(', ')}.`);
  console.error('Move each into test/unit (no model, no ORT session, no child process), test/model (fixtures, ORT sessions) or test/e2e (CLI, child processes, training, browser).');
  process.exit(1);
}

let failed = false;
for (const tier of asked) {
  const dir = join(TEST, tier);
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => relative(ROOT, join(dir, f))) : [];
  if (!files.length) {
    console.log(`test/${tier}: no test files`);
    continue;
  }
  const args = ['--import', 'tsx', '--test', `--test-concurrency=${TIERS[tier]}`, ...options, ...files];
  const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
