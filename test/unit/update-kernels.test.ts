/**
 * The SIMD parameter updates (train/update-kernels.ts) against per-element loops written from
 * torch's single-tensor rules with every op rounded by Math.fround: bit for bit, over lengths that
 * are not a multiple of the four lanes and span several of the kernels' chunks, on values that
 * include zeros, signed zeros, subnormals, large magnitudes and NaN.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { accumulateGradient, adamUpdate, emaUpdate, sgdUpdate } from '../../src/train/update-kernels.ts';
import { mulberry32 } from '../../src/util/random.ts';

const f = Math.fround;
const N = 40_003;

function values(seed: number): Float32Array {
  const rand = mulberry32(seed);
  const out = new Float32Array(N);
  const specials = [0, -0, 1e-42, -3e-45, 1e30, -7e25, Number.NaN, 1, -1];
  for (let i = 0; i < N; i++) out[i] = i % 97 < specials.length ? specials[i % 97]! : (rand() - 0.5) * 10 ** Math.floor(rand() * 8 - 4);
  return out;
}

/** Indices where `a` and `b` hold different float32 bits (NaN against NaN counts as equal). */
function firstDifference(a: Float32Array, b: Float32Array): number {
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i]) && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return i;
  return -1;
}

describe('SIMD parameter updates', () => {
  for (const nesterov of [true, false]) {
    for (const wd of [0, 5e-4]) {
      for (const momentum of [0.937, 0]) {
        it(`SGD (momentum ${momentum}, weight decay ${wd}, nesterov ${nesterov}) over two steps`, () => {
          const p = values(1), g = values(2), g2 = values(3);
          const want = p.slice();
          const wantBuf = new Float32Array(N);
          const lr = f(-0.01), wdF = f(wd), mom = f(momentum);
          for (const [step, grad] of [g, g2].entries()) {
            for (let i = 0; i < N; i++) {
              const x = want[i]!;
              const d = wd ? f(grad[i]! + f(wdF * x)) : grad[i]!;
              if (momentum === 0) {
                want[i] = f(x + f(lr * d));
                continue;
              }
              const b = step === 0 ? d : f(f(wantBuf[i]! * mom) + d);
              wantBuf[i] = b;
              want[i] = f(x + f(lr * (nesterov ? f(d + f(mom * b)) : b)));
            }
          }
          const buf = new Float32Array(N);
          sgdUpdate(p, g, momentum ? buf : null, { weightDecay: wd, momentum, lr: 0.01, nesterov, first: true });
          sgdUpdate(p, g2, momentum ? buf : null, { weightDecay: wd, momentum, lr: 0.01, nesterov, first: false });
          assert.equal(firstDifference(p, want), -1);
          if (momentum) assert.equal(firstDifference(buf, wantBuf), -1);
        });
      }
    }
  }

  for (const weight of ['decoupled', 'l2', 'none'] as const) {
    it(`Adam (${weight} weight decay) over two steps`, () => {
      const p = values(4), g = values(5), g2 = values(6);
      const want = p.slice(), wantM = new Float32Array(N), wantV = new Float32Array(N);
      const m = new Float32Array(N), v = new Float32Array(N);
      const lr = 1e-3, wd = 0.01;
      for (const [k, grad] of [g, g2].entries()) {
        const step = k + 1;
        const bc1 = 1 - 0.9 ** step, bc2 = f(Math.sqrt(1 - 0.999 ** step));
        const decay = weight === 'decoupled' ? f(1 - lr * wd) : 1;
        const stepSize = f(-(lr / bc1));
        for (let i = 0; i < N; i++) {
          const x = weight === 'decoupled' ? f(want[i]! * decay) : want[i]!;
          const gr = weight === 'l2' ? f(grad[i]! + f(f(wd) * want[i]!)) : grad[i]!;
          const mi = f(wantM[i]! + f(f(0.1) * f(gr - wantM[i]!)));
          const vi = f(f(wantV[i]! * f(0.999)) + f(f(1 - 0.999) * f(gr * gr)));
          wantM[i] = mi;
          wantV[i] = vi;
          const denom = f(f(f(Math.sqrt(vi)) / bc2) + f(1e-8));
          want[i] = f(x + f(stepSize * f(mi / denom)));
        }
        adamUpdate(weight, p, grad, m, v, [1 - lr * wd, wd, 1 - 0.9, 0.999, 1 - 0.999, Math.sqrt(1 - 0.999 ** step), 1e-8, -(lr / bc1)]);
      }
      assert.equal(firstDifference(p, want), -1);
      assert.equal(firstDifference(m, wantM), -1);
      assert.equal(firstDifference(v, wantV), -1);
    });
  }

  it('EMA: ema * d + (1 - d) * model', () => {
    const e = values(7), model = values(8);
    const d = f(0.993 * (1 - Math.exp(-3 / 100))), oneMinus = f(1 - 0.993 * (1 - Math.exp(-3 / 100)));
    const want = e.map((a, i) => f(f(a * d) + f(oneMinus * model[i]!)));
    emaUpdate(e, model, d, oneMinus);
    assert.equal(firstDifference(e, want), -1);
  });

  it('gradient accumulation: g / n, then + g / n', () => {
    const g1 = values(9), g2 = values(10);
    const want = g1.map((x, i) => f(f(x / 3) + f(g2[i]! / 3)));
    const acc = values(11);
    accumulateGradient(acc, g1, 3, true);
    accumulateGradient(acc, g2, 3, false);
    assert.equal(firstDifference(acc, want), -1);
  });
});
