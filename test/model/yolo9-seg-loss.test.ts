/**
 * YOLOv9-seg's mask loss graph (models/yolo9/seg-loss.ts) against a direct per-anchor, per-pixel
 * loop written here from segmentation.md 2.6: BCE with logits of coefficients x prototypes against
 * the matched mask, zeroed outside the matched box at prototype resolution (x1 <= j < x2), mean over
 * all prototype pixels, divided by the normalised box area (>= 1e-6), mean over the image's
 * positives, summed over images, x 2.5 / batch. More anchors than the graph's candidate count, and an
 * image without positives, are part of the case.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { interpret } from '../../src/graph/interpret/interpreter.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { emitYolo9MaskLoss } from '../../src/models/yolo9/seg-loss.ts';
import { mulberry32 } from '../../src/util/random.ts';

const B = 3, M = 3, A = 40, NM = 4, H = 32, W = 48, HM = H / 4, WM = W / 4;
const rand = mulberry32(17);
const t = (dims: number[], f: (k: number) => number): HostTensor => ({ dtype: 'float32', dims, data: Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, (_, k) => f(k)) });

function makeCase(): Record<string, HostTensor> {
  const gtBox = t([B, M, 4], () => 0);
  const g = gtBox.data as Float32Array;
  for (let k = 0; k < B * M; k++) {
    const x1 = rand() * W * 0.6, y1 = rand() * H * 0.6;
    g.set([x1, y1, x1 + 3 + rand() * (W - x1 - 3), y1 + 3 + rand() * (H - y1 - 3)], k * 4);
  }
  g.set([10.5, 6.2, 10.9, 6.6], (0 * M + 2) * 4); // smaller than one prototype pixel
  g.set([8, 4, 24, 20], (1 * M + 0) * 4); // edges on prototype pixels: j = x2 / 4 is outside
  const assignment = t([B, M, A], () => 0), fg = t([B, 1, A], () => 0), targetBox = t([B, A, 4], () => 0);
  const as = assignment.data as Float32Array, fs = fg.data as Float32Array, tb = targetBox.data as Float32Array;
  for (let b = 0; b < 2; b++) { // image 2 has no positives
    const free = Array.from({ length: A }, (_, a) => a).sort(() => rand() - 0.5);
    for (let m = 0; m < M; m++) {
      const n = 1 + Math.floor(rand() * 10);
      for (const a of free.splice(0, n)) {
        as[(b * M + m) * A + a] = 1; fs[b * A + a] = 1;
        tb.set(g.subarray((b * M + m) * 4, (b * M + m) * 4 + 4), (b * A + a) * 4);
      }
    }
  }
  return {
    assignment, fg, targetBox, gtBox,
    gtMasks: t([B, M, HM, WM], () => (rand() < 0.4 ? 1 : 0)),
    proto: t([B, NM, HM, WM], () => rand() * 4 - 2),
    coeffs: t([B, NM, A], () => rand() * 4 - 2),
  };
}

function reference(f: Record<string, HostTensor>): number {
  const d = (k: string): Float32Array => f[k]!.data as Float32Array;
  const as = d('assignment'), gb = d('gtBox'), gm = d('gtMasks'), pr = d('proto'), co = d('coeffs');
  let total = 0;
  for (let b = 0; b < B; b++) {
    let sum = 0, n = 0;
    for (let a = 0; a < A; a++) {
      for (let m = 0; m < M; m++) {
        if (!as[(b * M + m) * A + a]) continue;
        const [x1, y1, x2, y2] = gb.subarray((b * M + m) * 4, (b * M + m) * 4 + 4) as unknown as number[];
        let s = 0;
        for (let i = 0; i < HM; i++) for (let j = 0; j < WM; j++) {
          if (!(j >= x1! / 4 && j < x2! / 4 && i >= y1! / 4 && i < y2! / 4)) continue;
          let x = 0;
          for (let c = 0; c < NM; c++) x += co[(b * NM + c) * A + a]! * pr[((b * NM + c) * HM + i) * WM + j]!;
          const tt = gm[((b * M + m) * HM + i) * WM + j]!;
          s += Math.max(x, 0) - x * tt + Math.log1p(Math.exp(-Math.abs(x)));
        }
        const area = Math.max(((x2! - x1!) / W) * ((y2! - y1!) / H), 1e-6);
        sum += s / (HM * WM) / area;
        n++;
      }
    }
    if (n) total += sum / n;
  }
  return (total * 2.5) / B;
}

function lossGraph(): GraphBuilder {
  const b = new GraphBuilder('seg_loss');
  const dims: Record<string, number[]> = {
    assignment: [B, M, A], fg: [B, 1, A], targetBox: [B, A, 4], gtBox: [B, M, 4], gtMasks: [B, M, HM, WM], proto: [B, NM, HM, WM], coeffs: [B, NM, A],
  };
  const x = Object.fromEntries(Object.entries(dims).map(([k, v]) => [k, b.input(k, 'float32', v)])) as Record<keyof typeof dims, string>;
  const loss = emitYolo9MaskLoss(b, x as never, { batch: B, height: H, width: W, maxTargets: M, anchors: A, numMasks: NM });
  b.output('loss', loss, 'float32', []);
  return b;
}

describe('YOLOv9-seg mask loss', () => {
  const feeds = makeCase();
  const want = reference(feeds);

  it('the graph (float64 interpreter) equals the per-pixel loop', () => {
    assert.ok(want > 0.1, `the case is not trivial: ${want}`);
    const got = interpret(lossGraph().graph, feeds).loss!.data[0]!;
    assert.ok(Math.abs(got - want) <= 1e-6 * want, `${got} vs ${want}`);
  });

  it('in ONNX Runtime (float32) within 1e-5', async () => {
    const session = await ort.InferenceSession.create(serializeModel(lossGraph().graph), { intraOpNumThreads: 1 });
    const o: Record<string, ort.Tensor> = {};
    for (const [k, v] of Object.entries(feeds)) o[k] = new ort.Tensor('float32', v.data as Float32Array, v.dims);
    const got = (await session.run(o)).loss!.data[0] as number;
    await session.release();
    assert.ok(Math.abs(got - want) <= 1e-5 * want, `${got} vs ${want}`);
  });
});
