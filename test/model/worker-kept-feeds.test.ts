/**
 * Feeds a session worker keeps between runs (`keep` / `reuse`): a train step sends its weights once
 * for its two sessions (the assignment forward keeps them, the loss session reuses them). A reused
 * feed gives what sending it gives, across sessions of the worker; a name never kept is refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { WorkerHost } from '../../src/runtime/worker-host.ts';
import { WorkerSession } from '../../src/runtime/worker-session.ts';

const CONFIG = { executionProviders: ['cpu'], intraOpNumThreads: 1, graphOptimizationLevel: 'disabled' as const };
const vec = (...xs: number[]): HostTensor => ({ dtype: 'float32', dims: [xs.length], data: Float32Array.from(xs) });

function model(op: 'Mul' | 'Add'): Uint8Array {
  const b = new GraphBuilder(op);
  const w = b.input('w', 'float32', [3]);
  const x = b.input('x', 'float32', [3]);
  b.output('y', b.op(op, [w, x]), 'float32', [3]);
  return serializeModel(b.graph);
}

describe('session worker: kept feeds', () => {
  let host: WorkerHost;
  let mul: WorkerSession;
  let add: WorkerSession;

  before(async () => {
    host = new WorkerHost();
    mul = await WorkerSession.create(host, 'mul', model('Mul'), CONFIG);
    add = await WorkerSession.create(host, 'add', model('Add'), CONFIG);
  });
  after(() => host.terminate());

  it('another session reuses what one run kept, as if it had been sent', async () => {
    const first = await mul.run({ w: vec(1, 2, 3), x: vec(2, 2, 2) }, false, { keep: ['w'] });
    assert.deepEqual([...first.outputs.y!.data], [2, 4, 6]);
    const reused = await add.run({ x: vec(10, 20, 30) }, false, { reuse: ['w'] });
    assert.deepEqual([...reused.outputs.y!.data], [11, 22, 33]);
    // A later keep replaces what was kept.
    await mul.run({ w: vec(5, 5, 5), x: vec(1, 1, 1) }, false, { keep: ['w'] });
    assert.deepEqual([...(await add.run({ x: vec(0, 0, 0) }, false, { reuse: ['w'] })).outputs.y!.data], [5, 5, 5]);
  });

  it('refuses to reuse a feed no run kept', async () => {
    await assert.rejects(add.run({ w: vec(1, 1, 1) }, false, { reuse: ['x'] }), /no kept feed x/);
  });
});
