/**
 * Multi-scale RF-DETR training in one ONNX Runtime session: RF-DETR n (rfdetrn_ref.pt) at 64 and 96
 * (16 and 36 tokens: k < 300, the first 13k query slots on the proposals, the rest raw) and 288
 * (324 tokens: k = 300) from one step session gives, at each size, the loss and gradients of the
 * static graph built for that size alone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { rfdetrFamily } from '../../src/models/rfdetr/family.ts';
import { RfdetrNetwork } from '../../src/models/rfdetr/network.ts';
import { loadRfdetrStateDict } from '../../src/models/rfdetr/state-dict.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { lossAndGradients, releaseCheckSessions } from '../../src/train/check.ts';
import { openStepRunner } from '../../src/train/runner.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { gradientDistances } from '../helpers/compare.ts';
import { fixture } from '../helpers/fixtures.ts';

const cpu = parseDevice('cpu');
const [B, M] = [1, 8];

function targets(): HostTensor {
  const data = new Float32Array(B * M * 5);
  for (let r = 0; r < B * M; r++) data[r * 5] = -1;
  data.set([3, 0.1, 0.2, 0.5, 0.6, 17, 0.4, 0.4, 0.9, 0.8], 0);
  return { dtype: 'float32', dims: [B, M, 5], data };
}

function images(side: number, seed: number): HostTensor {
  const rand = mulberry32(seed);
  return { dtype: 'float32', dims: [B, 3, side, side], data: Float32Array.from({ length: B * 3 * side * side }, () => 2 * rand() - 1) };
}

describe('RF-DETR n: one train session for 64, 96 and 288', () => {
  it('opens one session and gives each size the static graph\'s loss and gradients', async () => {
    const net = new RfdetrNetwork({ size: 'n', nc: 80, fused: false });
    loadRfdetrStateDict(net, (await loadCheckpointFile(fixture('rfdetrn_ref.pt'))).stateDict, { peGrid: 24 });
    const runner = await openStepRunner(rfdetrFamily, net, { device: cpu, threads: 2, imgsz: [64, 64], sizes: [[96, 96], [288, 288]], maxTargets: M, optimizationLevel: 'disabled' });
    try {
      const t = targets();
      for (const [k, side] of [288, 64, 96].entries()) {
        const batch = { images: images(side, 10 + k), targets: t };
        const t0 = performance.now();
        const shared = await runner.run(batch);
        const ms = performance.now() - t0;
        const alone = await lossAndGradients(rfdetrFamily, net, cpu, { data: batch.images.data as Float32Array, dims: batch.images.dims }, { data: t.data as Float32Array, dims: t.dims }, { threads: 2 });
        await releaseCheckSessions(net);
        // Gradients that are rounding noise themselves (the attention key biases: softmax ignores them) compare absolutely.
        const { worst, offAbsolute } = gradientDistances(shared.gradients, (key) => alone.gradients[key]!.data, 1e-6, 1e-6);
        assert.deepEqual(offAbsolute, []);
        console.log(`# rfdetr n ${side}: loss ${shared.loss.total} (static ${alone.loss.total}), worst gradient relL2 ${worst.toExponential(2)}, step ${ms.toFixed(0)} ms`);
        assert.ok(Math.abs(shared.loss.total - alone.loss.total) <= 1e-6 * Math.abs(alone.loss.total), `${side}: ${shared.loss.total} vs ${alone.loss.total}`);
        for (const [name, v] of Object.entries(alone.loss)) assert.ok(Math.abs(shared.loss[name]! - v) <= 1e-6 * Math.abs(v) + 1e-7, `${side} ${name}: ${shared.loss[name]} vs ${v}`);
        assert.ok(worst < 1e-5, `${side}: worst gradient relL2 ${worst}`);
      }
      assert.equal(runner.opened, 1);
      assert.deepEqual(runner.steps.get(B)!.sizes, [[64, 64], [96, 96], [288, 288]]);
    } finally {
      await runner.close();
    }
  });
});
