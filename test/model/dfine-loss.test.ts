/**
 * D-FINE's criterion (loss-targets.ts on the host + loss.ts in the graph) on small hand-made train
 * outputs (2 images, 6 queries, 3 classes, 2 decoder layers, reg_max 8, 4 real + 2 padded
 * denoising slots) against a float64 reference written plainly from dfine.md 6.6 in index form
 * (gather the matched pairs, loop over them): every loss key, through the float64 interpreter and
 * through ONNX Runtime.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import type { GraphBuilder } from '../../src/graph/builder.ts';
import { interpret } from '../../src/graph/interpret/interpreter.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { weightingFunction } from '../../src/models/dfine/fdr.ts';
import { CLASS_LOSS, dfineLossTerms, termKeys } from '../../src/models/dfine/loss-terms.ts';
import type { DfineLossContext } from '../../src/models/dfine/loss-targets.ts';
import { denoisingMatches, hungarianMatch, unionMatches, type ImageTargets, type Match } from '../../src/models/dfine/matcher.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { fedLossGraph } from '../helpers/dfine-loss-graph.ts';

const B = 2, Q = 6, NC = 3, L = 2, REG_MAX = 8, BINS = REG_MAX + 1, SLOTS = 6, NUM_DN = 4, REG_SCALE = 4;
const PROJECT = weightingFunction(REG_MAX, 0.5, REG_SCALE);
const rand = mulberry32(2024);
const uniform = (lo: number, hi: number): number => lo + (hi - lo) * rand();
const boxes = (n: number): Float32Array => Float32Array.from({ length: n * 4 }, (_, k) => (k % 4 < 2 ? uniform(0.25, 0.75) : uniform(0.1, 0.5)));

const targets: ImageTargets[] = [
  { labels: [2], boxes: Float32Array.from([0.4, 0.5, 0.3, 0.35]) },
  { labels: [0, 1], boxes: Float32Array.from([0.6, 0.4, 0.25, 0.3, 0.35, 0.6, 0.4, 0.3]) },
];
const positiveIdx = [[0], [0, 1]]; // one group, G_max 2: slots 0,1 positive, 2,3 negative, 4,5 padding

/** Random predictions under the train output record's names. */
function predictions(): Record<string, HostTensor> {
  const p: Record<string, HostTensor> = {};
  const put = (name: string, dims: number[], data: Float32Array): void => { p[name] = { dtype: 'float32', dims, data }; };
  for (const [prefix, q] of [['', Q], ['dn.', SLOTS]] as const) {
    for (let l = 0; l < L; l++) {
      put(`${prefix}layer${l}.pred_logits`, [B, q, NC], Float32Array.from({ length: B * q * NC }, () => uniform(-4, 1)));
      put(`${prefix}layer${l}.pred_boxes`, [B, q, 4], boxes(B * q));
      put(`${prefix}layer${l}.pred_corners`, [B, q, 4 * BINS], Float32Array.from({ length: B * q * 4 * BINS }, () => uniform(-2, 2)));
    }
    put(`${prefix}ref_points`, [B, q, 4], boxes(B * q));
    put(`${prefix}pre.pred_logits`, [B, q, NC], Float32Array.from({ length: B * q * NC }, () => uniform(-4, 1)));
    put(`${prefix}pre.pred_boxes`, [B, q, 4], boxes(B * q));
  }
  put('enc.pred_logits', [B, Q, NC], Float32Array.from({ length: B * Q * NC }, () => uniform(-4, 1)));
  put('enc.pred_boxes', [B, Q, 4], boxes(B * Q));
  // Make the aux layer and the pre head disagree with the main matching on image 1, so GO has more pairs.
  return p;
}

