/**
 * The Conv -> Relu -> scalar affine fold (D-FINE's LearnableAffineBlock): on small real graphs run
 * by ONNX Runtime, a positive scale and any bias fold into the Conv and a Clip (same outputs, the
 * Mul and Add gone), a negative scale is left as it is, an Add-only block folds too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { conv2d } from '../../src/graph/nn.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { Graph } from '../../src/graph/ir.ts';
import { foldReluAffine } from '../../src/graph/passes/fold-relu-affine.ts';
import { mulberry32 } from '../../src/util/random.ts';

function block(scale: number | null, bias: number | null): Graph {
  const rnd = mulberry32(7);
  const b = new GraphBuilder('lab');
  const x = b.input('x', 'float32', [1, 3, 9, 9]);
  const w = b.param('conv.weight', { dtype: 'float32', dims: [4, 3, 3, 3], data: Float32Array.from({ length: 108 }, () => rnd() - 0.5) });
  const c = b.param('conv.bias', { dtype: 'float32', dims: [4], data: Float32Array.from({ length: 4 }, () => rnd() - 0.5) });
  let y = b.op('Relu', [conv2d(b, x, w, c, { kernel: 3 })]);
  if (scale !== null) y = b.op('Mul', [y, b.param('lab.scale', { dtype: 'float32', dims: [1], data: Float32Array.of(scale) })]);
  if (bias !== null) y = b.op('Add', [y, b.param('lab.bias', { dtype: 'float32', dims: [1], data: Float32Array.of(bias) })]);
  // A padded 3x3 conv after it: zero padding of the affine output must be kept as it is.
  const w2 = b.param('next.weight', { dtype: 'float32', dims: [2, 4, 3, 3], data: Float32Array.from({ length: 72 }, () => rnd() - 0.5) });
  b.output('y', conv2d(b, y, w2, null, { kernel: 3 }), 'float32', [1, 2, 9, 9]);
  return b.graph;
}

async function run(g: Graph, x: Float32Array): Promise<Float32Array> {
  const s = await ort.InferenceSession.create(serializeModel(g, { opset: 17 }), { intraOpNumThreads: 1 });
  const out = await s.run({ x: new ort.Tensor('float32', x, [1, 3, 9, 9]) });
  await s.release();
  return out.y!.data as Float32Array;
}

const ops = (g: Graph): string[] => g.nodes.filter((n) => n.op !== 'Identity').map((n) => n.op);

describe('foldReluAffine', () => {
  const rnd = mulberry32(3);
  const x = Float32Array.from({ length: 243 }, () => rnd() * 2 - 1);
  const cases: Array<{ name: string; scale: number | null; bias: number | null; folds: boolean; after: string[] }> = [
    { name: 'scale 1.3 and bias -0.2', scale: 1.3, bias: -0.2, folds: true, after: ['Conv', 'Clip', 'Conv'] },
    { name: 'scale 0.7 only', scale: 0.7, bias: null, folds: true, after: ['Conv', 'Relu', 'Conv'] },
    { name: 'bias 0.4 only', scale: null, bias: 0.4, folds: true, after: ['Conv', 'Clip', 'Conv'] },
    { name: 'negative scale -0.5 (not foldable)', scale: -0.5, bias: 0.1, folds: false, after: ['Conv', 'Relu', 'Mul', 'Add', 'Conv'] },
  ];
  for (const c of cases) {
    it(`${c.name}: ${c.folds ? 'folds' : 'is left alone'}, same outputs`, async () => {
      const plain = block(c.scale, c.bias);
      const want = await run(plain, x);
      const g = block(c.scale, c.bias);
      assert.equal(foldReluAffine(g), c.folds ? 1 : 0);
      assert.deepEqual(ops(g), c.after, `ops after the pass: ${ops(g).join(", ")} (before: ${ops(plain).join(", ")})`);
      const got = await run(g, x);
      let m = 0;
      for (let k = 0; k < want.length; k++) m = Math.max(m, Math.abs(got[k]! - want[k]!));
      assert.ok(m <= 1e-6, `max difference ${m}`);
    });
  }
});
