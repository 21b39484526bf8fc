/**
 * Where D-FINE-n's (or, with --variant deim, DEIM-n's) float32 gradients leave float64 on the
 * original's train step (dfinen_ref_train / deimn_ref_train; docs/training-numerics.md, "Why lab.bias"): runs the float32 step on ONNX
 * Runtime as stored, with the image moved by one ulp up and down, and with the loss scaled by 3
 * (only the backward's rounding changes); then the float64 forward's ReLU signs, how many of the
 * 35M ReLU inputs float32 puts on the other side of 0, and the float32 step with those ReLUs'
 * backward masks taken from float64. Prints the relative L2 distance from the float64 step of
 * the original's gradients and of each of ours.
 *
 *   node --import tsx bench/dfine-grad-kinks.ts [--variant dfine|deim] [--f64-dir DIR]
 *
 * The float64 step (interpreter) takes 9-18 minutes and the float64 forward 3-4; with --f64-dir
 * they are saved there and read back on the next run. Also prints each loss key's distance from
 * the float64 forward, and the scalar gradients (lab.scale, lab.bias) of every run.
 */
import { parseArgs } from 'node:util';
import { ruleFor, registerRule } from '../src/graph/autodiff/rules.ts';
import { gOnly } from '../src/graph/autodiff/context.ts';
import { interpret } from '../src/graph/interpret/interpreter.ts';
import type { HostTensor } from '../src/graph/tensor.ts';
import { relL2 } from '../test/helpers/compare.ts';
import { cachedArrays, type Arrays } from './f64-cache.ts';
import { dfineTrainGraph, runOnOrt, type DfineTrainGraphOptions } from '../test/helpers/dfine-train-graph.ts';

const { values: args } = parseArgs({ options: { 'f64-dir': { type: 'string' }, variant: { type: 'string', default: 'dfine' } } });
const cacheDir = args['f64-dir'];
if (args.variant !== 'dfine' && args.variant !== 'deim') throw new Error(`--variant dfine|deim, got ${args.variant}`);
const variant = args.variant;
const LAB_BIAS = 'grad.backbone.stages.0.blocks.0.layers.0.lab.bias';
const t0 = Date.now();
const log = (m: string): void => console.log(`[${((Date.now() - t0) / 1000).toFixed(0)} s] ${m}`);

const cached = (name: string, compute: () => Arrays): Arrays => cachedArrays(cacheDir, name, compute);

function oneUlp(step: 1 | -1): (pixels: Float32Array) => void {
  return (pixels) => {
    const bits = new Uint32Array(pixels.buffer, pixels.byteOffset, pixels.length);
    for (let k = 0; k < bits.length; k++) if (pixels[k]! > 0) bits[k]! += step;
  };
}

async function float32Step(opts: DfineTrainGraphOptions & { masks?: Record<string, HostTensor> } = {}): Promise<Arrays> {
  const original = ruleFor('Relu')!;
  const masks = opts.masks;
  const fed: Record<string, HostTensor> = {};
  if (masks) {
    registerRule('Relu', (ctx) => {
      const m = masks[ctx.node.name];
      if (!m) return original(ctx);
      const name = `relu_mask.${ctx.node.name}`;
      fed[ctx.b.input(name, 'bool', m.dims)] = m;
      return [ctx.b.op('Where', [name, gOnly(ctx), ctx.b.scalar(0, 'zero')])];
    });
  }
  try {
    const g = await dfineTrainGraph({ variant, ...opts });
    Object.assign(g.feeds, fed);
    const out = await runOnOrt(g);
    const scale = opts.lossScale ?? 1;
    return Object.fromEntries(Object.entries(out).filter(([k]) => k.startsWith('grad.')).map(([k, t]) => [k, Float64Array.from(t.data as Float32Array, (v) => v / scale)]));
  } finally {
    registerRule('Relu', original);
  }
}

// Float32 steps.
const base = await dfineTrainGraph({ variant });
const stored = base.train;
const runs: Record<string, Arrays> = {};
runs['ours'] = await float32Step();
log('float32 step');
runs['image +1 ulp'] = await float32Step({ tweakImage: oneUlp(1) });
runs['image -1 ulp'] = await float32Step({ tweakImage: oneUlp(-1) });
runs['loss x3'] = await float32Step({ lossScale: 3 });
log('perturbed float32 steps');

