#!/usr/bin/env node
/**
 * Runs the test tiers named on the command line (`unit`, `model`, `e2e`), in that order. A tier is
 * every `*.test.ts` in `test/<tier>/`, read when the run starts, so a new file needs no edit here; an
 * empty or missing folder runs nothing. A test file anywhere else under test/ (outside test/helpers)
 * is an error: it would run in no tier. `--typecheck` also runs `npm run typecheck`, beside the
 * tests rather than before them (it is one process of ~28 CPU s; the run fails if it fails).
 *
 * Concurrency is files at a time, the same on any machine (the suite is sized for 2 cores): two in
 * the unit tier, three in the model tier, four in the e2e tier. ORT's intra-op threads sleep when idle (no
 * spinning), so another file costs no CPU time and fills the core a file leaves idle while its main
 * thread decodes, runs JavaScript or waits on a child. E2e files mostly wait on children (the CLI,
 * browsers, trials): on a 2-vCPU machine the tier took 27.2 min two at a time and 19.6 min four at a
 * time (2026-12-03); the model tier 13.0 min two at a time, 9.6 min three at a time.
 *
 * The unit tier is one `node --test` run. The model and e2e tiers start their files longest first, by
 * the CPU seconds (user + sys of the file's process and its children) recorded in
 * scripts/test-costs.json, so no long file starts last and runs alone at the end (a file missing
 * there starts first, as if the longest: it may be; the figures only order the run: a stale one makes
 * it slower, never wrong). `node --test` sorts the files it is given, so these tiers run one `node --test` per
 * file here, N at a time, each file's report printed whole when it ends, with its wall time and CPU
 * seconds; `--record-costs` writes those CPU seconds to scripts/test-costs.json. A
 * --test-concurrency=N among the options sets every tier's N.
 *
 * The two tiers one after the other fill both cores already: one pool of four over both (tried
 * 2026-12-07, fresh figures: 3,129 CPU s in 27.2 min, 1.92 cores busy) took as long as separate
 * tiers (3,106 CPU s in 27.0 min); its files' CPU seconds rose by 10-15% against a quiet run, as
 * separate tiers' do under load. The suite is CPU-bound: its wall time is its CPU seconds over ~1.9.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const TIERS = { unit: 2, model: 3, e2e: 4 };
/** Tiers whose files start longest first (one `node --test` per file). */
const ORDERED = new Set(['model', 'e2e']);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TEST = join(ROOT, 'test');
const COSTS_FILE = join(ROOT, 'scripts', 'test-costs.json');
/** `test/<tier>/<file>` -> CPU seconds measured for that file (see the comment above). */
const COSTS = existsSync(COSTS_FILE) ? JSON.parse(readFileSync(COSTS_FILE, 'utf8')).cpu_seconds : {};

// `--record-costs` is ours (below); other options (`--test-name-pattern=...`, `--test-concurrency=1`)
// go to node --test; the rest are tiers.
const RECORD_COSTS = process.argv.includes('--record-costs');
const TYPECHECK = process.argv.includes('--typecheck');
const OURS = new Set(['--record-costs', '--typecheck']);
const options = process.argv.slice(2).filter((a) => a.startsWith('-') && !OURS.has(a));
const concurrencyOption = options.map((a) => /^--test-concurrency=(\d+)$/.exec(a)).filter(Boolean).at(-1);
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

/** `files` longest first by COSTS (a file not measured there first), then by name. */
function longestFirst(files) {
  const cost = (f) => (typeof COSTS[f] === 'number' ? COSTS[f] : Infinity);
  return [...files].sort((a, b) => cost(b) - cost(a) || a.localeCompare(b));
}

// Each file's CPU seconds (user + sys of its process and the children it waited for), read by
// /usr/bin/time (Debian's `time` package) where it is installed: printed beside the wall time, and
// written to scripts/test-costs.json with --record-costs.
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const costDir = TIME ? mkdtempSync(join(tmpdir(), 'libreyolo-test-costs-')) : undefined;
if (costDir) process.once('exit', () => rmSync(costDir, { recursive: true, force: true }));
/** CPU seconds of each file run so far (see above). */
const measuredCosts = {};