// ---- the float64 reference, from dfine.md 6.6 ----
const sig = (x: number): number => 1 / (1 + Math.exp(-x));
const xyxy = (b: ArrayLike<number>, o: number): number[] => {
  const w = Math.max(b[o + 2]!, 0), h = Math.max(b[o + 3]!, 0);
  return [b[o]! - w / 2, b[o + 1]! - h / 2, b[o]! + w / 2, b[o + 1]! + h / 2];
};
function iouGiou(p: ArrayLike<number>, po: number, g: ArrayLike<number>, go: number): { iou: number; giou: number } {
  const a = xyxy(p, po), c = xyxy(g, go);
  const area = (v: number[]): number => (v[2]! - v[0]!) * (v[3]! - v[1]!);
  const inter = Math.max(0, Math.min(a[2]!, c[2]!) - Math.max(a[0]!, c[0]!)) * Math.max(0, Math.min(a[3]!, c[3]!) - Math.max(a[1]!, c[1]!));
  const union = area(a) + area(c) - inter;
  const hull = (Math.max(a[2]!, c[2]!) - Math.min(a[0]!, c[0]!)) * (Math.max(a[3]!, c[3]!) - Math.min(a[1]!, c[1]!));
  return { iou: inter / union, giou: inter / union - (hull - union) / hull };
}
const logSoftmax = (v: number[]): number[] => {
  const m = Math.max(...v);
  const lse = m + Math.log(v.reduce((s, x) => s + Math.exp(x - m), 0));
  return v.map((x) => x - lse);
};
const row = (t: HostTensor, r: number, n: number): number[] => Array.from((t.data as Float32Array).subarray(r * n, r * n + n));

