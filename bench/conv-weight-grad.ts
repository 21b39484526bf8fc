import * as ort from 'onnxruntime-node';
import { GraphBuilder, i, ints, s } from '../src/graph/builder.ts';
import { int64 } from '../src/graph/nn.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { reduceSum, reshapeTo, transpose } from '../src/graph/autodiff/emit.ts';
/**
 * Weight-gradient formulations for 3x3 convolutions on ORT CPU: correlation as a convolution vs an
 * explicit im2col GEMM. Runs are interleaved; prints each time and the ratio col/corr.
 *   node --import tsx bench/conv-weight-grad.ts
 */
const cases = [
  { n: 8, ci: 3, h: 320, co: 16, k: 3, s: 2 },
  { n: 8, ci: 16, h: 160, co: 32, k: 3, s: 2 },
  { n: 8, ci: 16, h: 80, co: 16, k: 3, s: 1 },
  { n: 8, ci: 32, h: 80, co: 32, k: 3, s: 1 },
  { n: 8, ci: 48, h: 40, co: 48, k: 3, s: 1 },
  { n: 8, ci: 64, h: 40, co: 64, k: 3, s: 1 },
];
function build(c: typeof cases[0], mode: 'corr' | 'col') {
  const b = new GraphBuilder();
  const oh = Math.floor((c.h + 2 - c.k) / c.s) + 1;
  const x = b.input('x', 'float32', [c.n, c.ci, c.h, c.h]);
  const g = b.input('g', 'float32', [c.n, c.co, oh, oh]);
  let out: string;
  if (mode === 'corr') {
    const corr = b.op('Conv', [transpose(b, x, [1, 0, 2, 3]), transpose(b, g, [1, 0, 2, 3])], { kernel_shape: ints([oh, oh]), dilations: ints([c.s, c.s]), pads: ints([1, 1, 1, 1]), strides: ints([1, 1]) });
    out = transpose(b, corr, [1, 0, 2, 3]);
    const k2 = c.h + 2 - (oh - 1) * c.s;
    if (k2 !== c.k) out = b.op('Slice', [out, b.constant('s', int64([0, 0])), b.constant('e', int64([c.k, c.k])), b.constant('a', int64([2, 3]))]);
  } else {
    const padded = b.op('Pad', [x, b.constant('pads', int64([0, 0, 1, 1, 0, 0, 1, 1]))], { mode: s('constant') });
    const shifts: string[] = [];
    for (let dy = 0; dy < c.k; dy++) for (let dx = 0; dx < c.k; dx++) shifts.push(b.op('Slice', [padded, b.constant('st', int64([dy, dx])), b.constant('en', int64([dy + (oh - 1) * c.s + 1, dx + (oh - 1) * c.s + 1])), b.constant('ax', int64([2, 3])), b.constant('sp', int64([c.s, c.s]))]));
    const cols = reshapeTo(b, b.op('Concat', shifts, { axis: i(1) }), [c.n, 9 * c.ci, oh * oh]);
    const g3 = reshapeTo(b, g, [c.n, c.co, oh * oh]);
    const summed = reduceSum(b, b.op('MatMul', [g3, transpose(b, cols, [0, 2, 1])]), [0], false);
    out = reshapeTo(b, transpose(b, reshapeTo(b, summed, [c.co, 9, c.ci]), [0, 2, 1]), [c.co, c.ci, 3, 3]);
  }
  b.output('dw', out, 'float32', [c.co, c.ci, 3, 3]);
  return { bytes: serializeModel(b.graph), oh };
}
for (const c of cases) {
  const res: Record<string, number[]> = { corr: [], col: [] };
  const sess: Record<string, ort.InferenceSession> = {};
  let oh = 0;
  for (const m of ['corr', 'col'] as const) { const { bytes, oh: o } = build(c, m); oh = o; sess[m] = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 2, graphOptimizationLevel: 'all' }); }
  const feeds = { x: new ort.Tensor('float32', Float32Array.from({ length: c.n * c.ci * c.h * c.h }, () => Math.random()), [c.n, c.ci, c.h, c.h]), g: new ort.Tensor('float32', Float32Array.from({ length: c.n * c.co * oh * oh }, () => Math.random()), [c.n, c.co, oh, oh]) };
  const a = (await sess.corr!.run(feeds)).dw!.data as Float32Array; const bb = (await sess.col!.run(feeds)).dw!.data as Float32Array;
  let mx = 0; for (let k = 0; k < a.length; k++) mx = Math.max(mx, Math.abs(a[k]! - bb[k]!) / (Math.abs(a[k]!) + 1));
  for (let r = 0; r < 6; r++) for (const m of (r % 2 ? ['corr', 'col'] : ['col', 'corr']) as Array<'corr' | 'col'>) { const t0 = performance.now(); await sess[m]!.run(feeds); res[m]!.push(performance.now() - t0); }
  const med = (v: number[]) => v.sort((p, q) => p - q)[3]!;
  console.log(JSON.stringify(c), 'corr', med(res.corr!).toFixed(1), 'col', med(res.col!).toFixed(1), 'ratio col/corr', (med(res.col!) / med(res.corr!)).toFixed(2), 'maxdiff', mx.toExponential(1));
}
