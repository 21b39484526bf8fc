/**
 * The on-disk cache of ORT-optimised graphs (runtime/optimized-model-cache.ts), on small real graphs
 * in a real session worker: a second session on the same graph loads the saved optimised graph (ORT format) and
 * gives the same outputs bit for bit; a damaged entry is rebuilt; the cache can be turned off; the
 * folder keeps to its size limit, oldest entries first.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { conv2d } from '../../src/graph/nn.ts';
import type { Graph } from '../../src/graph/ir.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { SessionConfig } from '../../src/runtime/protocol.ts';
import { createCachedSession, optimizedModelCacheDir } from '../../src/runtime/optimized-model-cache.ts';
import { WorkerHost } from '../../src/runtime/worker-host.ts';
import { setLimits } from '../../src/util/limits.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { tempDir } from '../helpers/temp.ts';

/** Conv (16 channels, so level 'all' rewrites it into NCHWc blocks) -> Relu -> Conv, seeded weights. */
function graphIr(seed: number): Graph {
  const rnd = mulberry32(seed);
  const b = new GraphBuilder('cache');
  const x = b.input('x', 'float32', [1, 8, 12, 12]);
  const w1 = b.param('c1.weight', { dtype: 'float32', dims: [16, 8, 3, 3], data: Float32Array.from({ length: 16 * 8 * 9 }, () => rnd() - 0.5) });
  const w2 = b.param('c2.weight', { dtype: 'float32', dims: [16, 16, 3, 3], data: Float32Array.from({ length: 16 * 16 * 9 }, () => rnd() - 0.5) });
  const y = conv2d(b, b.op('Relu', [conv2d(b, x, w1, null, { kernel: 3 })]), w2, null, { kernel: 3 });
  b.output('y', y, 'float32', [1, 16, 12, 12]);
  return b.graph;
}

function graphBytes(seed: number): Uint8Array {
  return serializeModel(graphIr(seed), { opset: 17 });
}

const config: SessionConfig = { executionProviders: ['cpu'], intraOpNumThreads: 1, graphOptimizationLevel: 'all' };
const input = (() => {
  const rnd = mulberry32(5);
  return { dtype: 'float32' as const, dims: [1, 8, 12, 12], data: Float32Array.from({ length: 8 * 144 }, () => rnd() * 2 - 1) };
})();

describe('optimised-graph cache', () => {
  const host = new WorkerHost();
  after(() => host.terminate());
  let dir = '';
  const saved = { ...process.env };
  beforeEach(() => {
    process.env.LIBREYOLO_CACHE_DIR = tempDir();
    delete process.env.LIBREYOLO_ORT_CACHE;
    dir = optimizedModelCacheDir();
  });
  afterEach(() => {
    process.env = { ...saved };
    setLimits({ ortCacheBytes: undefined });
  });
  const entries = (): string[] => readdirSync(dir).filter((f) => f.endsWith('.ort'));
  let n = 0;
  const open = async (model: Uint8Array, c: SessionConfig = config, orderLike?: Graph) => {
    const { session, cache } = await createCachedSession(host, `s${n++}`, model, c, orderLike);
    const y = (await session.run({ x: input })).outputs.y!.data as Float32Array;
    await session.release();
    return { cache, y };
  };

  it('a second session on the same graph is a hit with the same outputs, bit for bit', async () => {
    const model = graphBytes(1);
    const first = await open(model);
    assert.equal(first.cache, 'miss');
    assert.equal(entries().length, 1);
    // The entry is the graph as ORT rewrote it (NCHWc kernels, domain com.microsoft.nchwc), not the
    // graph it was given, in ORT's own format (the flatbuffer's file identifier), which loads faster
    // than ONNX. Which reorders it adds depends on the CPU's block size: with AVX2 (8) the input gets
    // a ReorderInput, with AVX-512 (16) the 8-channel input is read as it is and only the output is reordered.
    const entry = readFileSync(join(dir, entries()[0]!), 'latin1');
    assert.match(entry, /com\.microsoft\.nchwc/);
    assert.match(entry, /ReorderOutput/);
    assert.equal(entry.slice(4, 8), 'ORTM');
    const second = await open(model);
    assert.equal(second.cache, 'hit');
    assert.deepEqual(second.y, first.y);
    // Another graph, or another level, is another entry.
    assert.equal((await open(graphBytes(2))).cache, 'miss');
    assert.equal((await open(model, { ...config, graphOptimizationLevel: 'extended' })).cache, 'miss');
    assert.equal(entries().length, 3);
  });

  it('with orderLike (train sessions), keeps the optimised graph relisted in the built order: same outputs, cached', async () => {
    const g = graphIr(8);
    const model = serializeModel(g, { opset: 17 });
    const want = (await open(model)).y;
    const first = await open(model, config, g);
    assert.equal(first.cache, 'miss', 'a relisted entry is not the plain one');
    assert.deepEqual(first.y, want);
    assert.equal(entries().length, 2);
    for (const e of entries()) assert.match(readFileSync(join(dir, e), 'latin1'), /com\.microsoft\.nchwc/, 'each entry is the optimised graph');
    const second = await open(model, config, g);
    assert.equal(second.cache, 'hit');
    assert.deepEqual(second.y, want);
    process.env.LIBREYOLO_ORT_CACHE = '0';
    const off = await open(model, config, g);
    assert.equal(off.cache, 'off');
    assert.deepEqual(off.y, want);
  });

  it('a damaged entry is deleted and rebuilt', async () => {
    const model = graphBytes(3);
    const want = (await open(model)).y;
    writeFileSync(join(dir, entries()[0]!), 'not a model');
    const again = await open(model);
    assert.equal(again.cache, 'miss');
    assert.deepEqual(again.y, want);
    assert.equal((await open(model)).cache, 'hit');
  });

  it('is off with LIBREYOLO_ORT_CACHE=0 and for sessions that do not optimise', async () => {
    process.env.LIBREYOLO_ORT_CACHE = '0';
    assert.equal((await open(graphBytes(4))).cache, 'off');
    delete process.env.LIBREYOLO_ORT_CACHE;
    assert.equal((await open(graphBytes(4), { ...config, graphOptimizationLevel: 'disabled' })).cache, 'off');
    assert.equal(existsSync(dir), false);
  });

  it('keeps to its size limit, the least recently used entries going first', async () => {
    await open(graphBytes(5));
    const size = statSync(join(dir, entries()[0]!)).size;
    setLimits({ ortCacheBytes: Math.floor(size * 2.5) });
    await open(graphBytes(6));
    assert.equal(entries().length, 2);
    await open(graphBytes(5)); // a hit: entry 5 is now the most recently used
    await open(graphBytes(7));
    assert.equal(entries().length, 2);
    assert.equal((await open(graphBytes(5))).cache, 'hit');
    assert.equal((await open(graphBytes(6))).cache, 'miss', 'entry 6, the least recently used, went');
  });

  it('lives under LIBREYOLO_CACHE_DIR, else XDG_CACHE_HOME, else ~/.cache', () => {
    assert.equal(optimizedModelCacheDir({ LIBREYOLO_CACHE_DIR: '/c' }), '/c/ort-optimized');
    assert.equal(optimizedModelCacheDir({ XDG_CACHE_HOME: '/x' }), '/x/libreyolo/ort-optimized');
    assert.match(optimizedModelCacheDir({ HOME: '/h' }), /\.cache\/libreyolo\/ort-optimized$/);
  });
});
