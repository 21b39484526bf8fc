/**
 * Feeds lent to a session worker for one run (`WorkerSession.run`'s `lend`): a train step's weights
 * move to the worker and back without a copy. The caller's buffer is detached while lent (moved, not
 * cloned), the run reads the values, and they come back to `giveBack`, after a failed run too. A
 * view into a larger buffer is refused (the rest of that buffer would move with it), and
 * lentParameterFeeds gives such a parameter a buffer of its own first.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { Parameter } from '../../src/graph/module.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { DetectionNetwork } from '../../src/models/registry.ts';
import { WorkerHost } from '../../src/runtime/worker-host.ts';
import { WorkerSession } from '../../src/runtime/worker-session.ts';
import { lentParameterFeeds } from '../../src/train/graph.ts';

const CONFIG = { executionProviders: ['cpu'], intraOpNumThreads: 1, graphOptimizationLevel: 'disabled' as const };
const vec = (...xs: number[]): HostTensor => ({ dtype: 'float32', dims: [xs.length], data: Float32Array.from(xs) });

function model(): Uint8Array {
  const b = new GraphBuilder('mul');
  const w = b.input('w', 'float32', [3]);
  const x = b.input('x', 'float32', [3]);
  b.output('y', b.op('Mul', [w, x]), 'float32', [3]);
  return serializeModel(b.graph);
}

describe('session worker: lent feeds', () => {
  let host: WorkerHost;
  let mul: WorkerSession;

  before(async () => {
    host = new WorkerHost();
    mul = await WorkerSession.create(host, 'mul', model(), CONFIG);
  });
  after(() => host.terminate());

  it('moves a lent feed to the worker and hands it back, values intact', async () => {
    const w = vec(1, 2, 3);
    const back = new Map<string, HostTensor>();
    const run = mul.run({ w, x: vec(2, 2, 2) }, false, { names: ['w'], giveBack: (k, t) => back.set(k, t) });
    assert.equal(w.data.byteLength, 0, 'the lent buffer was transferred, not copied');
    const { outputs } = await run;
    assert.deepEqual([...outputs.y!.data], [2, 4, 6]);
    assert.deepEqual([...back.keys()], ['w']);
    assert.deepEqual([...back.get('w')!.data], [1, 2, 3]);
    assert.deepEqual(back.get('w')!.dims, [3]);
  });

  it('hands a lent feed back when the run fails', async () => {
    const back = new Map<string, HostTensor>();
    const bad: HostTensor = { dtype: 'float32', dims: [4], data: new Float32Array(4) };
    await assert.rejects(mul.run({ w: vec(4, 5, 6), x: bad }, false, { names: ['w'], giveBack: (k, t) => back.set(k, t) }), /x|dimension|shape/i);
    assert.deepEqual([...back.get('w')!.data], [4, 5, 6]);
  });

  it('refuses a view into a larger buffer and a name not among the feeds', async () => {
    const big = new Float32Array(6);
    const view: HostTensor = { dtype: 'float32', dims: [3], data: big.subarray(3) };
    await assert.rejects(mul.run({ w: view, x: vec(1, 1, 1) }, false, { names: ['w'], giveBack: () => {} }), /lent feed w is a view into a larger buffer/);
    assert.equal(big.byteLength, 24, 'nothing moved');
    await assert.rejects(mul.run({ w: vec(1, 1, 1), x: vec(1, 1, 1) }, false, { names: ['v'], giveBack: () => {} }), /lent feed v is not among the feeds/);
  });

  it('lentParameterFeeds gives a view its own buffer and puts what comes back into the parameter', async () => {
    const storage = new Float32Array([9, 1, 2, 3]);
    const p = new Parameter({ dtype: 'float32', dims: [3], data: storage.subarray(1) }, 'parameter');
    const network = { namedTensors: () => [['w', p]] } as unknown as DetectionNetwork;
    const { feeds, lend } = lentParameterFeeds(network, ['w']);
    assert.notEqual(feeds.w!.data.buffer, storage.buffer, 'a buffer of its own');
    const before = p.value;
    await mul.run({ ...feeds, x: vec(1, 1, 1) }, false, lend);
    assert.equal(storage.byteLength, 16, 'the storage it was a view of stays');
    assert.notEqual(p.value, before);
    assert.deepEqual([...p.value.data], [1, 2, 3]);
  });
});
