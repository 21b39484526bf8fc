/**
 * Gradients through D-FINE's train-mode forward on the original's train step
 * (dfinen_ref_train.safetensors): the forward (stored denoising draws injected), the host matchings
 * on its outputs, then forward + loss + backward in one graph whose forward reuses the first one's
 * proposal order (injectTopk). Checks the gradient stops, the frozen parameters and padding_idx:
 * loss_total, grad_global_l2 and every stored grad.* against the reference.
 *
 * Tolerances from a float64 evaluation of the same graph (the interpreter, 18 minutes, not run
 * here): the reference's own distance from exact arithmetic is 4.3e-3 to 6.2e-3 (relative L2) on
 * the backbone's first block, 6.9e-4 on encoder.input_proj.0, 1.6e-3 on the first cross-attention's
 * offsets, and 1.5e-6 to 1.4e-5 on the heads; ours is 0.2 to 1.4 times that, except lab.bias of the
 * first block (ours 1.8e-3, the reference 1.0e-4) and denoising_class_embed (3.7e-6 vs 1.5e-6).
 * Gates: 1e-2 on the first block (about twice the reference's own distance), 1e-3 elsewhere (the
 * fixtures README's limit); loss_total within 1e-5 relative; grad_global_l2 within 1.5e-4 (float64:
 * 1602.041; the reference 1602.104 is 3.9e-5 from it, ours 1601.943 6.1e-5).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { appendGradients } from '../src/graph/autodiff/autodiff.ts';
import { probeShapes } from '../src/graph/autodiff/shapes.ts';
import { GraphBuilder } from '../src/graph/builder.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { lowerComposites } from '../src/graph/passes/lower-composites.ts';
import type { HostTensor } from '../src/graph/tensor.ts';
import { emitDfineLoss } from '../src/models/dfine/loss.ts';
import { dfineLossInputs, dfineLossInputSpecs, type DfineLossContext } from '../src/models/dfine/loss-targets.ts';
import type { ImageTargets } from '../src/models/dfine/matcher.ts';
import { DfineNetwork } from '../src/models/dfine/network.ts';
import { loadDfineStateDict } from '../src/models/dfine/state-dict.ts';
import { emitDfineTrainForward } from '../src/models/dfine/train-forward.ts';
import { DFINE_DN_INPUTS, DFINE_TOPK_INDEX, dfineTrainOutputRecord } from '../src/models/dfine/train-outputs.ts';
import { loadCheckpointFile } from '../src/weights/checkpoint.ts';
import { readSafetensors } from '../src/weights/safetensors.ts';
import { fixture } from './helpers/fixtures.ts';

const FIRST_BLOCK = 'grad.backbone.stages.0.blocks.0.';

function toOrt(t: HostTensor): ort.Tensor {
  return new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
}

/** Rows [class, cx, cy, w, h] in 640 input pixels (w or h = 0: padding), normalised and clamped as the original's on_forward. */
function targetsOf(rows: HostTensor): ImageTargets[] {
  const [batch, m] = rows.dims as [number, number];
  const d = rows.data as Float32Array;
  return Array.from({ length: batch }, (_, img) => {
    const labels: number[] = [];
    const boxes: number[] = [];
    for (let r = 0; r < m; r++) {
      const o = (img * m + r) * 5;
      if (!(d[o + 3]! > 0 && d[o + 4]! > 0)) continue;
      labels.push(d[o]!);
      for (let k = 1; k <= 4; k++) boxes.push(Math.min(1, Math.max(0, Math.fround(d[o + k]! / 640))));
    }
    return { labels, boxes: Float32Array.from(boxes) };
  });
}

