/**
 * scripts/prepare.mjs (npm's `prepare`) in a throwaway package whose `build` script counts its runs:
 * it builds when there is no record, a source changed, dist/ gained or lost a file, or
 * LIBREYOLO_FORCE_BUILD=1; it skips when dist/ is what a build of these sources made (npx's
 * second prepare of a clone); a failed build leaves no record. The real build is run by
 * `npm ci` in the readme and consumer-install tests.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../helpers/fixtures.ts';
import { tempDir } from '../helpers/temp.ts';

describe('scripts/prepare.mjs', () => {
  const root = tempDir();
  mkdirSync(join(root, 'scripts'));
  mkdirSync(join(root, 'src'));
  copyFileSync(join(REPO_ROOT, 'scripts', 'prepare.mjs'), join(root, 'scripts', 'prepare.mjs'));
  // The build: an empty dist/ with one file per source, and one line per run in builds.log.
  writeFileSync(join(root, 'build.mjs'), [
    "import { appendFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';",
    "if (process.env.FAIL_BUILD) process.exit(7);",
    "rmSync('dist', { recursive: true, force: true }); mkdirSync('dist');",
    "for (const f of readdirSync('src')) writeFileSync(`dist/${f}.js`, 'x');",
    "appendFileSync('builds.log', 'built\\n');",
  ].join('\n'));
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', private: true, type: 'module', scripts: { build: 'node build.mjs' } }));
  writeFileSync(join(root, 'src', 'a.ts'), 'export const a = 1;\n');

  const builds = (): number => {
    try {
      return readFileSync(join(root, 'builds.log'), 'utf8').split('\n').filter(Boolean).length;
    } catch {
      return 0;
    }
  };
  const prepare = (env: Record<string, string> = {}) => {
    const r = spawnSync(process.execPath, ['scripts/prepare.mjs'], { cwd: root, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } });
    return { code: r.status, out: r.stdout + r.stderr };
  };

  it('builds without a record, then skips while dist/ is what that build made', () => {
    assert.equal(prepare().code, 0);
    assert.equal(builds(), 1);
    const again = prepare();
    assert.equal(again.code, 0);
    assert.match(again.out, /dist\/ is up to date: built from exactly these sources/);
    assert.equal(builds(), 1);
  });

  it('builds again when a source changes, a source is added, or dist/ gains or loses a file', () => {
    const before = builds();
    writeFileSync(join(root, 'src', 'a.ts'), 'export const a = 2;\n');
    prepare();
    assert.equal(builds(), before + 1, 'an edited source');
    writeFileSync(join(root, 'src', 'b.ts'), 'export const b = 1;\n');
    prepare();
    assert.equal(builds(), before + 2, 'a new source');
    writeFileSync(join(root, 'dist', 'stale.js'), 'x');
    prepare();
    assert.equal(builds(), before + 3, 'a stray file in dist/');
    rmSync(join(root, 'dist', 'a.ts.js'));
    prepare();
    assert.equal(builds(), before + 4, 'a file missing from dist/');
    prepare();
    assert.equal(builds(), before + 4, 'and then it is up to date');
  });

  it('LIBREYOLO_FORCE_BUILD=1 always builds; a failed build fails prepare and leaves no record', () => {
    const before = builds();
    prepare({ LIBREYOLO_FORCE_BUILD: '1' });
    assert.equal(builds(), before + 1);
    writeFileSync(join(root, 'src', 'c.ts'), 'export const c = 1;\n');
    const failed = prepare({ FAIL_BUILD: '1' });
    assert.equal(failed.code, 7, failed.out);
    rmSync(join(root, 'src', 'c.ts'));
    // The record is still the one of the last good build: its sources are back, so it is up to date.
    assert.match(prepare().out, /up to date/);
    writeFileSync(join(root, 'src', 'c.ts'), 'export const c = 1;\n');
    prepare();
    assert.equal(builds(), before + 2, 'the sources the failed build saw are built now');
  });
});