function reference(p: Record<string, HostTensor>): Record<string, number> {
  const main = hungarianMatch({ logits: p['layer1.pred_logits']!.data as Float32Array, boxes: p['layer1.pred_boxes']!.data as Float32Array, batch: B, queries: Q, nc: NC }, targets);
  const own = (src: string): Match[] => hungarianMatch({ logits: p[`${src}.pred_logits`]!.data as Float32Array, boxes: p[`${src}.pred_boxes`]!.data as Float32Array, batch: B, queries: Q, nc: NC }, targets);
  const aux0 = own('layer0'), pre = own('pre'), enc = own('enc');
  const go = unionMatches(main, [aux0, pre, enc]);
  const dn = denoisingMatches(positiveIdx, [1, 2], 1);
  const numBoxes = 3, numGo = go.reduce((s, m) => s + m.queries.length, 0), numDn = 3;
  const pairs = (m: Match[]): Array<[number, number, number]> => m.flatMap((x, img) => x.queries.map((q, k) => [img, q, x.targets[k]!] as [number, number, number]));
  const out: Record<string, number> = {};
  const vfl = (src: string, q: number, real: number, m: Match[], norm: number): number => {
    const lg = p[`${src}.pred_logits`]!, bx = p[`${src}.pred_boxes`]!;
    let s = 0;
    for (let img = 0; img < B; img++) {
      for (let k = 0; k < real; k++) {
        const hit = pairs(m).find(([i2, q2]) => i2 === img && q2 === k);
        const iou = hit ? iouGiou(bx.data as Float32Array, (img * q + k) * 4, targets[img]!.boxes, hit[2] * 4).iou : 0;
        for (let c = 0; c < NC; c++) {
          const x = (lg.data as Float32Array)[(img * q + k) * NC + c]!;
          const t = hit && targets[img]!.labels[hit[2]] === c ? 1 : 0;
          const score = iou * t;
          const w = 0.75 * sig(x) ** 2 * (1 - t) + score;
          s += w * (Math.max(x, 0) - x * score + Math.log1p(Math.exp(-Math.abs(x))));
        }
      }
    }
    return s / norm;
  };
  const boxLoss = (src: string, q: number, m: Match[], norm: number): [number, number] => {
    const bx = p[`${src}.pred_boxes`]!.data as Float32Array;
    let l1 = 0, gi = 0;
    for (const [img, k, g] of pairs(m)) {
      for (let e = 0; e < 4; e++) l1 += Math.abs(bx[(img * q + k) * 4 + e]! - targets[img]!.boxes[g * 4 + e]!);
      gi += 1 - iouGiou(bx, (img * q + k) * 4, targets[img]!.boxes, g * 4).giou;
    }
    return [5 * l1 / norm, 2 * gi / norm];
  };
  const fgl = (prefix: string, layer: number, q: number, m: Match[], norm: number): number => {
    const corners = p[`${prefix}layer${layer}.pred_corners`]!, bx = p[`${prefix}layer${layer}.pred_boxes`]!.data as Float32Array;
    const ref = p[`${prefix}ref_points`]!.data as Float32Array;
    let s = 0;
    for (const [img, k, g] of pairs(m)) {
      const r = (img * q + k) * 4;
      const [cx, cy, w, h] = [ref[r]!, ref[r + 1]!, ref[r + 2]!, ref[r + 3]!];
      const [x1, y1, x2, y2] = xyxy(targets[img]!.boxes, g * 4) as [number, number, number, number];
      const d = [(cx - x1) / (w / REG_SCALE + 1e-16) - REG_SCALE / 2, (cy - y1) / (h / REG_SCALE + 1e-16) - REG_SCALE / 2,
        (x2 - cx) / (w / REG_SCALE + 1e-16) - REG_SCALE / 2, (y2 - cy) / (h / REG_SCALE + 1e-16) - REG_SCALE / 2];
      const iou = iouGiou(bx, r, targets[img]!.boxes, g * 4).iou;
      d.forEach((t, e) => {
        const j = PROJECT.filter((v) => v <= t).length - 1;
        let bin: number, wl: number, wr: number;
        if (j < 0) [bin, wl, wr] = [0, 1, 0];
        else if (j >= REG_MAX) [bin, wl, wr] = [REG_MAX - 1, 0, 1];
        else {
          const a = Math.abs(t - PROJECT[j]!), c = Math.abs(PROJECT[j + 1]! - t);
          [bin, wr] = [j, a / (a + c)];
          wl = 1 - wr;
        }
        const ls = logSoftmax(row(corners, (img * q + k) * 4 + e, BINS));
        s += (-ls[bin]! * wl - ls[bin + 1]! * wr) * iou;
      });
    }
    return 0.15 * s / norm;
  };
  const numPos = Math.sqrt(numGo * 4 * 8 / B), numNeg = Math.sqrt((B * Q - numGo) * 4 * 8 / B);
  const ddf = (prefix: string, layer: number, q: number, real: number, m: Match[]): number => {
    const st = p[`${prefix}layer${layer}.pred_corners`]!, te = p[`${prefix}layer${L - 1}.pred_corners`]!;
    const tl = p[`${prefix}layer${L - 1}.pred_logits`]!, bx = p[`${prefix}layer${layer}.pred_boxes`]!.data as Float32Array;
    const pos: number[] = [], neg: number[] = [];
    for (let img = 0; img < B; img++) {
      for (let k = 0; k < real; k++) {
        const hit = pairs(m).find(([i2, q2]) => i2 === img && q2 === k);
        const w = hit ? iouGiou(bx, (img * q + k) * 4, targets[img]!.boxes, hit[2] * 4).iou : sig(Math.max(...row(tl, img * q + k, NC)));
        for (let e = 0; e < 4; e++) {
          const r = (img * q + k) * 4 + e;
          const lp = logSoftmax(row(te, r, BINS).map((x) => x / 5)), lq = logSoftmax(row(st, r, BINS).map((x) => x / 5));
          const kl = lp.reduce((s, v, j) => s + Math.exp(v) * (v - lq[j]!), 0);
          (hit ? pos : neg).push(kl * 25 * w);
        }
      }
    }
    const mean = (v: number[]): number => (v.length ? v.reduce((a, c) => a + c, 0) / v.length : 0);
    return 1.5 * (mean(pos) * numPos + mean(neg) * numNeg) / (numPos + numNeg);
  };
  const set = (suffix: string, src: string, q: number, real: number, cls: Match[], bm: Match[], norm: number, normBox: number): void => {
    out[`loss_vfl${suffix}`] = vfl(src, q, real, cls, norm);
    [out[`loss_bbox${suffix}`], out[`loss_giou${suffix}`]] = boxLoss(src, q, bm, normBox);
  };
  set('', 'layer1', Q, Q, main, go, numBoxes, numGo);
  out.loss_fgl = fgl('', 1, Q, go, numGo);
  set('_aux_0', 'layer0', Q, Q, aux0, go, numBoxes, numGo);
  out.loss_fgl_aux_0 = fgl('', 0, Q, go, numGo);
  out.loss_ddf_aux_0 = ddf('', 0, Q, Q, go);
  set('_pre', 'pre', Q, Q, pre, go, numBoxes, numGo);
  set('_enc_0', 'enc', Q, Q, enc, go, numBoxes, numGo);
  for (let l = 0; l < L; l++) {
    set(`_dn_${l}`, `dn.layer${l}`, SLOTS, NUM_DN, dn, dn, numDn, numDn);
    out[`loss_fgl_dn_${l}`] = fgl('dn.', l, SLOTS, dn, numDn);
    out[`loss_ddf_dn_${l}`] = l === L - 1 ? 0 : ddf('dn.', l, SLOTS, NUM_DN, dn);
  }
  set('_dn_pre', 'dn.pre', SLOTS, NUM_DN, dn, dn, numDn, numDn);
  return out;
}