describe('D-FINE n gradients through the train-mode forward (vs the original train step)', () => {
  let train: Map<string, HostTensor>;
  let out: ort.InferenceSession.OnnxValueMapType;
  let wrt: string[];
  let net: DfineNetwork;

  before(async () => {
    train = readSafetensors(new Uint8Array(readFileSync(fixture('dfinen_ref_train.safetensors'))), 'dfine train fixture').tensors;
    net = new DfineNetwork({ size: 'n', nc: 80 });
    loadDfineStateDict(net, (await loadCheckpointFile(fixture('dfinen_ref.pt'))).stateDict);
    const u8 = train.get('input_u8_2x3x640x640')!;
    const images: HostTensor = { dtype: 'float32', dims: u8.dims, data: Float32Array.from(u8.data as Uint8Array, (v) => Math.fround(v / 255)) };
    const dn = Object.fromEntries(Object.values(DFINE_DN_INPUTS).map((n) => [n, train.get(n)!]));
    const shape = { height: 640, width: 640, dnSlots: 198 };

    // The assignment forward and the host matchings.
    const fb = new GraphBuilder('dfine_assign_forward');
    fb.training = true;
    const rec = emitDfineTrainForward(fb, net, fb.input('images', 'float32', [2, 3, 640, 640]), 2, shape);
    for (const [name, { value, dims }] of Object.entries(dfineTrainOutputRecord(rec))) fb.output(name, value, 'float32', dims);
    fb.output(DFINE_TOPK_INDEX, rec.topk!, 'int64', [2, 300]);
    lowerComposites(fb.graph);
    let session = await ort.InferenceSession.create(serializeModel(fb.graph), { intraOpNumThreads: 2 });
    const fwd = await session.run({ images: toOrt(images), ...Object.fromEntries(Object.entries(dn).map(([k, t]) => [k, toOrt(t)])) });
    await session.release();
    const preds: Record<string, HostTensor> = {};
    for (const [k, t] of Object.entries(fwd)) preds[k] = { dtype: t.type as 'float32', dims: [...t.dims], data: t.data as Float32Array };
    const ctx: DfineLossContext = {
      batch: 2, nc: 80, layers: 3, queries: 300, regMax: rec.regMax, regScale: rec.regScale, project: rec.project,
      dn: { slots: 198, numDn: 198, numGroup: 33, positiveIdx: [0, 1].map((i) => Array.from(train.get(`dn.positive_idx.img${i}`)!.data as BigInt64Array, Number)) },
    };
    const { inputs: lossHost } = dfineLossInputs(preds, targetsOf(train.get('targets_2x4x5')!), ctx);

    // Forward (same proposal order) + loss + backward.
    const b = new GraphBuilder('dfine_train_gradients');
    b.training = true;
    const rec2 = emitDfineTrainForward(b, net, b.input('images', 'float32', [2, 3, 640, 640]), 2, { ...shape, injectTopk: true });
    const lossFeeds: Record<string, string> = {};
    for (const [name, spec] of Object.entries(dfineLossInputSpecs(ctx))) lossFeeds[name] = b.input(name, 'float32', spec.dims);
    const loss = emitDfineLoss(b, rec2, lossFeeds);
    b.output('loss_total', loss.total, 'float32', []);
    const feeds: Record<string, HostTensor> = { images, ...dn, ...lossHost, [DFINE_TOPK_INDEX]: preds[DFINE_TOPK_INDEX]! };
    wrt = [...net.namedTensors()].filter(([k, p]) => p.kind === 'parameter' && p.requiresGrad && b.graph.initializers.has(k)).map(([k]) => k);
    const lowered = b.graph.clone();
    lowerComposites(lowered);
    const shapes = await probeShapes(lowered, feeds);
    const grads = appendGradients(b.graph, { loss: loss.total, wrt, shapes });
    for (const k of wrt) b.output(`grad.${k}`, grads.get(k)!, 'float32', shapes.get(k)!.dims);
    lowerComposites(b.graph);
    session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
    out = await session.run(Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, toOrt(t)])));
    await session.release();
  });

  it('loss_total and grad_global_l2 as the reference', () => {
    const total = (out.loss_total!.data as Float32Array)[0]!;
    const want = (train.get('loss_total')!.data as Float32Array)[0]!;
    assert.ok(Math.abs(total - want) <= 1e-5 * want, `loss_total ${total} vs ${want}`);
    let l2 = 0;
    for (const k of wrt) for (const v of out[`grad.${k}`]!.data as Float32Array) l2 += v * v;
    const wantL2 = (train.get('grad_global_l2')!.data as Float32Array)[0]!;
    assert.ok(Math.abs(Math.sqrt(l2) - wantL2) <= 1.5e-4 * wantL2, `grad_global_l2 ${Math.sqrt(l2)} vs ${wantL2}`);
  });

  it('every stored gradient within its gate; the frozen parameters have none', () => {
    let checked = 0;
    for (const [name, t] of train) {
      if (!name.startsWith('grad.') || name === 'grad_global_l2') continue;
      const got = out[name]?.data as Float32Array | undefined;
      assert.ok(got, `${name} is a gradient output`);
      const want = t.data as Float32Array;
      let num = 0;
      let den = 0;
      for (let k = 0; k < want.length; k++) {
        num += (got[k]! - want[k]!) ** 2;
        den += want[k]! ** 2;
      }
      const rel = Math.sqrt(num / den);
      // encoder.input_proj.0.norm.bias feeds a train-mode BatchNorm: its true gradient is 0, both sides hold rounding (norm ~1e-6).
      if (Math.sqrt(den) < 1e-4) assert.ok(Math.sqrt(num) < 1e-5, `${name}: |diff| ${Math.sqrt(num).toExponential(2)}`);
      else assert.ok(rel <= (name.startsWith(FIRST_BLOCK) ? 1e-2 : 1e-3), `${name}: relative L2 ${rel.toExponential(2)}`);
      checked++;
    }
    assert.equal(checked, 21);
    for (const key of net.frozenParameterKeys()) assert.equal(out[`grad.${key}`], undefined, `${key} is frozen`);
  });
});
