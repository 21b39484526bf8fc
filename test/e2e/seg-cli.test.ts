/**
 * The command line on a segment model: predict names the task in its model line and prints each
 * detection's mask contour in --json; --help offers --task; a task no family runs keeps its refusal.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { runCli } from '../helpers/cli.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { writeSafetensors } from '../../src/weights/safetensors.ts';

let cwd: string;
before(async () => { cwd = await mkdtemp(join(tmpdir(), 'ly-seg-cli-')); });
after(async () => { await rm(cwd, { recursive: true, force: true }); });
const photo = join(REPO_ROOT, 'test/assets/parkour.jpg');

it('predict on yolo9t_seg_ref.pt: the model line says segment; --json carries each mask\'s contour', async () => {
  const text = await runCli(['predict', `model=${fixture('yolo9t_seg_ref.pt')}`, `source=${photo}`, 'conf=0.05'], cwd);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout.split('\n')[0]!, /^Model: yolo9-t \(YOLOv9 t, segment, 80 classes, 2,897,248 parameters\) from .*yolo9t_seg_ref\.pt, input 640x640, device cpu$/);
  const json = await runCli(['predict', `model=${fixture('yolo9t_seg_ref.pt')}`, `source=${photo}`, 'conf=0.05', '--json'], cwd);
  assert.equal(json.code, 0, json.stderr);
  const out = JSON.parse(json.stdout) as { results: Array<{ detections: Array<{ segments?: { x: number[]; y: number[] } }> }> };
  const dets = out.results[0]!.detections;
  assert.equal(dets.length, 33);
  for (const d of dets) {
    assert.ok(d.segments && d.segments.x.length >= 3 && d.segments.x.length === d.segments.y.length, 'a contour of at least 3 points per mask');
  }
});

it('predict --help offers --task; --task pose is refused with exit 2 before anything runs; a checkpoint whose own task no family runs exits 4, as a model that cannot be loaded', async () => {
  const help = await runCli(['predict', '--help'], cwd);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--task <task> +detect or segment/);
  assert.match(help.stdout, /a segment model \(LibreYOLO9t-seg\.pt\) also gives each object's mask/);
  const pose = await runCli(['predict', `model=${fixture('yolo9t_seg_ref.pt')}`, `source=${photo}`, 'task=pose'], cwd);
  assert.equal(pose.code, 2, pose.stderr);
  assert.match(pose.stderr, /Task 'pose' is not supported yet: this package runs detection and instance segmentation \(segment\) models only\./);
  // A checkpoint whose own task field says pose: read from the file, so a model not loadable here.
  const posed = join(cwd, 'pose.safetensors');
  const { stateDict } = await loadCheckpointFile(fixture('yolo9t_ref.pt'));
  await writeFile(posed, writeSafetensors(stateDict, { model_family: 'yolo9', size: 't', task: 'pose' }));
  const fromFile = await runCli(['predict', `model=${posed}`, `source=${photo}`], cwd);
  assert.equal(fromFile.code, 4, fromFile.stderr);
  assert.match(fromFile.stderr, /^Error: Task 'pose' is not supported yet/m);
  const named = await runCli(['predict', 'model=LibreYOLO9t-pose.pt', `source=${photo}`], cwd);
  assert.equal(named.code, 4, named.stderr);
  assert.match(named.stderr, /^Error: Task 'pose' is not supported yet: .*, so LibreYOLO9t-pose\.pt is not downloaded\. For detection use LibreYOLO9t\.pt\./m);
});

it('val on a segment model reports mask and box metrics under the original keys; train gets past the task check', async () => {
  const data = join(cwd, 'shapes-seg');
  const synth = await runCli(['data', 'synth', `--out=${data}`, '--task=segment', '--train=1', '--val=2', '--imgsz=128', '--seed=3'], cwd);
  assert.equal(synth.code, 0, synth.stderr);
  const val = await runCli(['val', `model=${fixture('yolo9t_seg_ref.pt')}`, `data=${join(data, 'data.yaml')}`, 'imgsz=128', '--json'], cwd);
  assert.equal(val.code, 0, val.stderr);
  const metrics = (JSON.parse(val.stdout) as { metrics: Record<string, number> }).metrics;
  for (const k of ['metrics/mAP50-95', 'metrics/mAP50', 'metrics/mAP75', 'metrics/AR100', 'metrics/precision(B)', 'metrics/recall(B)', 'metrics/mAP50(B)',
    'metrics/mAP50-95(B)', 'metrics/precision(M)', 'metrics/recall(M)', 'metrics/mAP50(M)', 'metrics/mAP50-95(M)']) {
    assert.equal(typeof metrics[k], 'number', k);
  }
  assert.equal(metrics['metrics/mAP50-95'], metrics['metrics/mAP50-95(M)'], 'the unsuffixed keys are the mask metrics');
  const line = await runCli(['val', `model=${fixture('yolo9t_seg_ref.pt')}`, `data=${join(data, 'data.yaml')}`, 'imgsz=128'], cwd);
  assert.equal(line.code, 0, line.stderr);
  assert.match(line.stdout, /^images 2 +instances \d+ +mask mAP50 \d\.\d{4} +mAP50-95 \d\.\d{4} .* box mAP50\(B\) \d\.\d{4} +mAP50-95\(B\) \d\.\d{4}/m);
  const train = await runCli(['train', `model=${fixture('yolo9t_seg_ref.pt')}`, 'data=missing.yaml'], cwd);
  assert.notEqual(train.code, 0);
  assert.doesNotMatch(train.stderr, /not implemented/);
  assert.match(train.stderr, /missing\.yaml/);
});

it('profile infer on a segment model writes the four files, and what it profiled is the segment graph (3 Upsample nodes: the detector\'s 2 and the prototype branch\'s)', async () => {
  const project = join(cwd, 'runs/profile/seg');
  const r = await runCli(['profile', 'infer', '--device', 'cpu', '--weights', fixture('yolo9t_seg_ref.pt'), '--imgsz', '320', '--warmup', '1', '--runs', '2', '--project', project], cwd);
  assert.equal(r.code, 0, r.stderr);
  const { readFile, readdir } = await import('node:fs/promises');
  const run = join(project, 'infer');
  assert.deepEqual((await readdir(run)).sort(), ['profile.json', 'profile_summary.json', 'profile_trace.json', 'timeline.html']);
  const profile = JSON.parse(await readFile(join(run, 'profile.json'), 'utf8')) as { model: string; kernels: Array<{ kernel: string; count_per_step: number }> };
  assert.match(profile.model, /yolo9t_seg_ref\.pt$/);
  assert.equal(profile.kernels.find((k) => k.kernel === 'Upsample')?.count_per_step, 3);
});
