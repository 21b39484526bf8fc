/**
 * D-FINE's train-mode forward against the original's train step (dfinen_ref_train.safetensors):
 * with the stored denoising draws injected, the main outputs pred_logits_train / pred_boxes_train
 * within twice the original's float32-vs-float64 floor (the eval one of dfinen_ref_io: the train
 * fixture records none, and our float64 interpreter has no GridSample/LayerNorm/GatherND kernels
 * yet), query rows paired where proposals near-tie; the stem's BatchNorm running statistics after
 * the step (momentum 0.1, batch statistics, frozen parameters); the frozen set; every loss input's
 * shape.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { lowerComposites } from '../../src/graph/passes/lower-composites.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { DfineNetwork } from '../../src/models/dfine/network.ts';
import { loadDfineStateDict } from '../../src/models/dfine/state-dict.ts';
import { emitDfineTrainForward } from '../../src/models/dfine/train-forward.ts';
import { DFINE_DN_INPUTS, DFINE_TOPK_INDEX, dfineTrainOutputRecord, type DfineTrainOutputs } from '../../src/models/dfine/train-outputs.ts';
import { drawDenoising } from '../../src/models/dfine/denoising.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { maxAbsDiff, maxAbsDiffPaired } from '../helpers/detr-rows.ts';
import { fixture } from '../helpers/fixtures.ts';

const STEM_BN = 'backbone.stem.stem1.bn';

/**
 * Proposal-score tie tolerance: the eval parity test's gate on the encoder scores (2.5e-4, their
 * measured float32 noise); a reordered row must tie within it.
 */
const PROPOSAL_TIE_TOL = 2.5e-4;
/** Rows of one image closer than this in every box coordinate are the same query (box noise ~1e-6). */
const BOX_PAIR_TOL = 1e-4;

/**
 * For each port row (image-major, `k` per image), the reference row of the same image whose box is
 * within `tol`; fails when a row has none, or two reference rows claim it. The matching queries see
 * each other without a mask, so a near-tie reordering of the proposals only permutes rows.
 */
function pairRowsByBox(got: Float32Array, want: Float32Array, batch: number, tol: number): number[] {
  const k = want.length / 4 / batch;
  const rows: number[] = [];
  const taken = new Set<number>();
  for (let q = 0; q < batch * k; q++) {
    const img = Math.floor(q / k);
    const close: number[] = [];
    for (let r = img * k; r < (img + 1) * k; r++) {
      let d = 0;
      for (let c = 0; c < 4; c++) d = Math.max(d, Math.abs(got[q * 4 + c]! - want[r * 4 + c]!));
      if (d <= tol) close.push(r);
    }
    if (close.length !== 1 || taken.has(close[0]!)) throw new Error(`row ${q}: ${close.length} reference rows within ${tol} (${close.join(', ')})`);
    taken.add(close[0]!);
    rows.push(close[0]!);
  }
  return rows;
}

function toOrt(t: HostTensor): ort.Tensor {
  return new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
}

