/**
 * Multi-scale D-FINE training in one ONNX Runtime session: the step runner serving 320 and 256
 * from one session gives, at each size, the loss of the static graph built for that size alone
 * (bit for bit here; the gradients to float32 rounding: the shared graph stages every multi-axis
 * sum), for D-FINE n and DEIM n; and `multi_scale=true` training on the circles dataset draws
 * several sides of D-FINE's list per batch and opens one train session for all of them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { deimFamily, dfineFamily } from '../../src/models/dfine/family.ts';
import { trainingHooks, type ModelFamily } from '../../src/models/registry.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { lossAndGradients, releaseCheckSessions } from '../../src/train/check.ts';
import { openStepRunner } from '../../src/train/runner.ts';
import { mulberry32 } from '../../src/util/random.ts';
import { gradientDistances } from '../helpers/compare.ts';
import { trainOnCircles } from '../helpers/train-e2e.ts';

const cpu = parseDevice('cpu');
const [B, M] = [2, 8];

function targets(): HostTensor {
  const data = new Float32Array(B * M * 5);
  for (let r = 0; r < B * M; r++) data[r * 5] = -1;
  data.set([3, 0.1, 0.2, 0.5, 0.6, 1, 0.4, 0.4, 0.9, 0.8], 0);
  data.set([2, 0.2, 0.3, 0.7, 0.9], M * 5);
  return { dtype: 'float32', dims: [B, M, 5], data };
}

function images(side: number, seed: number): HostTensor {
  const rand = mulberry32(seed);
  return { dtype: 'float32', dims: [B, 3, side, side], data: Float32Array.from({ length: B * 3 * side * side }, () => rand()) };
}

for (const family of [dfineFamily, deimFamily] as ModelFamily[]) {
  describe(`${family.displayName} n: one train session for 320 and 256`, () => {
    it('opens one session and gives each size the static graph\'s loss', async () => {
      const net = family.create({ size: 'n' });
      trainingHooks(family).initialize(net, 0);
      const runner = await openStepRunner(family, net, { device: cpu, threads: 2, imgsz: [320, 320], sizes: [[256, 256]], maxTargets: M, optimizationLevel: 'disabled' });
      try {
        const t = targets();
        for (const [k, side] of [320, 256, 320].entries()) {
          const draws = trainingHooks(family).assigner!.draws!.make(t, { batch: B, height: side, width: side, maxTargets: M }, net.nc, mulberry32(k));
          const batch = { images: images(side, 10 + k), targets: t, draws };
          const t0 = performance.now();
          const shared = await runner.run(batch);
          const ms = performance.now() - t0;
          const alone = await lossAndGradients(family, net, cpu, { data: batch.images.data as Float32Array, dims: batch.images.dims }, { data: t.data as Float32Array, dims: t.dims }, { draws, threads: 2 });
          await releaseCheckSessions(net);
          // Gradients that are rounding noise themselves (AIFI's last LayerNorm bias: ~1e-8) compare absolutely.
          const { worst, offAbsolute } = gradientDistances(shared.gradients, (key) => alone.gradients[key]!.data, 1e-6, 1e-7);
          assert.deepEqual(offAbsolute, []);
          console.log(`# ${family.name} ${side}: loss ${shared.loss.total} (static ${alone.loss.total}), worst gradient relL2 ${worst.toExponential(2)}, step ${ms.toFixed(0)} ms`);
          assert.ok(Math.abs(shared.loss.total - alone.loss.total) <= 1e-6 * Math.abs(alone.loss.total), `${side}: ${shared.loss.total} vs ${alone.loss.total}`);
          for (const [name, v] of Object.entries(alone.loss)) assert.ok(Math.abs(shared.loss[name]! - v) <= 1e-6 * Math.abs(v) + 1e-7, `${side} ${name}: ${shared.loss[name]} vs ${v}`);
          assert.ok(worst < 1e-4, `${side}: worst gradient relL2 ${worst}`);
        }
        assert.equal(runner.opened, 1);
        assert.deepEqual(runner.steps.get(B)!.sizes, [[320, 320], [256, 256]]);
        await assert.rejects(runner.run({ images: images(288, 1), targets: targets() }), /train step expects images \[2,3,320,320\] or \[2,3,256,256\], got \[2,3,288,288\]/);
      } finally {
        await runner.close();
      }
    });
  });
}

describe('D-FINE n multi_scale=true training', () => {
  it('draws several sides of its list per batch and trains them in one session', async () => {
    const run = await trainOnCircles('libreyolo-dfine-ms-', 'dfinen', 640, { epochs: 1, batch: 2, multi_scale: true, aug_stop_epoch_ratio: 1, threads: 2 });
    const summary = JSON.parse(readFileSync(join(run.results.save_dir, 'summary.json'), 'utf8')) as { multi_scale: { sizes: number[]; train_sessions: number; batches_per_size: Record<string, number> } };
    const ms = summary.multi_scale;
    console.log(`# multi-scale run: ${JSON.stringify(ms)}, ${run.seconds.toFixed(1)} s`);
    assert.deepEqual([...ms.sizes].sort((a, b) => a - b), [480, 512, 544, 576, 608, 640, 672, 704, 736, 768, 800]);
    assert.equal(ms.train_sessions, 1);
    const drawn = Object.entries(ms.batches_per_size);
    assert.equal(drawn.reduce((n, [, c]) => n + c, 0), 4);
    assert.ok(drawn.length >= 2, `sides drawn: ${JSON.stringify(ms.batches_per_size)}`);
    for (const l of run.results.epoch_losses) assert.ok(Number.isFinite(l));
  });
});