// ReLU signs: float64 forward vs the float32 forward.
const fwd = await dfineTrainGraph({ variant, forwardOnly: true });
const reluIn = fwd.graph.outputs.map((o) => o.name).filter((n) => n.startsWith('relu_in.'));
const lossKeys = fwd.graph.outputs.map((o) => o.name).filter((n) => n.startsWith('loss.'));
const signs64 = cached('relu-signs', () => {
  const out = interpret(fwd.graph, fwd.feeds, [...reluIn, ...lossKeys]);
  return Object.fromEntries([...reluIn.map((k) => [k, out[k]!.data.map((v) => (v > 0 ? 1 : 0))]), ...lossKeys.map((k) => [k, out[k]!.data])]);
});
log('float64 forward');
const f32fwd = await runOnOrt(fwd);
const masks: Record<string, HostTensor> = {};
let flips = 0;
let total = 0;
const where: string[] = [];
for (const k of reluIn) {
  const a = f32fwd[k]!.data as Float32Array;
  const s = signs64[k]!;
  let n = 0;
  for (let i = 0; i < a.length; i++) if ((a[i]! > 0 ? 1 : 0) !== s[i]) n++;
  total += a.length;
  if (!n) continue;
  flips += n;
  where.push(`${k.replace('relu_in./', '').replace(/\/Relu(_\d+)?$/, '')} ${n}`);
  masks[k.replace('relu_in.', '')] = { dtype: 'bool', dims: [...f32fwd[k]!.dims], data: Uint8Array.from(s) };
}
log(`${flips} of ${total} ReLU inputs change side between float64 and float32 (${Object.keys(masks).length} ReLUs): ${where.join(', ')}`);
runs['ours, float64 ReLU masks'] = await float32Step({ masks });
log('float32 step with the float64 masks');

// The float64 step.
const exact = cached('f64-step', () => {
  const out = interpret(base.graph, base.feeds, base.wrt.map((k) => `grad.${k}`));
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data]));
});
log('float64 step');

const names = [...stored.keys()].filter((k) => k.startsWith('grad.') && k !== 'grad_global_l2');
console.log(`\nrelative L2 from the float64 step (the +-1 ulp runs against the unmoved image's float64)\n`);
console.log(['gradient', 'reference', ...Object.keys(runs)].join(' | '));
for (const k of names) {
  const ref = relL2(stored.get(k)!.data as Float32Array, exact[k]!);
  console.log([k.replace('grad.', ''), ref.toExponential(2), ...Object.values(runs).map((r) => relL2(r[k]!, exact[k]!).toExponential(2))].join(' | '));
}
const f32Loss = (k: string): number => (f32fwd[k]!.data as Float32Array)[0]!;
console.log(`\nloss keys, relative distance from the float64 forward: reference | ours`);
for (const k of lossKeys) {
  const e = signs64[k]![0]!;
  const rel = (v: number): string => (e === 0 ? Math.abs(v).toExponential(2) : (Math.abs(v - e) / Math.abs(e)).toExponential(2));
  console.log(`${k} | ${rel((stored.get(k)!.data as Float32Array)[0]!)} | ${rel(f32Loss(k))}`);
}
for (const k of names.filter((n) => stored.get(n)!.data.length === 1)) {
  console.log(`${k.replace('grad.', '')}: float64 ${exact[k]![0]!.toFixed(6)}, reference ${(stored.get(k)!.data as Float32Array)[0]!.toFixed(6)}, ${Object.entries(runs).map(([n, r]) => `${n} ${r[k]![0]!.toFixed(6)}`).join(', ')}`);
}
console.log(`\nlab.bias: float64 ${exact[LAB_BIAS]![0]!.toFixed(6)}, reference ${(stored.get(LAB_BIAS)!.data as Float32Array)[0]!.toFixed(6)}, ${Object.entries(runs).map(([k, r]) => `${k} ${r[LAB_BIAS]![0]!.toFixed(6)}`).join(', ')}`);
