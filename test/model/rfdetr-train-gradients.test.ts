/**
 * Gradients through RF-DETR n's train-mode forward on the original's train step
 * (rfdetrn_ref_train.safetensors): the assignment forward, the host matchings on its outputs, then
 * forward (the same proposal order) + loss + backward in one graph on ORT. loss_total,
 * grad_global_l2 and every stored grad.* (the first cross-attention's sampling offsets through
 * GridSample's grid gradient, the heads, refpoint_embed through the detached proposals, the patch
 * embedding through all 12 ViT layers, the projector's last norm) against the reference.
 *
 * Gates from a float64 evaluation of this graph (bench/rfdetr-grad-f64.ts, the interpreter, 4
 * minutes, not run here; test/model/rfdetr-train-float64.test.ts runs the same graph in float64 at
 * 64x64 in the suite). Relative L2 from float64, the reference | ours:
 *   sampling_offsets weight 2.85e-4 | 2.41e-4, bias 2.18e-4 | 1.80e-4; refpoint_embed 4.50e-4 |
 *   4.26e-4; patch embedding weight 3.40e-5 | 3.33e-5, bias 1.11e-5 | 1.11e-5; projector's last
 *   norm weight 1.20e-5 | 1.17e-5, bias 8.6e-6 | 7.9e-6; class_embed weight 1.9e-7 | 1.4e-7, bias
 *   1.2e-7 | 3.3e-7; bbox_embed.layers.2 weight 2.4e-7 | 1.5e-7, bias 1.4e-7 | 7.2e-8;
 *   grad_global_l2 1.2e-7 | 4.3e-7 (float64 6242.0818); loss_total 2.3e-8 | 2.3e-8.
 * Ours is 0.5 to 1.0 times the reference's distance on all but class_embed.bias (2.7 times), so
 * each gradient must lie within twice the reference's own distance of the reference. class_embed.bias
 * (81 sums over 2 layers x 2 images x 3900 queries) is 3.3e-7, about 5 float32 ulps, from float64:
 * one ulp on the input image moves ours by 2.3e-7, twice the reference's 1.2e-7, so a 2x gate there
 * would be luck; it is held to 3 times that move (the last check) and 4e-7 of the reference (ours
 * 3.1e-7). grad_global_l2 within 2e-6 of the reference (ours 5.5e-7), loss_total within 1e-5.
 *
 * The float32 noise check: the same graph on the image one ulp up (proposal order and matching
 * kept) moves every stored gradient by about as much as ours differs from the reference, and
 * each must lie within 3 times that move of the reference.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { relL2 } from '../helpers/compare.ts';
import { rfdetrFixtureStep, rfdetrTrainGraph, runGraphOn, ulpUp, type RfdetrFixtureStep } from '../helpers/rfdetr-train-graph.ts';

/** Twice the reference's relative L2 distance from float64 (bench/rfdetr-grad-f64.ts); class_embed.bias: see above. */
const GATES: Record<string, number> = {
  'transformer.decoder.layers.0.cross_attn.sampling_offsets.weight': 2 * 2.85e-4,
  'transformer.decoder.layers.0.cross_attn.sampling_offsets.bias': 2 * 2.18e-4,
  'class_embed.weight': 2 * 1.88e-7,
  'class_embed.bias': 4e-7,
  'bbox_embed.layers.2.weight': 2 * 2.37e-7,
  'bbox_embed.layers.2.bias': 2 * 1.39e-7,
  'refpoint_embed.weight': 2 * 4.5e-4,
  'backbone.0.encoder.encoder.embeddings.patch_embeddings.projection.weight': 2 * 3.4e-5,
  'backbone.0.encoder.encoder.embeddings.patch_embeddings.projection.bias': 2 * 1.11e-5,
  'backbone.0.projector.stages.0.1.weight': 2 * 1.2e-5,
  'backbone.0.projector.stages.0.1.bias': 2 * 8.56e-6,
};

describe('RF-DETR n gradients through the train-mode forward (vs the original train step)', () => {
  let step: RfdetrFixtureStep;
  let out: Record<string, HostTensor>;
  let nudged: Record<string, HostTensor>;
  let wrt: string[];

  before(async () => {
    step = await rfdetrFixtureStep();
    const g = await rfdetrTrainGraph(step, { gradients: true });
    wrt = g.wrt;
    [out, nudged] = (await runGraphOn(g.graph, [g.feeds, { ...g.feeds, images: ulpUp(g.feeds.images!) }])) as [Record<string, HostTensor>, Record<string, HostTensor>];
  });

  const ours = (name: string): Float32Array => out[name]!.data as Float32Array;
  const stored = (name: string): Float32Array => step.train.get(name)!.data as Float32Array;

  it('loss_total and grad_global_l2 as the reference', () => {
    const total = ours('loss_total')[0]!;
    const want = stored('loss_total')[0]!;
    assert.ok(Math.abs(total - want) <= 1e-5 * want, `loss_total ${total} vs ${want}`);
    let l2 = 0;
    for (const k of wrt) for (const v of ours(`grad.${k}`)) l2 += v * v;
    const wantL2 = stored('grad_global_l2')[0]!;
    console.log(`# grad_global_l2 ${Math.sqrt(l2)} vs ${wantL2} (${(Math.abs(Math.sqrt(l2) - wantL2) / wantL2).toExponential(2)})`);
    assert.ok(Math.abs(Math.sqrt(l2) - wantL2) <= 2e-6 * wantL2, `grad_global_l2 ${Math.sqrt(l2)} vs ${wantL2}`);
  });

  it('every stored gradient within twice the reference\'s own distance from float64 of the reference', () => {
    const lines: string[] = [];
    let checked = 0;
    for (const name of step.train.keys()) {
      if (!name.startsWith('grad.')) continue;
      assert.ok(out[name], `${name} is a gradient output`);
      const gate = GATES[name.slice('grad.'.length)];
      assert.ok(gate, `${name} has a gate`);
      const rel = relL2(ours(name), stored(name));
      lines.push(`${name} ${rel.toExponential(2)} (gate ${gate.toExponential(2)})`);
      assert.ok(rel <= gate, `${name}: relative L2 ${rel.toExponential(2)} over ${gate.toExponential(2)}`);
      checked++;
    }
    console.log(lines.map((l) => `# ${l}`).join('\n'));
    assert.equal(checked, 11);
  });

  it('every stored gradient within 3 times its float32 sensitivity (one ulp on the input) of the reference', () => {
    const lines: string[] = [];
    for (const name of step.train.keys()) {
      if (!name.startsWith('grad.')) continue;
      const rel = relL2(ours(name), stored(name));
      const move = relL2(nudged[name]!.data as Float32Array, ours(name));
      lines.push(`${name}: ours ${rel.toExponential(2)} from the reference, one input ulp moves it ${move.toExponential(2)}`);
      assert.ok(rel <= 3 * move, `${name}: ${rel.toExponential(2)} from the reference, over 3 x its one-ulp move ${move.toExponential(2)}`);
    }
    console.log(lines.map((l) => `# ${l}`).join('\n'));
  });
});
