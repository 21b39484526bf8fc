/**
 * `libreyolo profile run` at its default window (warmup 5 + steps 20) on a small input, with its
 * timeline.html in a browser; --batch -1, which measures the step's memory and fits the batch, then
 * applies the window check to it (exit 3 with the three remedies), in a child process of its own
 * with --repeat; and auto-batch's fit on its own. Split from train-profile.test.ts so the two long
 * files run side by side.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import type { Yolo9Network } from '../../src/models/yolo9/network.ts';
import { LibreYOLOError } from '../../src/errors.ts';
import type { ProfileAnalysis } from '../../src/profile/schema.ts';
import { PHASE_COLOURS } from '../../src/profile/timeline-html.ts';
import { runTrainProfile } from '../../src/app/profile-run.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { fitAutoBatch, probeAutoBatch } from '../../src/train/autobatch.ts';
import { TRAIN_DEFAULTS } from '../../src/train/config.ts';
import { runCli } from '../helpers/cli.ts';
import { fixture } from '../helpers/fixtures.ts';
import { runTrainCli, useProfileRunData } from '../helpers/profile-run-data.ts';
import { checkTimeline } from '../helpers/timeline-browser.ts';

/**
 * The CLI process of a `profile run` whose ORT work all runs in child processes: 131 MB measured
 * (its probe child 855 MB); with the probe in the CLI process it peaked at 576-875 MB.
 */
const PARENT_RSS_BOUND_MB = 400;