function lossGraph(p: Record<string, HostTensor>, ctx: DfineLossContext): { b: GraphBuilder; feeds: Record<string, HostTensor>; keys: string[] } {
  return fedLossGraph(p, targets, ctx, { up: 0.5 });
}

describe('D-FINE criterion on hand-made train outputs', () => {
  const p = predictions();
  const ctx: DfineLossContext = { batch: B, nc: NC, layers: L, queries: Q, regMax: REG_MAX, regScale: REG_SCALE, project: PROJECT, dn: { slots: SLOTS, numDn: NUM_DN, numGroup: 1, positiveIdx }, cls: CLASS_LOSS.dfine };
  const want = reference(p);
  const { b, feeds, keys } = lossGraph(p, ctx);

  it('has the original\'s key set (4 + 5 per aux layer + 3 pre + 3 enc + 5 per dn layer + 3 dn_pre)', () => {
    assert.equal(keys.length, 4 + 5 * (L - 1) + 3 + 3 + 5 * L + 3);
    assert.deepEqual([...keys].sort(), Object.keys(want).sort());
    assert.equal(dfineLossTerms(3, true).flatMap((t) => termKeys(t, CLASS_LOSS.dfine)).length, 38, 'D-FINE n (3 layers): 38 keys');
  });

  it('every key through the float64 interpreter equals the reference (rel 2e-6)', () => {
    const got = interpret(b.graph, feeds);
    for (const k of keys) {
      const g = got[k]!.data[0]!;
      assert.ok(Math.abs(g - want[k]!) <= 2e-6 * Math.max(Math.abs(want[k]!), 1e-3), `${k}: ${g} vs ${want[k]}`);
    }
    assert.ok(want.loss_ddf_aux_0! > 0 && want.loss_fgl_dn_0! > 0 && want.loss_giou_dn_pre! > 0, 'the terms under test are not trivially zero');
    const sum = keys.reduce((s, k) => s + want[k]!, 0);
    assert.ok(Math.abs(got.total!.data[0]! - sum) <= 1e-6 * sum);
    const ddf = keys.filter((k) => k.startsWith('loss_ddf')).reduce((s, k) => s + want[k]!, 0);
    assert.ok(Math.abs(got.component_ddf!.data[0]! - ddf) <= 1e-6 * ddf);
  });

  it('the same graph in ONNX Runtime (float32) agrees within 1e-5', async () => {
    const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 1 });
    const o: Record<string, ort.Tensor> = {};
    for (const [k, t] of Object.entries(feeds)) o[k] = new ort.Tensor('float32', t.data as Float32Array, t.dims);
    const got = await session.run(o);
    await session.release();
    for (const k of keys) {
      const g = got[k]!.data[0] as number;
      assert.ok(Math.abs(g - want[k]!) <= 1e-5 * Math.max(Math.abs(want[k]!), 1e-3), `${k}: ${g} vs ${want[k]}`);
    }
  });

  it('padded denoising slots and unmatched queries do not count', () => {
    const q = { ...p };
    const poke = (name: string): void => {
      const t = q[name]!;
      const data = Float32Array.from(t.data as Float32Array);
      const per = data.length / (B * SLOTS);
      data.fill(3, 4 * per, 6 * per); // image 0, slots 4 and 5 (padding)
      q[name] = { ...t, data };
    };
    for (let l = 0; l < L; l++) for (const s of ['pred_logits', 'pred_boxes', 'pred_corners']) poke(`dn.layer${l}.${s}`);
    const again = reference(q);
    const { b: b2, feeds: f2 } = lossGraph(q, ctx);
    const got = interpret(b2.graph, f2);
    for (const k of keys.filter((x) => x.includes('_dn_'))) {
      assert.ok(Math.abs(got[k]!.data[0]! - again[k]!) <= 2e-6 * Math.max(Math.abs(again[k]!), 1e-3), k);
      assert.ok(Math.abs(again[k]! - want[k]!) <= 1e-12 * Math.max(Math.abs(want[k]!), 1), `${k} unchanged by padding`);
    }
  });
});
