/**
 * `libreyolo profile run`: a real training profile on a synthetic dataset (CPU, batch 4, 320 px,
 * warmup 2 + 4 steps, three trials, each in its own process with bounded peak RSS), read back by
 * the profile readers; fresh weights offline; the window that cannot fill one epoch exits 3 with
 * the three remedies before any model work; run names that never overwrite. The default window and
 * --batch -1 are in train-profile-window.test.ts (apart, so the two files run side by side).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runNames } from '../../src/app/profile-run.ts';
import { TrainStepProfiler, WindowNotFilled } from '../../src/profile/train-profiler.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { runTrainCli, useProfileRunData } from '../helpers/profile-run-data.ts';

describe('libreyolo profile run', () => {
  const data = useProfileRunData();
  const { tmp } = data;

  it('profiles training steps and the readers work on the result', async () => {
    const run = await runTrainCli(['profile', 'run', data.yaml, '--weights', 'yolo9t', '--device', 'cpu', '--batch', '4', '--imgsz', '320',
      '--steps', '4', '--warmup', '2', '--workers', '1', '--repeat', '3', '--project', 'runs/profile'], tmp);
    assert.equal(run.code, 0, run.stderr);
    const dir = join(tmp, 'runs', 'profile');
    const aggregate = join(dir, 'profile_repeat.json');
    assert.match(run.stdout, /^img\/s: [\d.]+ \+\/- [\d.]+ \(n=3\)  \|  \S/m);
    assert.ok(run.stdout.includes(`profile: ${aggregate}`), run.stdout);
    for (const t of [1, 2, 3]) assert.ok(run.stderr.includes(`profile run: trial ${t}/3: yolo9-t on cpu`), 'each trial logs its banner through the parent');
    for (const trial of ['prof_0', 'prof_1', 'prof_2']) {
      for (const f of ['profile.json', 'profile_trace.json', 'profile_summary.json']) assert.ok(existsSync(join(dir, trial, f)), `${trial}/${f}`);
      assert.ok(!existsSync(join(dir, trial, 'weights')), 'a profile-only run leaves no (empty) weights/ folder');
    }
    const a = JSON.parse(readFileSync(aggregate, 'utf8')) as Record<string, unknown>;
    assert.equal(a.schema, 'libreyolo.profile.analysis/v1');
    assert.equal(a.img_per_s_n, 3);
    assert.equal((a.aggregation as { n: number }).n, 3);
    // Each trial runs in a fresh process, so none starts on the memory an earlier one left behind:
    // in one process the in-window peak RSS rose 2965 -> 3680 -> 4187 MB (x1.41) at these sizes;
    // apart it was 2806 / 2858 / 2871 MB.
    const peaks = ['prof_0', 'prof_1', 'prof_2'].map((t) => (JSON.parse(readFileSync(join(dir, t, 'profile.json'), 'utf8')) as { peak_rss_mb: number }).peak_rss_mb);
    assert.ok(peaks.every((mb) => mb > 0), String(peaks));
    assert.ok(Math.max(...peaks.slice(1)) <= 1.15 * peaks[0]!, `later trials' peak RSS ${peaks.join(' / ')} MB grew past 1.15x the first's`);

    const p1 = join(dir, 'prof_1', 'profile.json');
    const prof = JSON.parse(readFileSync(p1, 'utf8')) as { img_per_s: number; phases: Array<{ phase: string; kernels_per_step: number; wall_ms_per_step: number | null }>; config: Record<string, unknown> };
    assert.ok(prof.img_per_s > 0);
    assert.equal(prof.config.batch, 4);
    const phases = new Map(prof.phases.map((p) => [p.phase, p]));
    for (const p of ['dataload', 'to_device', 'forward', 'backward', 'optimizer']) assert.ok(phases.has(p), `phase ${p}: ${[...phases.keys()].join(', ')}`);
    assert.ok(phases.get('forward')!.kernels_per_step > 0 && phases.get('backward')!.kernels_per_step > 0);
    assert.ok(phases.get('backward')!.wall_ms_per_step! > 0);
    // every kernel lies in a phase of the step
    assert.ok(!phases.has('unphased') || phases.get('unphased')!.kernels_per_step === 0, JSON.stringify(prof.phases));

    const summary = await runTrainCli(['profile', 'summary', aggregate], tmp);
    assert.equal(summary.code, 0, summary.stderr);
    assert.match(summary.stdout, /kernel mix/);
    const ph = await runTrainCli(['profile', 'phases', p1], tmp);
    assert.equal(ph.code, 0, ph.stderr);
    assert.match(ph.stdout, /^forward /m);
    assert.match(ph.stdout, /^backward /m);
    const k = await runTrainCli(['profile', 'kernels', p1, '--phase', 'backward', '--json'], tmp);
    assert.equal(k.code, 0, k.stderr);
    assert.ok((JSON.parse(k.stdout) as { kernels: unknown[] }).kernels.length > 0);
    const cmp = await runTrainCli(['profile', 'compare', join(dir, 'prof_0', 'profile.json'), p1], tmp);
    assert.equal(cmp.code, 0, cmp.stderr);
    assert.match(cmp.stdout, /img\/s/);
    const get = await runTrainCli(['profile', 'get', p1, 'backward_kernels'], tmp);
    assert.equal(get.code, 0, get.stderr);
    assert.ok(Number(get.stdout.trim()) > 0);
  });

  it('without --weights, offline: fresh weights stand in for the default with a warning; an explicit name still fails', async () => {
    const run = await runTrainCli(['profile', 'run', data.yaml, '--device', 'cpu', '--batch', '2', '--imgsz', '64', '--steps', '1', '--warmup', '1',
      '--workers', '0', '--project', 'runs/default-weights'], tmp);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /Warning: the default weights LibreYOLO9t\.pt are not available \(model_not_found\); profiling fresh yolo9t weights instead\./);
    assert.ok(existsSync(join(tmp, 'runs', 'default-weights', 'prof', 'profile.json')));
    const named = await runTrainCli(['profile', 'run', data.yaml, '--weights', 'LibreYOLO9t.pt', '--device', 'cpu', '--batch', '2', '--imgsz', '64',
      '--steps', '1', '--warmup', '1', '--workers', '0', '--project', 'runs/named-weights'], tmp);
    assert.equal(named.code, 4, named.stderr); // predict's exit code for weights that are not there
    assert.match(named.stderr, /Model weights not found: .*LibreYOLO9t\.pt/);
    assert.ok(!existsSync(join(tmp, 'runs', 'named-weights')));
  });

  it('exits 3 naming the three remedies when the window cannot fill one epoch (real CLI)', async () => {
    const run = await runTrainCli(['profile', 'run', data.small, '--weights', 'yolo9t', '--device', 'cpu', '--batch', '4', '--imgsz', '64',
      '--workers', '0', '--project', 'runs/small'], tmp);
    assert.equal(run.code, 3, run.stderr);
    assert.equal(run.stdout, '');
    assert.equal(run.stderr, 'Error: no profile produced for run 0: the window (warmup 5 + steps 20) never filled (8 train images at batch 4 give 2 iterations per epoch; ' +
      'the window must fit in one epoch). Use a larger dataset, fewer --steps, or a smaller --batch.\n');
    assert.ok(!existsSync(join(tmp, 'runs', 'small')), 'nothing is written');
  });

  it('a trial that fails inside training leaves no folder it made (an existing project folder and its files stay)', async () => {
    const bad = join(tmp, 'corrupt');
    mkdirSync(join(bad, 'images', 'train'), { recursive: true });
    mkdirSync(join(bad, 'labels', 'train'), { recursive: true });
    for (let i = 0; i < 8; i++) {
      writeFileSync(join(bad, 'images', 'train', `${i}.png`), 'not a png');
      writeFileSync(join(bad, 'labels', 'train', `${i}.txt`), '0 0.5 0.5 0.2 0.2\n');
    }
    writeFileSync(join(bad, 'data.yaml'), `path: ${bad}\ntrain: images/train\nval: images/train\nnames:\n  0: a\n`);
    mkdirSync(join(tmp, 'runs', 'kept'), { recursive: true });
    writeFileSync(join(tmp, 'runs', 'kept', 'notes.txt'), 'mine');
    for (const project of ['runs/fresh/deeper', 'runs/kept']) {
      const run = await runTrainCli(['profile', 'run', join(bad, 'data.yaml'), '--weights', 'yolo9t', '--device', 'cpu', '--batch', '2', '--imgsz', '64',
        '--steps', '2', '--warmup', '1', '--workers', '0', '--project', project], tmp);
      assert.equal(run.code, 3, run.stderr);
      assert.match(run.stderr, /Cannot read the source image: .*corrupt/);
    }
    assert.ok(!existsSync(join(tmp, 'runs', 'fresh')), 'the project folders the run made are gone');
    assert.equal(readFileSync(join(tmp, 'runs', 'kept', 'notes.txt'), 'utf8'), 'mine');
    assert.ok(!existsSync(join(tmp, 'runs', 'kept', 'prof')), 'no half-made trial folder');
  });

  it('never overwrites an earlier profile: prof, prof2, ... (prof2_<i> and profile_repeat2.json with --repeat)', () => {
    const project = join(tmp, 'names');
    mkdirSync(join(project, 'prof'), { recursive: true });
    assert.equal(runNames(project, 1).trial(0), 'prof2');
    assert.deepEqual([runNames(project, 2).trial(0), runNames(project, 2).trial(1), runNames(project, 2).aggregate], ['prof_0', 'prof_1', 'profile_repeat.json']);
    writeFileSync(join(project, 'profile_repeat.json'), '{}');
    assert.deepEqual([runNames(project, 2).trial(1), runNames(project, 2).aggregate], ['prof2_1', 'profile_repeat2.json']);
  });

  it('an epoch that ends before the window closes stops the run (WindowNotFilled), never spanning epochs', async () => {
    const prof = await TrainStepProfiler.create({ warmup: 1, steps: 2, saveDir: join(tmp, 'never'), device: parseDevice('cpu'), meta: {}, trace: false, singleEpoch: true });
    async function* twoBatches(): AsyncIterable<number> { yield 1; yield 2; }
    const seen: number[] = [];
    await assert.rejects(async () => {
      for await (const b of prof.wrapLoader(twoBatches())) {
        seen.push(b);
        await prof.step();
      }
    }, (e: unknown) => e instanceof WindowNotFilled && e.iterations === 2);
    assert.deepEqual(seen, [1, 2]);
    assert.ok(!existsSync(join(tmp, 'never')));
  });
});
