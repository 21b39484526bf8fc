/**
 * D-FINE's in-graph predict decode (detector.ts) held to what it must compute, tightly enough that a
 * plausible wrong decode fails:
 * - the scores are an accurate sigmoid: read back as logits (float64 log(p / (1 - p))), the predict
 *   session's scores match the reference's stored `pred_logits` within 2x the fp32-vs-fp64 floor
 *   (3.8e-4) at every one of the 300 x 80 entries, the smallest probabilities included (logits down to
 *   -12). ONNX Runtime's own Sigmoid has ~1e-7 absolute error, a 1e-2 logit error at p ~ 1e-5;
 * - w and h are clamped at 0 before the corners are formed (dfine.md 4.3): a checkpoint whose last
 *   decoder layer pushes every left and right edge distance to -reg_scale (bin 0 of the FDR) predicts
 *   negative widths, which the decode must turn into x1 = x2 = cx, as the original's postprocess does;
 *   so must the read-back of its exported .onnx (raw cx, cy, w, h) into the predict layout.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { LibreYOLO, type Results } from '../../src/index.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { loadCheckpointFile, saveCheckpointPt } from '../../src/weights/checkpoint.ts';
import { DFINE_SHAPES, inputOf, readDfineIo, type DfineIo } from '../helpers/dfine-fixture.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { useModel } from '../helpers/model.ts';
import { tempDir } from '../helpers/temp.ts';

const Q = 300, NC = 80;

/**
 * Per batch image, each of our query rows paired with the reference row of the nearest box (a near
 * tie in the proposal top-k permutes rows), then the largest |logit(our score) - stored logit|.
 */
function worstLogitError(got: HostTensor, io: DfineIo, shape: string): { err: number; minLogit: number } {
  const logits = io.tensors.get(`pred_logits_${shape}`)!.data as Float32Array;
  const boxes = io.tensors.get(`pred_boxes_${shape}`)!.data as Float32Array;
  const b = got.dims[0]!;
  const a = got.data as Float32Array;
  const rows = 4 + NC;
  let err = 0, minLogit = Infinity;
  for (let i = 0; i < b; i++) {
    const base = i * rows * Q;
    const used = new Set<number>();
    for (let j = 0; j < Q; j++) {
      const ours = [0, 1, 2, 3].map((c) => a[base + c * Q + j]!);
      let best = -1, bestD = Infinity;
      for (let r = 0; r < Q; r++) {
        if (used.has(r)) continue;
        const o = (i * Q + r) * 4;
        const [cx, cy, w, h] = [boxes[o]!, boxes[o + 1]!, boxes[o + 2]!, boxes[o + 3]!];
        const ref = [(cx - w / 2) * 640, (cy - h / 2) * 640, (cx + w / 2) * 640, (cy + h / 2) * 640];
        const d = Math.max(...ref.map((v, c) => Math.abs(v - ours[c]!)));
        if (d < bestD) { bestD = d; best = r; }
      }
      used.add(best);
      for (let c = 0; c < NC; c++) {
        const p = a[base + (4 + c) * Q + j]!;
        const want = logits[(i * Q + best) * NC + c]!;
        minLogit = Math.min(minLogit, want);
        err = Math.max(err, Math.abs(Math.log(p) - Math.log1p(-p) - want));
      }
    }
  }
  return { err, minLogit };
}

/** Every query of a predict-layout output [1, 4+nc, 300] has x1 = x2 (width clamped at 0) and most keep a height. */
function assertWidthsCollapsed(out: HostTensor, what: string): void {
  const d = out.data as Float32Array;
  let zero = 0, tall = 0;
  for (let j = 0; j < Q; j++) {
    const [x1, y1, x2, y2] = [d[j]!, d[Q + j]!, d[2 * Q + j]!, d[3 * Q + j]!];
    assert.ok(x2 >= x1, `${what}, query ${j}: x2 ${x2} < x1 ${x1} (a negative width went through unclamped)`);
    if (x1 === x2) zero++;
    if (y2 > y1) tall++;
  }
  assert.equal(zero, Q, `${what}: ${zero} of ${Q} boxes have x1 = x2`);
  assert.ok(tall > Q / 2, `${what}: ${tall} of ${Q} boxes keep a positive height`);
}

describe('D-FINE predict decode', () => {
  const model = useModel('dfinen_ref.pt', { threads: 2 });
  const dir = tempDir();
  let io: DfineIo;
  before(() => {
    io = readDfineIo();
  });

  for (const shape of DFINE_SHAPES) {
    it(`scores are an accurate sigmoid: as logits they match the stored pred_logits at ${shape} within 2x the fp64 floor, down to the smallest`, async () => {
      const { err, minLogit } = worstLogitError(await model().forward(inputOf(io, shape)), io, shape);
      const limit = 2 * io.floor.pred_logits.max_abs;
      console.log(`# ${shape}: worst logit error ${err.toExponential(2)} (limit ${limit.toExponential(2)}), stored logits down to ${minLogit.toFixed(2)}`);
      assert.ok(minLogit < -11, `the stored logits reach ${minLogit}: the check needs scores near 1e-5 to tell an approximate sigmoid apart`);
      assert.ok(err <= limit, `a score read back as a logit is ${err.toExponential(2)} off the reference (limit ${limit.toExponential(2)})`);
    });
  }

  it('w and h are clamped at 0: a checkpoint predicting negative widths gives x1 = x2 (and the original\'s zero-width detections)', async () => {
    const ckpt = await loadCheckpointFile(fixture('dfinen_ref.pt'));
    const key = 'decoder.dec_bbox_head.2.layers.2.bias'; // the last layer's corner logits [4 edges x 33 bins]
    const bias = ckpt.stateDict.get(key);
    assert.ok(bias && bias.dims[0] === 132, `${key} is [132]`);
    const data = Float32Array.from(bias.data as Float32Array);
    // Edges are (left, top, right, bottom), 33 bins each; bin 0 is W[0] = -2 |up| reg_scale = -4, the
    // FDR's most negative distance. Left and right there: w' = (rs + d_l + d_r) w / rs = -w (rs = 4).
    for (const edge of [0, 2]) data[edge * 33] = 60;
    const sd = new Map(ckpt.stateDict);
    sd.set(key, { ...bias, data });
    const path = join(dir, 'LibreDFINEn-negative-width.pt');
    await saveCheckpointPt(path, sd, ckpt.metadata);
    const crafted = await LibreYOLO(path, { progress: false, threads: 2 });
    const onnx = join(dir, 'LibreDFINEn-negative-width.onnx');
    try {
      assertWidthsCollapsed(await crafted.forward(inputOf(io, '1x3x640x640')), 'predict session');
      const r = await crafted.predict(join(REPO_ROOT, 'test/assets/parkour.jpg'), { conf: 0.3 }) as Results;
      assert.ok(r.boxes.length > 0, 'the crafted checkpoint still detects');
      for (const [x1, , x2] of r.boxes.xyxy) assert.equal(x1, x2, 'a detection of zero width keeps x1 = x2');
      await crafted.export({ format: 'onnx', output_path: onnx });
    } finally {
      await crafted.close();
    }
    // The export holds the raw cx, cy, w, h; the read-back into the predict layout clamps as the decode does.
    const exported = await LibreYOLO(onnx, { progress: false, threads: 2 });
    try {
      assertWidthsCollapsed(await exported.forward(inputOf(io, '1x3x640x640')), 'exported .onnx read back');
    } finally {
      await exported.close();
    }
  });
});
