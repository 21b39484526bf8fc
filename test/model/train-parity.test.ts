/**
 * Training-step parity with the original (../shared/fixtures/yolo9t_ref_train.safetensors), at the
 * issue's tolerances: losses within 1e-4 relative, every stored gradient within 1e-3 relative L2,
 * grad_global_l2 within 1e-3, BN running statistics after the step, 25 foreground anchors per image.
 *
 * Both evaluations of our training graph are held to them: the ONNX Runtime float32 step and the
 * float64 reference interpreter (exact arithmetic). The second shows that what is left between us
 * and the reference is the reference's own float32 rounding; the float32-vs-float64 check guards our
 * step's accuracy (ORT's approximate Sigmoid once put it at the wrong side of an assignment tie).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import type { Yolo9Network } from '../../src/models/yolo9/network.ts';
import { lossAndGradients, releaseCheckSessions, type LossAndGradients } from '../../src/train/check.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { relL2 } from '../helpers/compare.ts';
import { fixture } from '../helpers/fixtures.ts';

const LOSSES = [['total', 'loss_total'], ['box', 'loss_box'], ['dfl', 'loss_dfl'], ['cls', 'loss_cls']] as const;

/** Multiplies every input value by 1 + u, |u| <= 1e-7 (about one float32 ulp). */
function perturbed(x: Float32Array, seed: number): Float32Array {
  const out = Float32Array.from(x);
  let s = seed * 7919 + 1;
  for (let k = 0; k < out.length; k++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    out[k] = out[k]! * (1 + (s / 2147483648 - 0.5) * 2e-7);
  }
  return out;
}

describe('training step parity with the original', () => {
  let ref: Map<string, HostTensor>;
  let net: Yolo9Network;
  let ours: LossAndGradients;
  let exact: LossAndGradients;
  /** Event-loop timer ticks seen while the float64 evaluation ran. */
  let ticks = 0;
  const scalar = (k: string): number => (ref.get(k)!.data as Float32Array)[0]!;
  const globalL2 = (r: LossAndGradients): number => Math.sqrt(Object.values(r.gradients).reduce((s, g) => s + g.data.reduce((a, v) => a + v * v, 0), 0));

  const images = (data?: Float32Array) => ({ data: data ?? (ref.get('input_2x3x320x320')!.data as Float32Array), dims: ref.get('input_2x3x320x320')!.dims });
  const targets = () => ({ data: ref.get('targets_2x4x5')!.data as Float32Array, dims: ref.get('targets_2x4x5')!.dims });

  before(async () => {
    ref = readSafetensors(new Uint8Array(readFileSync(fixture('yolo9t_ref_train.safetensors'))), 'train fixture').tensors;
    net = yolo9Family.create({ size: 't', stateDict: (await loadCheckpointFile(fixture('yolo9t_ref.pt'))).stateDict }) as Yolo9Network;
    ours = await lossAndGradients(yolo9Family, net, parseDevice('cpu'), images(), targets());
    const timer = setInterval(() => ticks++, 50);
    exact = await lossAndGradients(yolo9Family, net, parseDevice('cpu'), images(), targets(), { precision: 'float64' });
    clearInterval(timer);
  });
  after(async () => {
    await releaseCheckSessions(net);
  });

  for (const [label, pick] of [['float32 ORT step', () => ours], ['float64 reference interpreter', () => exact]] as const) {
    describe(label, () => {
      it('assigns the reference number of foreground anchors', () => {
        assert.equal(pick().numFg, 25);
      });

      it('matches every loss component within 1e-4 relative', () => {
        for (const [name, key] of LOSSES) {
          const err = Math.abs(pick().loss[name] / scalar(key) - 1);
          assert.ok(err <= 1e-4, `${key}: ${pick().loss[name]} vs reference ${scalar(key)} (relative error ${err})`);
        }
        const r = pick().loss;
        assert.ok(Math.abs(r.total - (r.box + r.dfl + r.cls)) < 1e-5, 'total is the sum of the weighted components');
      });

      it('matches every stored gradient within 1e-3 relative L2, and grad_global_l2 within 1e-3', () => {
        let checked = 0;
        for (const [key, t] of ref) {
          if (!key.startsWith('grad.')) continue;
          const got = pick().gradients[key.slice(5)];
          assert.ok(got, `no gradient for ${key.slice(5)}`);
          assert.deepEqual(got.dims, t.dims);
          const err = relL2(got.data, t.data as Float32Array);
          assert.ok(err <= 1e-3, `${key}: relative L2 error ${err}`);
          checked++;
        }
        assert.ok(checked > 300, `only ${checked} reference gradients compared`);
        const err = Math.abs(globalL2(pick()) / scalar('grad_global_l2') - 1);
        assert.ok(err <= 1e-3, `grad_global_l2 ${globalL2(pick())} vs ${scalar('grad_global_l2')}`);
      });

      it('updates BatchNorm running statistics like the reference (momentum 0.03, unbiased variance)', () => {
        for (const stat of ['running_mean', 'running_var']) {
          const got = pick().runningStats[`backbone.conv0.bn.${stat}`]!.data;
          const want = ref.get(`after_step.backbone.conv0.bn.${stat}`)!.data as Float32Array;
          for (let k = 0; k < want.length; k++) assert.ok(Math.abs(got[k]! - want[k]!) <= 1e-6 * Math.max(1, Math.abs(want[k]!)), `${stat}[${k}] ${got[k]} vs ${want[k]}`);
        }
      });
    });
  }

  it('float32 step stays within 1e-5 (losses) and 1e-3 (gradients) of exact arithmetic', () => {
    for (const [name] of LOSSES) assert.ok(Math.abs(ours.loss[name] / exact.loss[name] - 1) <= 1e-5, `${name}: ${ours.loss[name]} vs exact ${exact.loss[name]}`);
    for (const [key, g] of Object.entries(exact.gradients)) {
      if (!ref.has(`grad.${key}`)) continue;
      const err = relL2(ours.gradients[key]!.data, g.data);
      assert.ok(err <= 1e-3, `${key}: relative L2 error ${err} against float64`);
    }
  });

  it('keeps the reference assignment under one-ulp input perturbations', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await lossAndGradients(yolo9Family, net, parseDevice('cpu'), images(perturbed(images().data, seed)), targets());
      assert.equal(r.numFg, 25);
      for (const [name, key] of LOSSES) assert.ok(Math.abs(r.loss[name] / scalar(key) - 1) <= 1e-4, `seed ${seed} ${key}: ${r.loss[name]} vs ${scalar(key)}`);
    }
  });

  it('leaves the weights and buffers untouched', async () => {
    const fresh = (await loadCheckpointFile(fixture('yolo9t_ref.pt'))).stateDict;
    for (const [key, p] of net.namedTensors()) {
      const want = fresh.get(key)!;
      assert.deepEqual(Array.from(p.value.data.slice(0, 8) as ArrayLike<number>), Array.from(want.data.slice(0, 8) as ArrayLike<number>), key);
    }
  });

  it('runs the float64 evaluation off the event loop (a worker thread)', () => {
    assert.ok(ticks >= 20, `only ${ticks} 50 ms timer ticks during a ~20 s evaluation`);
  });

  it('rejects an unknown precision', async () => {
    await assert.rejects(lossAndGradients(yolo9Family, net, parseDevice('cpu'), images(), targets(), { precision: 'float16' as never }), /precision must be 'float32' or 'float64'/);
  });
});
