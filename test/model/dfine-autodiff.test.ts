/**
 * The autodiff machinery end to end on the D-FINE-n eval graph (reference checkpoint, the stored
 * 640x640 input, batch 1): loss = sum(pred_logits * R1) + sum(pred_boxes * R2), gradients w.r.t.
 * parameters spread over the network (score head, LQE, deformable attention offsets and weights,
 * the query-selection LayerNorm, the AIFI FFN, an encoder BatchNorm, the backbone stem), so the
 * backward pass crosses GridSample (grid and input), GatherND/Gather of the top-k proposals, TopK
 * values, LayerNormalization, Erf, inference BatchNormalization, MaxPool (ceil_mode) and Pad.
 *
 * 1. ONNX Runtime float32 and the float64 interpreter run the same gradient graph; each gradient's
 *    relative L2 distance must stay within twice the float32 floor, measured in the same test as
 *    how far ORT's own gradient moves when the input image moves by 1 ulp (at least 1e-5).
 * 2. A directional finite difference in float64 (one random direction over the decoder-side
 *    parameters, scaled per parameter so each contributes alike) matches the float64 analytic
 *    gradient (eps 1e-6: a larger step crosses ReLU/Clip kinks, at 1e-4 the error was 3.7e-5).
 *    Along encoder or backbone parameters it was only measured at eps 1e-4 (6e-4 to 8e-4,
 *    docs/training-numerics.md), so it is not asserted for them.
 * The proposal indices are fed (`injectTopk`, the original's own top-k) so that both evaluators and
 * every perturbed forward select the same queries: a near-tie would otherwise swap rows.
 * Slow by nature (~3-4 min on an idle machine: the interpreter runs the backward pass at 640).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { appendGradients } from '../../src/graph/autodiff/autodiff.ts';
import { probeShapes } from '../../src/graph/autodiff/shapes.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import type { F64 } from '../../src/graph/interpret/array.ts';
import { interpret, toF64 } from '../../src/graph/interpret/interpreter.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { DfineNetwork } from '../../src/models/dfine/network.ts';
import { loadDfineStateDict } from '../../src/models/dfine/state-dict.ts';
import { seededRandom } from '../../src/models/yolo9/init.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fixture } from '../helpers/fixtures.ts';

const WRT = [
  'decoder.dec_score_head.2.bias',
  'decoder.decoder.lqe_layers.2.reg_conf.layers.0.weight',
  'decoder.decoder.layers.0.cross_attn.sampling_offsets.weight',
  'decoder.decoder.layers.0.cross_attn.attention_weights.bias',
  'decoder.enc_output.norm.weight',
  'encoder.encoder.0.layers.0.linear1.weight',
  'encoder.input_proj.1.norm.weight',
  'backbone.stem.stem1.conv.weight',
];
/** The parameters of the float64 directional difference (see the header). */
const FD_WRT = WRT.filter((w) => w.startsWith('decoder.'));

function relL2(a: ArrayLike<number>, ref: ArrayLike<number>): number {
  let d = 0;
  let n = 0;
  for (let k = 0; k < ref.length; k++) {
    d += (a[k]! - ref[k]!) ** 2;
    n += ref[k]! ** 2;
  }
  return Math.sqrt(d / n);
}

/** Moves every positive pixel by one float32 ulp up or down. */
function ulpJitter(x: Float32Array, rand: () => number): Float32Array {
  const out = Float32Array.from(x);
  const bits = new Int32Array(out.buffer);
  for (let k = 0; k < out.length; k++) if (out[k]! > 0) bits[k]! += rand() < 0.5 ? 1 : -1;
  return out;
}

