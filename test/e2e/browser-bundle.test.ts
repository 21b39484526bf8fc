/**
 * The browser bundle's dependency graph holds no Node built-in: the build (scripts/build-browser.ts)
 * refuses one, and here every import reachable from both entry points in its metafile is walked and
 * checked again, and the output files import nothing from outside themselves.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Metafile } from 'esbuild';
import { buildBrowser } from '../../scripts/build-browser.ts';

describe('browser bundle', () => {
  it('reaches no node: import or Node built-in from either entry point', async () => {
    const { outDir } = await buildBrowser(join(mkdtempSync(join(tmpdir(), 'libreyolo-bundle-')), 'dist'));
    const meta = JSON.parse(readFileSync(join(outDir, 'meta.json'), 'utf8')) as Metafile;
    const builtins = new Set(builtinModules);
    const entries = ['src/browser/index.ts', 'src/browser/session-worker.ts'];
    const seen = new Set<string>();
    const todo = [...entries];
    const offending: string[] = [];
    while (todo.length) {
      const file = todo.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const input = meta.inputs[file];
      assert.ok(input, `${file} is in the metafile`);
      for (const imp of input.imports) {
        if (imp.path.startsWith('node:') || builtins.has(imp.path)) offending.push(`${file} -> ${imp.path}`);
        else if (!imp.external) todo.push(imp.path);
      }
    }
    assert.deepEqual(offending, []);
    assert.ok(seen.has('src/weights/pickle/reader.ts') && seen.has('src/predict/predictor.ts'), 'the walk covers the unpickler and the predict runner');
    assert.ok(!seen.has('src/util/platform.ts') && seen.has('src/browser/platform.ts'), 'the platform seam is swapped');
    assert.ok(!seen.has('src/runtime/worker-host.ts') && seen.has('src/browser/worker-host.ts'), 'the worker host is swapped');
    for (const [out, o] of Object.entries(meta.outputs)) assert.deepEqual(o.imports.filter((i) => i.external), [], `${out} imports nothing external`);
  });
});