describe('D-FINE n train-mode forward (graph IR on ORT vs the original train step)', () => {
  let train: Map<string, HostTensor>;
  let meta: Record<string, string>;
  let net: DfineNetwork;
  let outputs: ort.InferenceSession.OnnxValueMapType;
  let record: DfineTrainOutputs;
  let feeds: Record<string, ort.Tensor>;
  /** The eval-mode float32-vs-float64 floor of dfinen_ref_io (the train fixture records none). */
  let floor: { pred_logits: { max_abs: number }; pred_boxes: { max_abs: number } };

  before(async () => {
    const st = readSafetensors(new Uint8Array(readFileSync(fixture('dfinen_ref_train.safetensors'))), 'dfine train fixture');
    train = st.tensors;
    floor = JSON.parse(readSafetensors(new Uint8Array(readFileSync(fixture('dfinen_ref_io.safetensors'))), 'dfine io fixture').metadata.fp32_vs_fp64 ?? 'null');
    assert.ok(floor, 'dfinen_ref_io.safetensors has fp32_vs_fp64 metadata');
    meta = st.metadata;
    net = new DfineNetwork({ size: 'n', nc: 80 });
    loadDfineStateDict(net, (await loadCheckpointFile(fixture('dfinen_ref.pt'))).stateDict);
    const split = JSON.parse(meta.dn_num_split!) as [number, number];
    const b = new GraphBuilder('dfine_train_forward');
    b.training = true;
    const images = b.input('images', 'float32', [2, 3, 640, 640]);
    record = emitDfineTrainForward(b, net, images, 2, { height: 640, width: 640, dnSlots: split[0] });
    for (const [name, { value, dims }] of Object.entries(dfineTrainOutputRecord(record))) b.output(name, value, 'float32', dims);
    b.output(DFINE_TOPK_INDEX, record.topk!, 'int64', [2, 300]);
    for (const [key, value] of b.runningStatOutputs) if (key.startsWith(STEM_BN)) b.output(`running.${key}`, value, 'float32', [16]);
    lowerComposites(b.graph);
    const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
    const u8 = train.get('input_u8_2x3x640x640')!;
    feeds = {
      images: new ort.Tensor('float32', Float32Array.from(u8.data as Uint8Array, (v) => Math.fround(v / 255)), u8.dims),
    };
    for (const name of Object.values(DFINE_DN_INPUTS)) feeds[name] = toOrt(train.get(name)!);
    outputs = await session.run(feeds);
    await session.release();
  });

  it('pred_logits_train and pred_boxes_train with the stored denoising draws, query rows paired at near ties', () => {
    const L = net.cfg.decLayers;
    const logits = outputs[`layer${L - 1}.pred_logits`]!.data as Float32Array;
    const boxes = outputs[`layer${L - 1}.pred_boxes`]!.data as Float32Array;
    const wantBoxes = train.get('pred_boxes_train')!.data as Float32Array;
    const pairs = pairRowsByBox(boxes, wantBoxes, 2, BOX_PAIR_TOL);
    // A row may sit elsewhere only where its proposal's score ties another's (the top-k order).
    const enc = outputs['enc.pred_logits']!.data as Float32Array;
    const encMax = (row: number): number => Math.max(...enc.subarray(row * 80, row * 80 + 80));
    const moved = pairs.map((r, p) => [p, r] as const).filter(([p, r]) => p !== r);
    for (const [p, r] of moved) {
      const gap = Math.abs(encMax(p) - encMax(r));
      assert.ok(gap <= PROPOSAL_TIE_TOL, `row ${p} pairs with reference row ${r}, but their proposal scores are ${gap.toExponential(2)} apart`);
    }
    assert.ok(moved.length <= 16, `${moved.length} rows reordered`);
    const errLogits = maxAbsDiffPaired(logits, train.get('pred_logits_train')!.data as Float32Array, 80, pairs);
    const errBoxes = maxAbsDiffPaired(boxes, wantBoxes, 4, pairs);
    assert.ok(errLogits <= 2 * floor.pred_logits.max_abs, `pred_logits_train: ${errLogits.toExponential(2)} > ${(2 * floor.pred_logits.max_abs).toExponential(2)}`);
    assert.ok(errBoxes <= 2 * floor.pred_boxes.max_abs, `pred_boxes_train: ${errBoxes.toExponential(2)} > ${(2 * floor.pred_boxes.max_abs).toExponential(2)}`);
  });

  it('every output the losses read has its shape: 3 layers, pre, enc, denoising split 198 + 300', () => {
    const [dn, q] = JSON.parse(meta.dn_num_split!) as [number, number];
    assert.equal(record.denoising!.queries, dn);
    assert.equal(record.matching.queries, q);
    assert.equal(record.matching.layers.length, 3);
    assert.equal(record.denoising!.layers.length, 3);
    for (const [name, { dims }] of Object.entries(dfineTrainOutputRecord(record))) {
      assert.deepEqual(outputs[name]!.dims, dims, name);
      assert.ok((outputs[name]!.data as Float32Array).every(Number.isFinite), `${name} is finite`);
    }
    assert.deepEqual(outputs['dn.layer2.pred_corners']!.dims, [2, dn, 132]);
    // Layer 0's pre-boxes are every layer's reference: ref_points equal pre.pred_boxes.
    assert.equal(maxAbsDiff(outputs.ref_points!.data as Float32Array, outputs['pre.pred_boxes']!.data as Float32Array), 0);
    assert.equal(maxAbsDiff(outputs['dn.ref_points']!.data as Float32Array, outputs['dn.pre.pred_boxes']!.data as Float32Array), 0);
    assert.deepEqual([record.up, record.regScale], [0.5, 4]);
  });

  it('stem BatchNorm running statistics after the step (momentum 0.1, batch statistics)', () => {
    for (const stat of ['running_mean', 'running_var']) {
      const got = outputs[`running.${STEM_BN}.${stat}`]!.data as Float32Array;
      const want = train.get(`bn_after.${STEM_BN}.${stat}`)!.data as Float32Array;
      const moved = maxAbsDiff(train.get(`bn_before.${STEM_BN}.${stat}`)!.data as Float32Array, want);
      const err = maxAbsDiff(got, want);
      assert.ok(moved > 0, `${stat} moved in the reference step`);
      assert.ok(err <= 1e-3 * moved, `${stat}: ${err.toExponential(2)} from the reference, which moved ${moved.toExponential(2)}`);
    }
  });

  it("freezes exactly the original's frozen_params (requires_grad=False) and nothing else", () => {
    const frozen = JSON.parse(meta['frozen_params(requires_grad=False)']!) as string[];
    assert.deepEqual([...net.frozenParameterKeys()].sort(), [...frozen].sort());
    const flagged = [...net.namedTensors()].filter(([, p]) => p.kind === 'parameter' && !p.requiresGrad).map(([k]) => k);
    assert.deepEqual(flagged.sort(), [...frozen].sort());
  });

  it('with injectTopk the query rows follow the given proposal order (the loss graph reuses the assignment forward\'s)', async () => {
    const b = new GraphBuilder('dfine_train_forward_injected');
    b.training = true;
    const rec = emitDfineTrainForward(b, net, b.input('images', 'float32', [2, 3, 640, 640]), 2, { height: 640, width: 640, dnSlots: 198, injectTopk: true });
    b.output('boxes', rec.matching.layers[2]!.boxes, 'float32', [2, 300, 4]);
    b.output('dn_boxes', rec.denoising!.layers[2]!.boxes, 'float32', [2, 198, 4]);
    lowerComposites(b.graph);
    const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
    const own = outputs[DFINE_TOPK_INDEX]!.data as BigInt64Array;
    const reversed = new BigInt64Array(600);
    for (let img = 0; img < 2; img++) for (let p = 0; p < 300; p++) reversed[img * 300 + p] = own[img * 300 + 299 - p]!;
    const out = await session.run({ ...feeds, [DFINE_TOPK_INDEX]: new ort.Tensor('int64', reversed, [2, 300]) });
    await session.release();
    const got = out.boxes!.data as Float32Array;
    const base = outputs['layer2.pred_boxes']!.data as Float32Array;
    const flipped = new Float32Array(600 * 4);
    for (let img = 0; img < 2; img++) for (let p = 0; p < 300; p++) flipped.set(base.subarray((img * 300 + 299 - p) * 4, (img * 300 + 300 - p) * 4), (img * 300 + p) * 4);
    // Rounding only: the self-attention sums its keys in another order.
    assert.ok(maxAbsDiff(got, flipped) < 1e-5, `reversed proposals: rows off by ${maxAbsDiff(got, flipped).toExponential(2)}`);
    assert.ok(maxAbsDiff(out.dn_boxes!.data as Float32Array, outputs['dn.layer2.pred_boxes']!.data as Float32Array) < 1e-5);
  });

  it('refuses a train size that is not a multiple of 32', () => {
    const b = new GraphBuilder('x');
    b.training = true;
    assert.throws(() => emitDfineTrainForward(b, net, b.input('images', 'float32', [1, 3, 600, 640]), 1, { height: 600, width: 640, dnSlots: 0 }),
      (e: Error & { code?: string }) => e.code === 'invalid_imgsz' && /multiples of 32, got 600x640/.test(e.message));
  });
});

