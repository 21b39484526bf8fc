/**
 * The on-disk cache of ORT's inferred shapes (graph/autodiff/shapes.ts), on a small real graph:
 * the first probe writes an entry, a second probe of the same graph is answered from it (shown by
 * editing the entry: the edit comes back), another graph is another entry, a damaged or incomplete
 * entry is ignored and rewritten, and LIBREYOLO_ORT_CACHE=0 neither reads nor writes.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { probeShapes, shapeCacheDir } from '../../src/graph/autodiff/shapes.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { tempDir } from '../helpers/temp.ts';

/** x [1, c, 6, 6] -> Relu -> Sigmoid -> times x. */
function graph(c: number) {
  const b = new GraphBuilder('shapes');
  const x = b.input('x', 'float32', [1, c, 6, 6]);
  const r = b.op('Relu', [x]);
  const m = b.op('Sigmoid', [r]);
  b.output('y', b.op('Mul', [m, x]), 'float32', [1, c, 6, 6]);
  const feeds: Record<string, HostTensor> = { x: { dtype: 'float32', dims: [1, c, 6, 6], data: new Float32Array(c * 36) } };
  return { graph: b.graph, feeds, values: { relu: r, mean: m } };
}

describe('shape-probe cache', () => {
  const saved = { ...process.env };
  let dir = '';
  beforeEach(() => {
    process.env.LIBREYOLO_CACHE_DIR = tempDir();
    delete process.env.LIBREYOLO_ORT_CACHE;
    dir = shapeCacheDir();
  });
  afterEach(() => {
    process.env = { ...saved };
  });
  const entries = (): string[] => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.shapes.json')) : []);

  it('answers a second probe of the same graph from its entry; another graph is another entry', async () => {
    const g = graph(4);
    const first = await probeShapes(g.graph, g.feeds);
    assert.deepEqual(first.get(g.values.mean)!.dims, [1, 4, 6, 6]);
    assert.equal(entries().length, 1);
    // Edit the entry: the next probe returns the edit, so it read the cache rather than asking ORT.
    const path = join(dir, entries()[0]!);
    const doc = JSON.parse(readFileSync(path, 'utf8')) as { values: Array<[string, string, number[] | null]> };
    doc.values = doc.values.map(([v, t, d]) => (v === g.values.mean ? [v, t, [1, 4, 6, 7]] : [v, t, d]));
    writeFileSync(path, JSON.stringify(doc));
    assert.deepEqual((await probeShapes(g.graph, g.feeds)).get(g.values.mean)!.dims, [1, 4, 6, 7]);
    const other = graph(5);
    assert.deepEqual((await probeShapes(other.graph, other.feeds)).get(other.values.mean)!.dims, [1, 5, 6, 6]);
    assert.equal(entries().length, 2);
  });

  it('ignores and rewrites a damaged or incomplete entry', async () => {
    const g = graph(3);
    const want = await probeShapes(g.graph, g.feeds);
    const path = join(dir, entries()[0]!);
    for (const bad of ['not json', JSON.stringify({ values: [] }), JSON.stringify({ values: [['x', 'float32', [-1]]] })]) {
      writeFileSync(path, bad);
      assert.deepEqual(await probeShapes(g.graph, g.feeds), want);
      assert.notEqual(readFileSync(path, 'utf8'), bad, 'the entry is rewritten');
    }
  });

  it('is neither read nor written with LIBREYOLO_ORT_CACHE=0', async () => {
    process.env.LIBREYOLO_ORT_CACHE = '0';
    const g = graph(2);
    assert.deepEqual((await probeShapes(g.graph, g.feeds)).get(g.values.relu)!.dims, [1, 2, 6, 6]);
    assert.equal(existsSync(dir), false);
  });
});
