/**
 * Gradients through RF-DETR n's train-mode forward on the original's train step
 * (rfdetrn_ref_train.safetensors): the assignment forward, the host matchings on its outputs, then
 * forward (the same proposal order) + loss + backward in one graph on ORT. loss_total, grad_global_l2
 * within 1e-4 relative, and every stored grad.* (the first cross-attention's sampling offsets
 * through GridSample's grid gradient, the heads, refpoint_embed through the detached proposals,
 * the patch embedding through all 12 ViT layers, the projector's last norm) within 1e-3 relative
 * L2 of the reference, the fixtures README's gate.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { relL2 } from '../helpers/compare.ts';
import { rfdetrFixtureStep, rfdetrTrainGraph, runGraph, type RfdetrFixtureStep } from '../helpers/rfdetr-train-graph.ts';

describe('RF-DETR n gradients through the train-mode forward (vs the original train step)', () => {
  let step: RfdetrFixtureStep;
  let out: Record<string, HostTensor>;
  let wrt: string[];

  before(async () => {
    step = await rfdetrFixtureStep();
    const g = await rfdetrTrainGraph(step, { gradients: true });
    wrt = g.wrt;
    out = await runGraph(g.graph, g.feeds);
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
    assert.ok(Math.abs(Math.sqrt(l2) - wantL2) <= 1e-4 * wantL2, `grad_global_l2 ${Math.sqrt(l2)} vs ${wantL2}`);
  });

  it('every stored gradient within 1e-3 relative L2', () => {
    const lines: string[] = [];
    let checked = 0;
    for (const name of step.train.keys()) {
      if (!name.startsWith('grad.')) continue;
      assert.ok(out[name], `${name} is a gradient output`);
      const rel = relL2(ours(name), stored(name));
      lines.push(`${name} ${rel.toExponential(2)}`);
      assert.ok(rel <= 1e-3, `${name}: relative L2 ${rel.toExponential(2)}`);
      checked++;
    }
    console.log(lines.map((l) => `# ${l}`).join('\n'));
    assert.equal(checked, 11);
  });
});
