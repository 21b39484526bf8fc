/**
 * The host-side update of a training step (train/update-kernels.ts: SIMD kernels) over a real
 * network's parameters, against the anchor of the same rule as a per-element Math.fround loop (how
 * the optimizer ran before), interleaved in this process: yolo9c's SGD (Nesterov, weight decay) and
 * RF-DETR n's AdamW plus its EMA. Prints each median and the ratio kernel / loop.
 *
 *   node --import tsx bench/host-update.ts [--rounds 7]
 */
import { parseArgs } from 'node:util';
import '../src/models/index.ts';
import { getFamily } from '../src/models/registry.ts';
import { ModelEMA } from '../src/train/ema.ts';
import { Optimizer } from '../src/train/optimizer.ts';
import { median } from './common.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } });
const f = Math.fround;

/** The anchor: Nesterov SGD with decay, one loop per tensor. */
function sgdLoop(params: Float32Array[], grads: Float32Array[], bufs: Float32Array[]): void {
  const [wd, mom, lr] = [f(5e-4), f(0.937), f(-0.01)];
  params.forEach((p, t) => {
    const g = grads[t]!, buf = bufs[t]!;
    for (let i = 0; i < p.length; i++) {
      const x = p[i]!;
      const d = f(g[i]! + f(wd * x));
      const b = f(f(buf[i]! * mom) + d);
      buf[i] = b;
      p[i] = f(x + f(lr * f(d + f(mom * b))));
    }
  });
}

/** The anchor: AdamW's step (decoupled decay) and the EMA, one loop per tensor. */
function adamwEmaLoop(params: Float32Array[], grads: Float32Array[], m: Float32Array[], v: Float32Array[], ema: Float32Array[]): void {
  const [decay, w1, b2, w2, bc2, eps, step, d, oneMinus] = [1 - 1e-8, 0.1, 0.999, 0.001, 0.03, 1e-8, -1e-3, 0.9, 0.1].map(f) as number[];
  params.forEach((p, t) => {
    const g = grads[t]!, mt = m[t]!, vt = v[t]!, e = ema[t]!;
    for (let i = 0; i < p.length; i++) {
      const x = f(p[i]! * decay!);
      const gr = g[i]!;
      const mi = f(mt[i]! + f(w1! * f(gr - mt[i]!)));
      const vi = f(f(vt[i]! * b2!) + f(w2! * f(gr * gr)));
      mt[i] = mi;
      vt[i] = vi;
      p[i] = f(x + f(step! * f(mi / f(f(f(Math.sqrt(vi)) / bc2!) + eps!))));
    }
    for (let i = 0; i < p.length; i++) e[i] = f(f(e[i]! * d!) + f(oneMinus! * p[i]!));
  });
}

function timed(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

const rounds = Number(values.rounds);
for (const { family, size, optimizer } of [{ family: 'yolo9', size: 'c', optimizer: 'sgd' }, { family: 'rfdetr', size: 'n', optimizer: 'adamw' }] as const) {
  const network = getFamily(family).create({ size, nc: 80 });
  const named = [...network.namedTensors()].filter(([, p]) => p.kind === 'parameter' && p.requiresGrad && p.value.dtype === 'float32');
  const params = named.map(([, p]) => p.value.data as Float32Array);
  const grads = new Map(named.map(([k, p]) => [k, (p.value.data as Float32Array).map((x, i) => (x + i % 7) * 1e-3)]));
  const gradList = [...grads.values()];
  const zeros = () => params.map((p) => new Float32Array(p.length));
  const [bufs, m, v, emaCopies] = [zeros(), zeros(), zeros(), params.map((p) => p.slice())];
  const opt = Optimizer.create(named, { optimizer, lr0: optimizer === 'sgd' ? 0.01 : 1e-4, weightDecay: 5e-4 });
  const ema = optimizer === 'adamw' ? new ModelEMA(named, 0.993, 100) : null;
  const kernel: number[] = [], loop: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const k = () => { opt.step(grads); ema?.update(named); };
    const l = () => (optimizer === 'sgd' ? sgdLoop(params, gradList, bufs) : adamwEmaLoop(params, gradList, m, v, emaCopies));
    if (r % 2) { loop.push(timed(l)); kernel.push(timed(k)); } else { kernel.push(timed(k)); loop.push(timed(l)); }
  }
  const n = params.reduce((s, p) => s + p.length, 0);
  const [km, lm] = [median(kernel.slice(1)), median(loop.slice(1))];
  console.log(`${family}-${size} ${optimizer}${ema ? ' + EMA' : ''}, ${(n / 1e6).toFixed(1)}M parameters: kernels ${km.toFixed(1)} ms, per-element loop ${lm.toFixed(1)} ms, ratio ${(km / lm).toFixed(3)}`);
}
