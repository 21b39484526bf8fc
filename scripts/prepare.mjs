#!/usr/bin/env node
/**
 * npm's `prepare`: builds dist/ (`npm run build`) unless dist/ is exactly what a build of these
 * sources made. npm runs prepare on `npm ci`, on `npm pack`, and again on the first `npx libreyolo`
 * in a clone: npx installs the clone as a `file:` dependency of its own cache and prepares it, which
 * rebuilt dist/ in place (about 30 s) before the command ran.
 *
 * "Exactly" is checked, not assumed: the build's inputs (src/, the build scripts, the tsconfigs, the
 * package and lock files) hash to the value recorded when dist/ was built, and dist/ holds the same
 * files with the same sizes. Anything else (an edited source, a file added to or removed from dist/,
 * no record) builds from an empty dist/ as before. LIBREYOLO_FORCE_BUILD=1 always builds.
 * The record lives in node_modules/.cache/libreyolo-build/, per checkout folder, so it is never packed.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INPUTS = ['src', 'scripts/build-browser.ts', 'scripts/browser-seams.ts', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.browser.json', 'tsconfig.browser-types.json', 'package.json', 'package-lock.json'];
const DIST = join(ROOT, 'dist');
const RECORD = join(ROOT, 'node_modules', '.cache', 'libreyolo-build', `${createHash('sha256').update(ROOT).digest('hex').slice(0, 16)}.json`);

/** Every file under `path` (or `path` itself), relative to ROOT, sorted. */
function filesUnder(path) {
  const abs = join(ROOT, path);
  if (!existsSync(abs)) return [];
  if (!statSync(abs).isDirectory()) return [path];
  return readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(ROOT, join(e.parentPath ?? e.path, e.name)))
    .sort();
}

function inputsHash() {
  const h = createHash('sha256');
  for (const file of INPUTS.flatMap(filesUnder)) h.update(`${file}\0`).update(readFileSync(join(ROOT, file))).update('\0');
  return h.digest('hex');
}

/** dist/'s files and sizes, one line each. */
function distListing() {
  return filesUnder('dist').map((f) => `${f} ${statSync(join(ROOT, f)).size}`).join('\n');
}

const inputs = inputsHash();
if (process.env.LIBREYOLO_FORCE_BUILD !== '1' && existsSync(RECORD) && existsSync(DIST)) {
  const record = JSON.parse(readFileSync(RECORD, 'utf8'));
  if (record.inputs === inputs && record.dist === distListing()) {
    console.log('dist/ is up to date: built from exactly these sources (LIBREYOLO_FORCE_BUILD=1 builds anyway).');
    process.exit(0);
  }
}
const npm = process.env.npm_execpath;
const build = npm ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: ROOT, stdio: 'inherit' }) : spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit', shell: true });
if (build.status !== 0) process.exit(build.status ?? 1);
// Written after the build and by rename, so an interrupted build leaves no record.
mkdirSync(join(RECORD, '..'), { recursive: true });
writeFileSync(`${RECORD}.tmp`, JSON.stringify({ inputs, dist: distListing() }));
renameSync(`${RECORD}.tmp`, RECORD);
