/**
 * D-FINE's contrastive denoising draws on the host (denoising.ts): the group and slot counts worked
 * out by hand, the attention mask equal to the original's stored dn.attn_mask, the noise rules
 * checked on the fixture's own draws and on ours, seeded reproducibility, and inert padding: the
 * fixture's draws padded to more slots leave the train forward's matching outputs unchanged.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { lowerComposites } from '../../src/graph/passes/lower-composites.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { denoisingAttnMask, denoisingGroups, drawDenoising, padDenoisingInputs } from '../../src/models/dfine/denoising.ts';
import type { ImageTargets } from '../../src/models/dfine/matcher.ts';
import { DfineNetwork } from '../../src/models/dfine/network.ts';
import { loadDfineStateDict } from '../../src/models/dfine/state-dict.ts';
import { emitDfineTrainForward } from '../../src/models/dfine/train-forward.ts';
import { DFINE_DN_INPUTS, dfineTrainOutputRecord } from '../../src/models/dfine/train-outputs.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { maxAbsDiff } from '../helpers/detr-rows.ts';
import { fixtureTargets } from '../helpers/dfine-targets.ts';
import { fixture } from '../helpers/fixtures.ts';

const NC = 80;
/**
 * Padding changes only the summation order (softmax and products over 504 instead of 498 keys, with
 * zero weights on the padding): measured <= 1.1e-6 of each output's range; a visible padding slot
 * moves the outputs far more.
 */
const PAD_REL_TOL = 1e-5;

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/**
 * Checks the noise rules on draws (ours or the original's): padding-gt slots keep class nc and a
 * zero box; a real slot's class is its gt's or noise; where no corner was clipped
 * (or flipped sign: its corners come back swapped), each xyxy corner moved by r * half its size
 * with r < 1 (positive) or 1 <= r < 2 (negative). Returns the fraction of real slots whose class changed.
 */
function checkNoiseRules(cls: BigInt64Array, unact: Float32Array, targets: ImageTargets[], maxGt: number, numDn: number): number {
  let changed = 0;
  let realSlots = 0;
  let checked = 0;
  targets.forEach((t, b) => {
    for (let j = 0; j < numDn; j++) {
      const g = j % maxGt;
      const k = b * numDn + j;
      const box = Array.from(unact.subarray(k * 4, k * 4 + 4), (v) => sigmoid(v));
      if (g >= t.labels.length) {
        assert.equal(cls[k], BigInt(NC), `image ${b} slot ${j}: padding class`);
        for (const v of box) assert.ok(v < 2e-5, `image ${b} slot ${j}: padding box ${v}`);
        continue;
      }
      realSlots++;
      if (Number(cls[k]) !== t.labels[g]) changed++;
      assert.ok(Number(cls[k]) >= 0 && Number(cls[k]) < NC);
      const [cx, cy, w, h] = Array.from(t.boxes.subarray(g * 4, g * 4 + 4));
      const gt = [cx! - w! / 2, cy! - h! / 2, cx! + w! / 2, cy! + h! / 2];
      const got = [box[0]! - box[2]! / 2, box[1]! - box[3]! / 2, box[0]! + box[2]! / 2, box[1]! + box[3]! / 2];
      const negative = j % (2 * maxGt) >= maxGt;
      const inRange = (r: number): boolean => (negative ? r >= 1 - 1e-3 && r < 2 + 1e-3 : r < 1 + 1e-3);
      // Per axis: corners (lo, hi); a size that went negative comes back with its corners swapped.
      for (const [lo, hi, size] of [[0, 2, w!], [1, 3, h!]] as const) {
        if ([got[lo]!, got[hi]!].some((v) => v < 1e-4 || v > 1 - 1e-4)) continue; // clipped
        const r = (from: number, to: number): number => Math.abs(got[from]! - gt[to]!) / (size / 2);
        assert.ok((inRange(r(lo, lo)) && inRange(r(hi, hi))) || (inRange(r(hi, lo)) && inRange(r(lo, hi))),
          `image ${b} slot ${j}: corners moved by ${r(lo, lo).toFixed(3)}, ${r(hi, hi).toFixed(3)} half-sizes (${negative ? 'negative' : 'positive'})`);
        checked++;
      }
    }
  });
  assert.ok(checked > realSlots, `only ${checked} of ${realSlots * 2} box axes unclipped`);
  return changed / realSlots;
}