describe('libreyolo profile run: the default window and --batch -1', () => {
  const data = useProfileRunData();
  const { tmp } = data;

  it('runs the default window (warmup 5 + steps 20) and says what it was asked', async () => {
    const run = await runTrainCli(['profile', 'run', data.yaml, '--weights', 'yolo9t', '--device', 'cpu', '--batch', '2', '--imgsz', '64',
      '--workers', '1', '--project', 'runs/default-window', '--threads', '2'], tmp);
    assert.equal(run.code, 0, run.stderr);
    const dir = join(tmp, 'runs', 'default-window', 'prof');
    for (const f of ['profile.json', 'profile_trace.json', 'profile_summary.json']) assert.ok(existsSync(join(dir, f)), f);
    const summary = JSON.parse(readFileSync(join(dir, 'profile_summary.json'), 'utf8')) as { window: { warmup: number; real_steps: number; synced_steps: number } };
    assert.deepEqual(summary.window, { warmup: 5, real_steps: 10, synced_steps: 10 });
    assert.match(run.stderr, /workers=1\b/);
    assert.match(run.stderr, /window: warmup 5 \+ steps 20 iterations of the epoch's 26 \(52 train images\)/);
    assert.doesNotMatch(run.stderr, /workers=8|\d+ epochs/);
    assert.ok(!existsSync(join(dir, 'weights')));
    // timeline.html in a real browser: the training phases' colours, the panel's figures, wheel zoom.
    const profile = JSON.parse(readFileSync(join(dir, 'profile.json'), 'utf8')) as ProfileAnalysis;
    await checkTimeline(join(dir, 'timeline.html'), profile, tmp, [PHASE_COLOURS.forward!, PHASE_COLOURS.backward!, PHASE_COLOURS.optimizer!]);
  });

  it('--batch -1 fits ~70% of the device memory (the seed), then the window check applies to that batch', async () => {
    const lines: string[] = [];
    const err = await runTrainProfile({
      data: data.small, weights: 'yolo9t', size: 't', batch: -1, imgsz: 64, workers: 0, amp: false, steps: 4, warmup: 2, repeat: 1,
      device: 'cpu', project: join(tmp, 'runs', 'auto'), cwd: tmp, threads: 2, log: (l) => lines.push(l),
    }).then(() => null, (e: unknown) => e);
    assert.match(lines.join('\n'), /^AutoBatch: batch=\d+ fits 70% of [\d.]+ GB on cpu/m);
    assert.ok(err instanceof LibreYOLOError && err.code === 'profile_not_produced', String(err));
    assert.equal(err.exitCode, 3);
    assert.match(err.message, /^no profile produced for run 0: the window \(warmup 2 \+ steps 4\) never filled \(8 train images at batch \d+ give 1 iterations per epoch; the window must fit in one epoch\)\. Use a larger dataset, fewer --steps, or a smaller --batch\.$/);
    assert.ok(!existsSync(join(tmp, 'runs', 'auto')));
  });

  it('--batch -1 with --repeat probes the batch in a process of its own, as the trials run', async () => {
    const run = await runCli(['profile', 'run', data.small, '--weights', 'yolo9t', '--device', 'cpu', '--batch', '-1', '--imgsz', '64',
      '--steps', '4', '--warmup', '2', '--workers', '0', '--repeat', '2', '--project', 'runs/auto-repeat'], tmp, {}, { timeoutMs: 900_000, rss: true });
    assert.equal(run.code, 3, run.stderr);
    assert.match(run.stderr, /^AutoBatch: batch=\d+ fits 70% of [\d.]+ GB on cpu/m, 'the probe logs through the parent');
    const probe = Math.max(0, ...run.childPeakRssMb!);
    // The probe's train-step sessions live and die in the child; the CLI process only waits for it.
    assert.ok(run.peakRssMb! < PARENT_RSS_BOUND_MB && probe > run.peakRssMb!,
      `CLI process peak RSS ${run.peakRssMb!.toFixed(0)} MB, the probe's process ${probe.toFixed(0)} MB (bound ${PARENT_RSS_BOUND_MB} MB for the CLI process)`);
  });
});

describe('libreyolo profile run: a recipe that accumulates', () => {
  const data = useProfileRunData();

  it('RF-DETR (nbs 16) at batch 2 checks the window rounded to its 8-batch accumulation before training', async () => {
    // Before, the check took the asked window (1 + 2 <= the epoch's 4 iterations), the trainer rounded
    // it to 8 + 8, and the run trained the whole epoch (~2 min at 224) before exit 3 said to use fewer --steps.
    const weights = join(data.tmp, 'LibreRFDETRn.pt');
    copyFileSync(fixture('rfdetrn_ref.pt'), weights);
    const lines: string[] = [];
    const t0 = performance.now();
    const err = await runTrainProfile({
      data: data.small, weights, size: 'n', batch: 2, imgsz: 224, workers: 0, amp: false, steps: 2, warmup: 1, repeat: 1,
      device: 'cpu', project: join(data.tmp, 'runs', 'rfdetr'), cwd: data.tmp, threads: 2, log: (l) => lines.push(l),
    }).then(() => null, (e: unknown) => e);
    const seconds = (performance.now() - t0) / 1000;
    assert.ok(err instanceof LibreYOLOError && err.code === 'profile_not_produced', String(err));
    assert.equal(err.exitCode, 3);
    assert.equal(err.message, 'no profile produced for run 0: the window (warmup 1 + steps 2) never filled (8 train images at batch 2 give 4 iterations per epoch; ' +
      'the recipe accumulates 8 batches per optimizer step, so the window rounds up to warmup 8 + steps 8; the window must fit in one epoch). ' +
      'Use a larger dataset or a larger --batch (fewer batches to accumulate).');
    assert.deepEqual(lines, [], 'nothing trained');
    assert.ok(!existsSync(join(data.tmp, 'runs', 'rfdetr', 'prof')));
    assert.ok(seconds < 60, `${seconds.toFixed(1)} s`);
  });
});

describe('auto-batch (batch=-1)', () => {
  it('fits the original line: largest power of two strictly below the budgeted batch', () => {
    // 100 MB fixed + 50 MB per image; 60% of 1000 MB -> raw = (600 - 100) / 50 = 10 -> 8
    const pts = [1, 2, 4].map((b) => ({ batch: b, mb: 100 + 50 * b }));
    assert.equal(fitAutoBatch(pts, 1000), 8);
    assert.equal(fitAutoBatch(pts, 1100), 8); // raw 11.2
    assert.equal(fitAutoBatch(pts, 2000), 16); // raw 22
    assert.equal(fitAutoBatch(pts, 200), 1); // raw <= 2
    assert.equal(fitAutoBatch([pts[0]!], 1000), null);
    assert.equal(fitAutoBatch([{ batch: 1, mb: 200 }, { batch: 2, mb: 150 }], 1000), null);
    assert.equal(fitAutoBatch([{ batch: 1, mb: 0.001 }, { batch: 2, mb: 0.002 }], 1e9), 1024);
  });

  it('measures real train steps on the CPU', async () => {
    // The network and shapes the profile runs above probed (3 classes, 64 px, the default 100 labels),
    // so these sessions load their optimised graphs from the run's cache.
    const net = yolo9Family.create({ size: 't', nc: 3 }) as Yolo9Network;
    // A high-water mark set before the probe (here a 1 GB buffer, touched then dropped) must not
    // flatten its line: each probe reads its own step's peak.
    let ballast: Buffer | null = Buffer.alloc(1e9, 1);
    assert.equal(ballast[ballast.length - 1], 1);
    ballast = null;
    const r = await probeAutoBatch(yolo9Family, net, { device: parseDevice('cpu'), imgsz: 64, maxTargets: TRAIN_DEFAULTS.max_labels, probe: [1, 2] });
    assert.equal(r.points.length, 2);
    assert.ok(r.points[1]!.mb > r.points[0]!.mb, JSON.stringify(r.points));
    // On the CPU a point is the process's peak RSS over the step (what the run will hold: Node, ORT,
    // the weights), not ORT's arena peak (12 MB for yolo9t at 64 px).
    assert.ok(r.points[0]!.mb >= 100, `b1 ${r.points[0]!.mb.toFixed(0)} MB: an arena figure, not the process's peak RSS`);
    // 64 px images need little memory: the fit lands high, clamped to 1024 as the original
    assert.ok(r.batch >= 1 && r.batch <= 1024 && (r.batch & (r.batch - 1)) === 0, String(r.batch));
    assert.match(r.message, /^AutoBatch: batch=\d+ fits 60% of [\d.]+ GB on cpu \(probe b1: \d+ MB, b2: \d+ MB\)\.$/);
  });
});
