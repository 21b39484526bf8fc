/**
 * A broadcast parameter's gradient is a sum over every element it was added to: for a
 * LearnableAffineBlock's scalar bias in D-FINE-n's first HG block, 819,200 terms whose sum is 7,500x
 * smaller than their magnitudes. ONNX Runtime's one multi-axis ReduceSum lost about 1.5e-8 of the
 * magnitudes there (2e-4 to 5e-4 of 4.5); the rule sums one axis at a time (`reduceSumStaged`).
 * Checked here on the same shape with uniform [-1, 1) upstream gradients against the exact sum: one
 * ReduceSum is 1.1e-9 to 1.1e-8 of the magnitudes off on these draws, staged at most 2.1e-10.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { appendGradients } from '../../src/graph/autodiff/autodiff.ts';
import { probeShapes } from '../../src/graph/autodiff/shapes.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { mulberry32 } from '../../src/util/random.ts';

const DIMS = [2, 16, 160, 160];

describe('gradient of a broadcast scalar over 819,200 elements', () => {
  it('is within 5e-10 of the sum of magnitudes from the exact sum, for 4 draws', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const rand = mulberry32(seed);
      const r = Float32Array.from({ length: DIMS.reduce((p, q) => p * q, 1) }, () => rand() * 2 - 1);
      const b = new GraphBuilder('broadcast_sum');
      const x = b.input('x', 'float32', DIMS);
      const weights = b.input('r', 'float32', DIMS);
      b.graph.initializers.set('bias', { dtype: 'float32', dims: [1], data: Float32Array.of(0.5) });
      const loss = b.op('ReduceSum', [b.op('Mul', [b.op('Add', [x, 'bias']), weights])], { keepdims: { i: 0 } });
      const feeds: Record<string, HostTensor> = { x: { dtype: 'float32', dims: DIMS, data: new Float32Array(r.length) }, r: { dtype: 'float32', dims: DIMS, data: r } };
      const shapes = await probeShapes(b.graph.clone(), feeds);
      const grad = appendGradients(b.graph, { loss, wrt: ['bias'], shapes }).get('bias')!;
      b.output('grad', grad, 'float32', [1]);
      const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
      const out = await session.run(Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, new ort.Tensor('float32', t.data as Float32Array, t.dims)])));
      await session.release();
      let exact = 0;
      let magnitude = 0;
      for (const v of r) {
        exact += v;
        magnitude += Math.abs(v);
      }
      const err = Math.abs((out.grad!.data as Float32Array)[0]! - exact);
      assert.ok(err <= 5e-10 * magnitude, `seed ${seed}: |error| ${err.toExponential(2)} = ${(err / magnitude).toExponential(2)} of the magnitudes (sum ${exact.toFixed(3)})`);
    }
  });
});