describe('autodiff through the D-FINE-n eval graph', () => {
  it('ORT float32 gradients agree with the float64 interpreter within the float32 floor; a float64 directional difference matches', async () => {
    const io = readSafetensors(new Uint8Array(readFileSync(fixture('dfinen_ref_io.safetensors'))), 'dfine io fixture').tensors;
    const net = new DfineNetwork({ size: 'n', nc: 80 });
    loadDfineStateDict(net, (await loadCheckpointFile(fixture('dfinen_ref.pt'))).stateDict);
    const b = new GraphBuilder('dfine-grad');
    net.emitGraph(b, { batch: 1, injectTopk: true });
    const rand = seededRandom(7);
    const weights = (dims: number[]): string => b.constant('R', { dtype: 'float32', dims, data: Float32Array.from({ length: dims.reduce((p, q) => p * q, 1) }, () => rand() * 2 - 1) });
    const total = (v: string): string => b.op('ReduceSum', [v], { keepdims: { i: 0 } });
    const loss = b.op('Add', [total(b.op('Mul', ['pred_logits', weights([1, 300, 80])])), total(b.op('Mul', ['pred_boxes', weights([1, 300, 4])]))]);
    b.graph.outputs = [];
    b.output('loss', loss, 'float32', []);
    const u8 = io.get('input_u8_1x3x640x640')!;
    const images: HostTensor = { dtype: 'float32', dims: u8.dims, data: Float32Array.from(u8.data as Uint8Array, (v) => Math.fround(v / 255)) };
    const topk = io.get('enc_topk_token_index_1x3x640x640')!;
    const forward = b.graph.clone();
    const shapes = await probeShapes(b.graph, { images, enc_topk_index: topk });
    const grads = appendGradients(b.graph, { loss: 'loss', wrt: WRT, shapes });
    for (const w of WRT) b.output(`grad_${w}`, grads.get(w)!, 'float32', shapes.get(w)!.dims);

    const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
    const run = (x: Float32Array): Promise<ort.InferenceSession.ReturnType> => session.run({
      images: new ort.Tensor('float32', x, images.dims), enc_topk_index: new ort.Tensor('int64', topk.data as BigInt64Array, topk.dims),
    });
    const fast = await run(images.data as Float32Array);
    const jittered = await run(ulpJitter(images.data as Float32Array, rand));
    await session.release();

    const exact = interpret(b.graph, { images, enc_topk_index: topk });
    const report: string[] = [];
    for (const w of WRT) {
      const got = fast[`grad_${w}`]!.data as Float32Array;
      const err = relL2(got, exact[`grad_${w}`]!.data);
      const floor = Math.max(relL2(jittered[`grad_${w}`]!.data as Float32Array, got), 1e-5);
      report.push(`${w}: ${err.toExponential(2)} (floor ${floor.toExponential(2)})`);
      assert.ok(err <= 2 * floor, `${w}: float32 vs float64 gradient ${err.toExponential(2)} > 2 x floor ${floor.toExponential(2)}\n${report.join('\n')}`);
    }
    const lossRel = Math.abs((fast.loss!.data[0] as number) - exact.loss!.data[0]!) / Math.abs(exact.loss!.data[0]!);
    assert.ok(lossRel <= 1e-5, `loss float32 vs float64: ${lossRel}`);

    // Directional difference in float64: every parameter moves by eps * sign / |grad| (per parameter).
    const fw = forward.clone();
    const base: Record<string, F64> = { images: toF64(images), enc_topk_index: toF64(topk) };
    const direction = new Map<string, Float64Array>();
    let analytic = 0;
    for (const w of FD_WRT) {
      const t = fw.initializers.get(w)!;
      fw.initializers.delete(w);
      fw.inputs.push({ name: w, dtype: 'float32', shape: t.dims });
      const g = exact[`grad_${w}`]!.data;
      const norm = Math.sqrt(g.reduce((s, v) => s + v * v, 0));
      const v = Float64Array.from(g, () => (rand() < 0.5 ? -1 : 1) / norm);
      direction.set(w, v);
      for (let k = 0; k < v.length; k++) analytic += g[k]! * v[k]!;
    }
    const eps = 1e-6;
    const lossAt = (sign: number): number => {
      const feeds: Record<string, F64> = { ...base };
      for (const w of FD_WRT) {
        const p = toF64(forward.initializers.get(w)!);
        const v = direction.get(w)!;
        for (let k = 0; k < v.length; k++) p.data[k] += sign * eps * v[k]!;
        feeds[w] = p;
      }
      return interpret(fw, feeds, ['loss']).loss!.data[0]!;
    };
    const numeric = (lossAt(1) - lossAt(-1)) / (2 * eps);
    const fdRel = Math.abs(numeric - analytic) / Math.abs(numeric);
    assert.ok(fdRel <= 1e-6, `directional derivative: finite difference ${numeric}, analytic ${analytic} (relative ${fdRel})`);
    console.log(`# ${report.join('\n# ')}\n# loss relative ${lossRel.toExponential(2)}; directional fd ${numeric} vs analytic ${analytic} (relative ${fdRel.toExponential(2)})`);
  });
});
