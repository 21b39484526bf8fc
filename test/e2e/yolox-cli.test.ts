/**
 * The command line on YOLOX-n: `predict` names the family and size it runs; `profile infer` (the reference checkpoint, the original's photo): the profile
 * measures the YOLOX graph (its 6x6 stem conv, 113 convolutions, the in-graph decode) at its own
 * 416 input.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import type { ProfileAnalysis } from '../../src/profile/schema.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { cli } from '../helpers/profile-fixtures.ts';

let base: string;
before(async () => { base = await mkdtemp(join(tmpdir(), 'ly-yolox-profile-')); });
after(async () => { await rm(base, { recursive: true, force: true }); });

it('profile infer runs YOLOX-n at 416 and counts its kernels', async () => {
  const r = await cli('profile', 'infer', join(REPO_ROOT, 'test/assets/parkour.jpg'), '--device', 'cpu', '--warmup', '2', '--runs', '5',
    '--weights', fixture('yoloxn_ref.pt'), '--imgsz', '416', '--project', join(base, 'p'));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^latency {2}p50 [\d.]+ ms/);
  const a = JSON.parse(readFileSync(join(base, 'p', 'infer', 'profile.json'), 'utf8')) as ProfileAnalysis & { config: { imgsz: number } };
  assert.equal(a.config.imgsz, 416);
  const conv = (a.top_kernels as Array<{ kernel: string; count_per_step: number }>).find((k) => k.kernel === 'Conv');
  assert.equal(conv?.count_per_step, 113, 'every YOLOX-n convolution once per step (BatchNorm folded)');
});

it('libreyolo predict model=yoloxn_ref.pt names the family and size, then the photo\'s detections', async () => {
  const r = await cli('predict', `model=${fixture('yoloxn_ref.pt')}`, `source=${join(REPO_ROOT, 'test/assets/parkour.jpg')}`);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.match(lines[0]!, /^Model: yolox-n \(YOLOX n, 80 classes, 912,159 parameters\) from .*yoloxn_ref\.pt, input 416x416, device cpu$/);
  assert.match(lines[1]!, /^image 1\/1 .*parkour\.jpg: 1280x852 bus: 2, train: 1, boat: 1, bird: 1, baseball bat: 1, cup: 1, dining table: 1, toilet: 1, cell phone: 1, book: 1, vase: 1, /);
});