describe('D-FINE train-mode forward at other sizes and input sizes', () => {
  it('s at 320x480 with host-drawn, padded denoising: anchors and position embedding rebuilt, every output finite', async () => {
    const net = new DfineNetwork({ size: 's', nc: 80 });
    const rand = mulberry32(5);
    for (const [key, p] of net.namedTensors()) if (p.value.dtype === 'float32' && !key.endsWith('running_var')) (p.value.data as Float32Array).forEach((_, k, a) => { a[k] = (rand() - 0.5) * 0.1; });
    const draw = drawDenoising([{ labels: [1, 2], boxes: Float32Array.of(0.5, 0.5, 0.2, 0.3, 0.3, 0.6, 0.1, 0.1) }], { nc: 80, rand: mulberry32(6), slots: 210 });
    const b = new GraphBuilder('dfine_s_train');
    b.training = true;
    const rec = emitDfineTrainForward(b, net, b.input('images', 'float32', [1, 3, 320, 480]), 1, { height: 320, width: 480, dnSlots: draw.slots });
    const named = dfineTrainOutputRecord(rec);
    for (const [name, { value, dims }] of Object.entries(named)) b.output(name, value, 'float32', dims);
    lowerComposites(b.graph);
    const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
    const feeds: Record<string, ort.Tensor> = { images: new ort.Tensor('float32', Float32Array.from({ length: 3 * 320 * 480 }, () => rand()), [1, 3, 320, 480]) };
    for (const [name, t] of Object.entries(draw.inputs)) feeds[name] = toOrt(t);
    const out = await session.run(feeds);
    await session.release();
    assert.equal(draw.numDn, 200);
    for (const [name, { dims }] of Object.entries(named)) {
      assert.deepEqual(out[name]!.dims, dims, name);
      assert.ok((out[name]!.data as Float32Array).every(Number.isFinite), `${name} is finite`);
    }
  });
});