describe('D-FINE denoising draws', () => {
  let train: Map<string, HostTensor>;
  let meta: Record<string, string>;
  let targets: ImageTargets[];

  before(() => {
    const st = readSafetensors(new Uint8Array(readFileSync(fixture('dfinen_ref_train.safetensors'))), 'dfine train fixture');
    train = st.tensors;
    meta = st.metadata;
    targets = fixtureTargets(train.get('targets_2x4x5')!);
  });

  it('groups = max(100 div G_max, 1), 2 G_max G queries (worked out by hand)', () => {
    assert.deepEqual(denoisingGroups(0), { groups: 0, numDn: 0 });
    assert.deepEqual(denoisingGroups(1), { groups: 100, numDn: 200 });
    assert.deepEqual(denoisingGroups(3), { groups: 33, numDn: 198 });
    assert.deepEqual(denoisingGroups(7), { groups: 14, numDn: 196 });
    assert.deepEqual(denoisingGroups(100), { groups: 1, numDn: 200 });
    assert.deepEqual(denoisingGroups(150), { groups: 1, numDn: 300 });
    const draw = drawDenoising(targets, { nc: NC, rand: mulberry32(1) });
    assert.deepEqual(targets.map((t) => t.labels), [[3, 17], [0, 56, 3]]);
    assert.equal(draw.maxGt, 3);
    assert.equal(draw.numGroup, Number(meta.dn_num_group));
    assert.deepEqual([draw.numDn, 300], JSON.parse(meta.dn_num_split!));
    assert.deepEqual(draw.inputs[DFINE_DN_INPUTS.queryClass]!.dims, train.get(DFINE_DN_INPUTS.queryClass)!.dims);
    assert.deepEqual(draw.inputs[DFINE_DN_INPUTS.attnMask]!.dims, [498, 498]);
    assert.deepEqual(Array.from(draw.positiveIdx[0]!), Array.from(train.get('dn.positive_idx.img0')!.data as BigInt64Array, Number));
    assert.deepEqual(Array.from(draw.positiveIdx[1]!), Array.from(train.get('dn.positive_idx.img1')!.data as BigInt64Array, Number));
  });

  it("the attention mask is the original's stored dn.attn_mask", () => {
    const want = train.get(DFINE_DN_INPUTS.attnMask)!.data as Uint8Array;
    assert.deepEqual(Array.from(denoisingAttnMask(3, 33, 198)), Array.from(want));
    // Worked out by hand for G_max 1, 2 groups, one padding slot, 2 matching queries (1 = blocked).
    assert.deepEqual(Array.from(denoisingAttnMask(1, 2, 5, 2)), [
      0, 0, 1, 1, 1, 0, 0,
      0, 0, 1, 1, 1, 0, 0,
      1, 1, 0, 0, 1, 0, 0,
      1, 1, 0, 0, 1, 0, 0,
      1, 1, 1, 1, 0, 1, 1,
      1, 1, 1, 1, 1, 0, 0,
      1, 1, 1, 1, 1, 0, 0,
    ]);
  });

  it("the noise rules hold on the original's draws and on ours (label noise ~ 0.25 x 79/80)", () => {
    const theirs = checkNoiseRules(train.get(DFINE_DN_INPUTS.queryClass)!.data as BigInt64Array, train.get(DFINE_DN_INPUTS.queryBboxUnact)!.data as Float32Array, targets, 3, 198);
    const draw = drawDenoising(targets, { nc: NC, rand: mulberry32(7) });
    const ours = checkNoiseRules(draw.inputs[DFINE_DN_INPUTS.queryClass]!.data as BigInt64Array, draw.inputs[DFINE_DN_INPUTS.queryBboxUnact]!.data as Float32Array, targets, 3, 198);
    // 165 real slots: the changed fraction 0.247 has a binomial sd of 0.034; both within 4 sd.
    for (const frac of [theirs, ours]) assert.ok(Math.abs(frac - 0.25 * 79 / 80) < 4 * 0.034, `label noise fraction ${frac}`);
  });

  it('is reproducible from its seed and differs between seeds; pads with inert slots', () => {
    const a = drawDenoising(targets, { nc: NC, rand: mulberry32(3) });
    const b = drawDenoising(targets, { nc: NC, rand: mulberry32(3) });
    const c = drawDenoising(targets, { nc: NC, rand: mulberry32(4) });
    const ref = DFINE_DN_INPUTS.queryBboxUnact;
    assert.deepEqual(a.inputs[ref]!.data, b.inputs[ref]!.data);
    assert.notDeepEqual(a.inputs[ref]!.data, c.inputs[ref]!.data);
    const padded = drawDenoising(targets, { nc: NC, rand: mulberry32(3), slots: 200 });
    assert.equal(padded.numDn, 198);
    assert.equal(padded.slots, 200);
    const cls = padded.inputs[DFINE_DN_INPUTS.queryClass]!.data as BigInt64Array;
    assert.deepEqual(Array.from(cls.subarray(0, 198)), Array.from((a.inputs[DFINE_DN_INPUTS.queryClass]!.data as BigInt64Array).subarray(0, 198)));
    assert.deepEqual([cls[198], cls[199], cls[398], cls[399]], [80n, 80n, 80n, 80n]);
    assert.throws(() => drawDenoising(targets, { nc: NC, rand: mulberry32(3), slots: 100 }), /100 slots cannot hold 198 denoising queries/);
    const none = drawDenoising([{ labels: [], boxes: new Float32Array(0) }], { nc: NC, rand: mulberry32(3) });
    assert.deepEqual([none.numDn, none.numGroup, none.slots, Object.keys(none.inputs).length], [0, 0, 0, 0]);
  });

  it("padding the fixture's draws to 204 slots leaves every matching output and the real denoising outputs unchanged", async () => {
    const net = new DfineNetwork({ size: 'n', nc: NC });
    loadDfineStateDict(net, (await loadCheckpointFile(fixture('dfinen_ref.pt'))).stateDict);
    const u8 = train.get('input_u8_2x3x640x640')!;
    const images = new ort.Tensor('float32', Float32Array.from(u8.data as Uint8Array, (v) => Math.fround(v / 255)), u8.dims);
    const stored = Object.fromEntries(Object.values(DFINE_DN_INPUTS).map((n) => [n, train.get(n)!]));
    const run = async (inputs: Record<string, HostTensor>, slots: number): Promise<ort.InferenceSession.OnnxValueMapType> => {
      const b = new GraphBuilder('dfine_train_forward');
      b.training = true;
      const rec = emitDfineTrainForward(b, net, b.input('images', 'float32', [2, 3, 640, 640]), 2, { height: 640, width: 640, dnSlots: slots });
      for (const [name, { value, dims }] of Object.entries(dfineTrainOutputRecord(rec))) b.output(name, value, 'float32', dims);
      lowerComposites(b.graph);
      const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
      const feeds: Record<string, ort.Tensor> = { images };
      for (const [name, t] of Object.entries(inputs)) feeds[name] = new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
      const out = await session.run(feeds);
      await session.release();
      return out;
    };
    const exact = await run(stored, 198);
    const padded = await run(padDenoisingInputs(stored, 3, 33, 204, NC), 204);
    const worst: Record<string, number> = {};
    for (const name of Object.keys(exact)) {
      const a = exact[name]!.data as Float32Array;
      const p = padded[name]!.data as Float32Array;
      const range = a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      let err = 0;
      if (!name.startsWith('dn.')) err = maxAbsDiff(p, a);
      else {
        // Denoising rows [B, slots, w]: the first 198 of each image are the real ones.
        const w = a.length / (2 * 198);
        for (let b = 0; b < 2; b++) err = Math.max(err, maxAbsDiff(p.subarray(b * 204 * w, (b * 204 + 198) * w), a.subarray(b * 198 * w, (b + 1) * 198 * w)));
      }
      worst[name] = err / range;
    }
    for (const [name, rel] of Object.entries(worst)) assert.ok(rel <= PAD_REL_TOL, `${name}: padding moved it by ${rel.toExponential(2)} of its range`);
  });
});
