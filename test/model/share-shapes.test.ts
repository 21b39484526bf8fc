/**
 * shareShapes (graph/passes/share-shapes.ts): graphs built at two input sizes merge into one whose
 * size-dependent constants are inputs; fed each size's constants, one ORT session gives what the
 * graph built for that size gives. Builds that are not one graph at two sizes are refused, naming
 * the difference.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { GraphBuilder, i } from '../../src/graph/builder.ts';
import { float32, reshape } from '../../src/graph/nn.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { shareShapes } from '../../src/graph/passes/share-shapes.ts';
import type { Graph } from '../../src/graph/ir.ts';

/** x [1, 2, h, w] flattened, plus a position table of h*w entries, then Softmax over the tokens and a 2x2 pool. */
function build(h: number, w: number, extraNode = false): Graph {
  const b = new GraphBuilder('t');
  const x = b.input('x', 'float32', [1, 2, h, w]);
  const pos = b.constant('pos', float32(Array.from({ length: h * w }, (_, k) => Math.sin(k / (h * w))), [1, 1, h * w]));
  const tokens = b.op('Softmax', [b.op('Add', [reshape(b, x, [1, 2, h * w]), pos])], { axis: i(-1) });
  const back = reshape(b, tokens, [1, 2, h, w]);
  const pooled = b.op('AveragePool', [back], { kernel_shape: { ints: [2, 2] }, strides: { ints: [2, 2] } });
  const y = b.op('ReduceSum', [extraNode ? b.op('Relu', [pooled]) : pooled], { keepdims: i(0) });
  b.output('y', y, 'float32', []);
  b.output('pooled', pooled, 'float32', [1, 2, h / 2, w / 2]);
  return b.graph;
}

const feedX = (h: number, w: number): ort.Tensor => new ort.Tensor('float32', Float32Array.from({ length: 2 * h * w }, (_, k) => Math.cos(k * 0.37)), [1, 2, h, w]);

describe('shareShapes', () => {
  it('one session for 4x6 and 8x2 gives each static graph\'s outputs', async () => {
    const sizes: Array<[number, number]> = [[4, 6], [8, 2]];
    const graphs = sizes.map(([h, w]) => build(h, w));
    const shared = shareShapes(graphs);
    // pos and the two reshape targets vary; nothing else does.
    assert.equal(shared.lifted.length, 3);
    assert.ok(shared.graph.inputs.find((v) => v.name === 'x')!.unshaped);
    const session = await ort.InferenceSession.create(serializeModel(shared.graph), { intraOpNumThreads: 1 });
    for (const [k, [h, w]] of sizes.entries()) {
      const alone = await ort.InferenceSession.create(serializeModel(graphs[k]!), { intraOpNumThreads: 1 });
      const feeds: Record<string, ort.Tensor> = { x: feedX(h, w) };
      for (const [name, t] of Object.entries(shared.feeds[k]!)) feeds[name] = new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
      const got = await session.run(feeds);
      const want = await alone.run({ x: feedX(h, w) });
      assert.deepEqual(got.pooled!.dims, [1, 2, h / 2, w / 2]);
      assert.deepEqual(Array.from(got.pooled!.data as Float32Array), Array.from(want.pooled!.data as Float32Array));
      assert.equal((got.y!.data as Float32Array)[0], (want.y!.data as Float32Array)[0]);
      await alone.release();
    }
    await session.release();
  });

  it('refuses builds whose nodes or attributes differ', () => {
    assert.throws(() => shareShapes([build(4, 6), build(8, 2, true)]), /nodes at one shape/);
    const other = build(8, 2);
    other.nodes.find((n) => n.op === 'AveragePool')!.attrs.kernel_shape = { ints: [1, 1] };
    assert.throws(() => shareShapes([build(4, 6), other]), /attribute kernel_shape differs between shapes/);
  });
});