/** Runs `files` N at a time in the order given, one `node --test` each; resolves to the failed ones and the test counts. */
async function runPool(files, concurrency) {
  const reporter = options.some((a) => a.startsWith('--test-reporter')) ? [] : [`--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`];
  const queue = [...files];
  const failedFiles = [];
  const counts = { tests: 0, pass: 0, fail: 0 };
  const worker = async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      const started = performance.now();
      const nodeArgs = [process.execPath, '--import', 'tsx', '--test', ...reporter, ...options, file];
      const costFile = costDir ? join(costDir, file.replaceAll('/', '_')) : undefined;
      const argv = TIME && costFile ? [TIME, '-f', '%U %S', '-o', costFile, ...nodeArgs] : nodeArgs;
      const child = spawn(argv[0], argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      const chunks = [];
      child.stdout.on('data', (b) => chunks.push(b));
      child.stderr.on('data', (b) => chunks.push(b));
      const code = await new Promise((resolve) => child.on('close', (c, signal) => resolve(c ?? signal)));
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const report = Buffer.concat(chunks).toString('utf8');
      const cpu = costFile && existsSync(costFile) ? readFileSync(costFile, 'utf8').trim().split('\n').at(-1).split(' ').map(Number) : [];
      const cpuNote = cpu.length === 2 && cpu.every(Number.isFinite) ? `, ${(measuredCosts[file] = Math.round(cpu[0] + cpu[1]))} CPU s` : '';
      // The file's own summary lines (`# pass 12` in TAP, `ℹ pass 12` in spec), added up per tier.
      for (const [, key, n] of report.matchAll(/^(?:#|ℹ) (tests|pass|fail) (\d+)$/gm)) counts[key] += Number(n);
      process.stdout.write(`\n# ${file}: ${code === 0 ? 'ok' : `FAILED (${code})`}, ${seconds} s${cpuNote}\n${report}`);
      if (code !== 0) failedFiles.push(file);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
  return { failedFiles, counts };
}

/** Runs `command` with its output captured; resolves to its exit code and output. */
function runCaptured(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (b) => chunks.push(b));
    child.stderr.on('data', (b) => chunks.push(b));
    child.on('error', (e) => resolve({ code: 1, output: String(e) }));
    child.on('close', (c, signal) => resolve({ code: c ?? signal, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

// One cache of ORT-optimised training graphs for the whole run (runtime/optimized-model-cache.ts):
// files that train the same network at the same shape share it, and nothing lands in ~/.cache. A
// LIBREYOLO_CACHE_DIR already set wins.
if (!process.env.LIBREYOLO_CACHE_DIR) {
  const cacheDir = mkdtempSync(join(tmpdir(), 'libreyolo-test-cache-'));
  process.env.LIBREYOLO_CACHE_DIR = cacheDir;
  process.once('exit', () => rmSync(cacheDir, { recursive: true, force: true }));
}

const runStarted = performance.now();
const minutesSince = (t) => ((performance.now() - t) / 60_000).toFixed(1);
const typecheck = TYPECHECK ? runCaptured(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '--silent', 'typecheck']) : undefined;

let failed = false;
for (const tier of asked) {
  const dir = join(TEST, tier);
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => relative(ROOT, join(dir, f))) : [];
  if (!files.length) {
    console.log(`test/${tier}: no test files`);
    continue;
  }
  const concurrency = concurrencyOption ? Number(concurrencyOption[1]) : TIERS[tier];
  const started = performance.now();
  if (ORDERED.has(tier)) {
    const { failedFiles, counts } = await runPool(longestFirst(files), concurrency);
    const tally = `${counts.tests} tests, ${counts.pass} passed, ${counts.fail} failed`;
    console.log(`\n# test/${tier}: ${files.length} files, ${tally}, in ${minutesSince(started)} min; ${failedFiles.length ? `${failedFiles.length} files FAILED: ${failedFiles.join(', ')}` : 'every file passed'}`);
    if (failedFiles.length) failed = true;
    continue;
  }
  // Not spawnSync: the type-check runs meanwhile.
  const args = ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...options, ...files];
  const code = await new Promise((resolve) => spawn(process.execPath, args, { cwd: ROOT, stdio: 'inherit' }).on('close', (c, signal) => resolve(c ?? signal)));
  console.log(`\n# test/${tier}: ${files.length} files in ${minutesSince(started)} min; ${code === 0 ? 'every test passed' : `FAILED (${code})`}`);
  if (code !== 0) failed = true;
}
if (typecheck) {
  const { code, output } = await typecheck;
  process.stdout.write(`\n# npm run typecheck: ${code === 0 ? 'ok' : `FAILED (${code})`}\n${output}`);
  if (code !== 0) failed = true;
}
console.log(`\n# ${asked.join(' + ')}${TYPECHECK ? ' + typecheck' : ''}: ${minutesSince(runStarted)} min; ${failed ? 'FAILED' : 'every tier passed'}`);
if (RECORD_COSTS) {
  if (!Object.keys(measuredCosts).length) {
    console.error('--record-costs: no CPU seconds were measured (is /usr/bin/time installed? the unit tier is not measured per file)');
    process.exit(2);
  }
  const record = existsSync(COSTS_FILE) ? JSON.parse(readFileSync(COSTS_FILE, 'utf8')) : { cpu_seconds: {} };
  record.cpu_seconds = Object.fromEntries(Object.entries({ ...record.cpu_seconds, ...measuredCosts }).sort(([a], [b]) => a.localeCompare(b)));
  record.measured = new Date().toISOString().slice(0, 10);
  const tmp = `${COSTS_FILE}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(tmp, COSTS_FILE);
  console.log(`--record-costs: ${Object.keys(measuredCosts).length} files written to ${relative(ROOT, COSTS_FILE)}`);
}
process.exit(failed ? 1 : 0);
