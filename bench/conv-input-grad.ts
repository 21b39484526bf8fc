/**
 * The input gradient of a stride-1 convolution on ORT CPU in two forms: ConvTranspose of the output
 * gradient with the weights (what the Conv rule emits), against a Conv of the output gradient with
 * the weights transposed on their channel axes and flipped in space (pads k - 1 - p), both with the
 * weights as a graph input as in a train graph, at level 'all'. Interleaved; prints both medians, the ratio conv /
 * convtranspose and the largest difference relative to the output's largest magnitude.
 *
 *   node --import tsx bench/conv-input-grad.ts
 *
 * In the yolo9 train graph the Conv form made the step slower (docs/training-performance.md), so
 * the rule keeps ConvTranspose.
 */
import * as ort from 'onnxruntime-node';
import { GraphBuilder, i, ints } from '../src/graph/builder.ts';
import { int64 } from '../src/graph/nn.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { transpose } from '../src/graph/autodiff/emit.ts';
import { mulberry32 } from '../src/util/random.ts';
import { median } from './common.ts';

const cases = [
  { n: 8, ci: 32, co: 32, h: 80, k: 3 },
  { n: 8, ci: 64, co: 64, h: 40, k: 3 },
  { n: 8, ci: 128, co: 128, h: 20, k: 3 },
  { n: 1, ci: 64, co: 64, h: 160, k: 3 },
  { n: 1, ci: 128, co: 128, h: 80, k: 3 },
  { n: 2, ci: 256, co: 256, h: 40, k: 3 },
];

function build(c: typeof cases[0], form: 'transpose' | 'conv'): Uint8Array {
  const b = new GraphBuilder();
  const g = b.input('g', 'float32', [c.n, c.co, c.h, c.h]);
  const w = b.input('w', 'float32', [c.co, c.ci, c.k, c.k]);
  const p = (c.k - 1) / 2;
  let out: string;
  if (form === 'transpose') out = b.op('ConvTranspose', [g, w], { kernel_shape: ints([c.k, c.k]), strides: ints([1, 1]), pads: ints([p, p, p, p]), group: i(1) });
  else {
    const flipped = b.op('Slice', [transpose(b, w, [1, 0, 2, 3]), b.constant('st', int64([-1, -1])), b.constant('en', int64([-(2 ** 62), -(2 ** 62)])), b.constant('ax', int64([2, 3])), b.constant('sp', int64([-1, -1]))]);
    out = b.op('Conv', [g, flipped], { kernel_shape: ints([c.k, c.k]), strides: ints([1, 1]), pads: ints([c.k - 1 - p, c.k - 1 - p, c.k - 1 - p, c.k - 1 - p]), group: i(1) });
  }
  b.output('dx', out, 'float32', [c.n, c.ci, c.h, c.h]);
  return serializeModel(b.graph);
}

const rand = mulberry32(1);
for (const c of cases) {
  const opts: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 2, graphOptimizationLevel: 'all' };
  const [st, sc] = [await ort.InferenceSession.create(build(c, 'transpose'), opts), await ort.InferenceSession.create(build(c, 'conv'), opts)];
  const feeds = {
    g: new ort.Tensor('float32', Float32Array.from({ length: c.n * c.co * c.h * c.h }, () => rand() - 0.5), [c.n, c.co, c.h, c.h]),
    w: new ort.Tensor('float32', Float32Array.from({ length: c.co * c.ci * c.k * c.k }, () => rand() - 0.5), [c.co, c.ci, c.k, c.k]),
  };
  const tt: number[] = [], tc: number[] = [];
  let a: Float32Array | null = null, d: Float32Array | null = null;
  for (let r = 0; r < 9; r++) {
    let t0 = performance.now();
    a = (await st.run(feeds)).dx!.data as Float32Array;
    tt.push(performance.now() - t0);
    t0 = performance.now();
    d = (await sc.run(feeds)).dx!.data as Float32Array;
    tc.push(performance.now() - t0);
  }
  let maxAbs = 0, maxDiff = 0;
  for (let k = 0; k < a!.length; k++) { maxAbs = Math.max(maxAbs, Math.abs(a![k]!)); maxDiff = Math.max(maxDiff, Math.abs(a![k]! - d![k]!)); }
  const [mt, mc] = [median(tt.slice(1)), median(tc.slice(1))];
  console.log(`n${c.n} ${c.co}->${c.ci} ${c.h}x${c.h} k${c.k}: ConvTranspose ${mt.toFixed(1)} ms, Conv ${mc.toFixed(1)} ms, ratio ${(mc / mt).toFixed(3)}, max diff ${(maxDiff / maxAbs).toExponential(1)} of max`);
  await st.release();
  await sc.release();
}
