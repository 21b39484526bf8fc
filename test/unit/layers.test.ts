/**
 * The import graph of src/ (type-only imports, re-exports and dynamic imports included) points one
 * way: each file imports only its own layer or lower ones, and no files import each other in a
 * circle. A new top-level folder fails here until it is given its layer.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BROWSER_SEAMS } from '../../scripts/browser-seams.ts';

const SRC = resolve(fileURLToPath(new URL('../../src', import.meta.url)));

/** Bottom to top. A file may import its own layer and those below it, never one above. */
const LAYERS: ReadonlyArray<readonly string[]> = [
  ['errors.ts', 'version.ts', 'assets.ts', 'util'],
  ['graph'],
  ['data', 'weights', 'video'],
  ['models'],
  ['runtime'],
  ['predict', 'export', 'quantize', 'val', 'train', 'track', 'doctor'],
  ['profile'],
  // The facade composes the services (and brings the training profiler to `train({ profile: true })`).
  ['model.ts', 'load.ts'],
  // Application jobs: `profile run` / `profile infer` and their trial processes, the `ui` server.
  ['app', 'ui'],
  // browser/: the browser build's entry (its index, model facade, image and weights inputs).
  ['cli', 'index.ts', 'browser'],
];

const folderLayer = (file: string): number => LAYERS.findIndex((names) => names.includes(file.split('/')[0]!));

/**
 * The browser build swaps a few core modules for browser/ counterparts (scripts/browser-seams.ts):
 * in the bundle a counterpart stands where its Node module stood, so it takes that module's layer,
 * and so does every browser/ file it imports; the other browser/ files are the browser's entry layer.
 */
function browserLayers(graph: Map<string, string[]>): Map<string, number> {
  const layers = new Map<string, number>();
  const place = (file: string, layer: number): void => {
    if (!file.startsWith('browser/') || (layers.get(file) ?? Infinity) <= layer) return;
    layers.set(file, layer);
    for (const dep of graph.get(file) ?? []) place(dep, layer);
  };
  for (const [core, counterpart] of Object.entries(BROWSER_SEAMS)) place(counterpart, folderLayer(core));
  return layers;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** file -> the src files it imports, by relative specifier (comments stripped first). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const path of sourceFiles(SRC)) {
    const code = readFileSync(path, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    const targets = new Set<string>();
    const specifiers = /(?:(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?[^'";]*?\s*from\s*|\bimport\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g;
    for (let m = specifiers.exec(code); m; m = specifiers.exec(code)) {
      let target = resolve(dirname(path), m[1]!).replace(/\.js$/, '.ts');
      if (!target.endsWith('.ts')) target += '.ts';
      if (target.startsWith(SRC + '/')) targets.add(relative(SRC, target));
    }
    graph.set(relative(SRC, path), [...targets]);
  }
  return graph;
}

/** The import circles (strongly connected components of more than one file, or a file importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next); low.set(v, next); next++;
    stack.push(v); onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do { w = stack.pop()!; onStack.delete(w); scc.push(w); } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('import layers', () => {
  const graph = importGraph();
  const swapped = browserLayers(graph);
  const layerOf = (file: string): number => swapped.get(file) ?? folderLayer(file);

  it('reads the whole tree', () => {
    assert.ok(graph.size > 100, `only ${graph.size} files under ${SRC}`);
    assert.ok(graph.get('model.ts')!.includes('predict/predictor.ts'), 'the import parser missed model.ts -> predict/predictor.ts');
  });

  it('places every file in a layer', () => {
    const unplaced = [...graph.keys()].filter((f) => layerOf(f) < 0);
    assert.deepEqual(unplaced, [], 'give these files (their top-level folder) a layer in LAYERS');
  });

  it('has no import that runs back up a layer', () => {
    const upward: string[] = [];
    for (const [from, targets] of graph) {
      for (const to of targets) if (layerOf(to) > layerOf(from)) upward.push(`${from} -> ${to}`);
    }
    assert.deepEqual(upward, [], 'a lower layer that needs a higher one declares a port the caller fills in');
  });

  it('keeps the core off browser/ (the browser build swaps modules in; no core file imports one)', () => {
    const offending = [...graph].flatMap(([from, targets]) =>
      (from.startsWith('browser/') ? [] : targets.filter((t) => t.startsWith('browser/')).map((t) => `${from} -> ${t}`)));
    assert.deepEqual(offending, []);
  });

  it('keeps train/ and load.ts off profile/ (the trainer declares the profiler port; profile implements it)', () => {
    const offending = [...graph].flatMap(([from, targets]) =>
      (from.startsWith('train/') || from === 'load.ts' ? targets.filter((t) => t.startsWith('profile/')).map((t) => `${from} -> ${t}`) : []));
    assert.deepEqual(offending, []);
  });

  it('has no import circle, type-only imports included', () => {
    assert.deepEqual(circles(graph), []);
  });
});
