/**
 * The command line on a segment model: predict names the task in its model line and prints each
 * detection's mask contour in --json; --help offers --task; a task no family runs keeps its refusal.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { runCli } from '../helpers/cli.ts';

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

it('predict --help offers --task; --task pose is refused with exit 2 before anything runs', async () => {
  const help = await runCli(['predict', '--help'], cwd);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--task <task> +detect or segment/);
  assert.match(help.stdout, /a segment model \(LibreYOLO9t-seg\.pt\) also gives each object's mask/);
  const pose = await runCli(['predict', `model=${fixture('yolo9t_seg_ref.pt')}`, `source=${photo}`, 'task=pose'], cwd);
  assert.equal(pose.code, 2, pose.stderr);
  assert.match(pose.stderr, /Task 'pose' is not supported yet: this package runs detection models only\./);
});

it('val and train on a segment model exit 2 saying what is missing, instead of box-only metrics or a box-only fit', async () => {
  const val = await runCli(['val', `model=${fixture('yolo9t_seg_ref.pt')}`, 'data=missing.yaml'], cwd);
  assert.equal(val.code, 2, val.stderr);
  assert.match(val.stderr, /^Error: Validation of segment models is not implemented yet \(mask metrics are missing\); this package validates detection models\.$/m);
  const train = await runCli(['train', `model=${fixture('yolo9t_seg_ref.pt')}`, 'data=missing.yaml'], cwd);
  assert.equal(train.code, 2, train.stderr);
  assert.match(train.stderr, /^Error: Training segment models is not implemented yet \(the mask loss is missing\)/m);
});
