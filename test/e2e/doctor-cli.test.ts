/**
 * `libreyolo doctor` end to end: the original's worked example (a broken dataset) gives its report
 * byte for byte, its JSON keys in order and its exit codes; usage and dataset errors exit 2 and 3.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { box, gridBoxes, noiseImage, put, tempDir, workedExample } from '../helpers/doctor-datasets.ts';

const EXPECTED = `LibreDoctor report for <root>/data.yaml
  train: 8 images, 155 instances, 2 background
  val: 2 images, 3 instances, 0 background
  classes: 3

ERRORS (5)
  E images.corrupt [train]: 1 image(s) cannot be decoded, e.g. broken.jpg (UnidentifiedImageError: cannot identify image file broken.jpg).
      <root>/images/train/broken.jpg
  E labels.class_out_of_range [train]: 1 box(es) use class ids outside [0, 3).
      <root>/labels/train/c.txt
  E labels.coords_out_of_range [train]: 1 box(es) have coordinates outside [0, 1]; labels may be in pixel coordinates instead of normalized.
      <root>/labels/train/d.txt
  E labels.syntax [train]: 2 malformed label line(s), e.g. f.txt (line 1: expected 5 fields, got 4); f.txt (line 2: non-numeric value).
      <root>/labels/train/f.txt
  E splits.leakage_exact: 1 identical image(s) appear in both train and val; validation metrics are inflated.
      <root>/images/train/c.jpg
      <root>/images/val/leak.jpg

WARNINGS (5)
  W balance.class_few_instances [train]: 1 class(es) have fewer than 10 training instances: dog (1).
  W balance.class_zero_instances [train]: 1 class(es) have zero training instances: bird. The model can never learn them.
  W balance.imbalance [train]: Class imbalance 153.0:1 - most: cat (153), least: dog (1).
  W files.orphan_label: 1 label file(s) have no matching image; they are silently ignored by training.
      <root>/labels/train/ghost.txt
  W images.exact_duplicates [train]: 1 duplicate image(s) across 1 group(s) of byte-identical files; duplicates skew training statistics.
      <root>/images/train/a.jpg
      <root>/images/train/a_copy.jpg

INFO (3)
  i balance.background_ratio [train]: 2 of 8 images (25.0%) have no annotations (background).
  i balance.split_skew: Class distribution differs between train and val by more than 10% for 2 class(es): dog (66%), cat (65%).
  i files.missing_label [train]: 1 of 8 images have no label file (treated as background during training).
      <root>/images/train/e.jpg

5 error(s), 5 warning(s), 3 info(s).
`;

const FAST_SKIPPED = 'skipped checks: images.corrupt, images.exact_duplicates, images.exif_orientation, images.near_duplicates, images.odd_mode, images.tiny_or_extreme, images.uniform, splits.leakage_exact, splits.leakage_near';

describe('libreyolo doctor (CLI)', () => {
  let parent: string;
  let root: string;
  before(async () => {
    parent = await tempDir();
    root = await workedExample(parent);
  });
  after(() => rm(parent, { recursive: true, force: true }));

  it('reports the worked example byte for byte and exits 1', async () => {
    const r = await runCli(['doctor', 'ds/data.yaml'], parent);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, EXPECTED.replaceAll('<root>', root));
    assert.match(r.stderr, /Checking ds\/data\.yaml\.\.\./);
    assert.ok(/^[\x00-\x7f]*$/.test(r.stdout), 'the report is ASCII');
  });

  it('--json: one line, the original key order, separators and values', async () => {
    const r = await runCli(['doctor', 'ds/data.yaml', '--json'], parent);
    assert.equal(r.code, 1, r.stderr);
    const line = r.stdout.trimEnd();
    assert.ok(!line.includes('\n'));
    assert.ok(line.startsWith(`{"summary": {"errors": 5, "warnings": 5, "infos": 3}, "stats": {"yaml": "${root}/data.yaml", "root": "${root}", "nc": 3, "splits": {"train": {"images": 8, "instances": 155, "background": 2}, "val": {"images": 2, "instances": 3, "background": 0}}, "train_instance_counts": {"cat": 153, "dog": 1, "5": 1}, "images_scanned": true}, "findings": [`), line.slice(0, 600));
    assert.ok(line.endsWith('], "skipped_checks": [], "data": "ds/data.yaml", "exit_code": 1, "schema_version": 1}'), line.slice(-200));
    assert.ok(line.includes(`{"check_id": "splits.leakage_exact", "severity": "error", "message": "1 identical image(s) appear in both train and val; validation metrics are inflated.", "count": 1, "paths": ["${root}/images/train/c.jpg", "${root}/images/val/leak.jpg"], "details": {"splits": ["train", "val"]}}`));
    assert.ok(line.includes('"details": {"ratio": 153.0}'));
    assert.ok(line.includes('"details": {"classes": {"cat": 0.654, "dog": 0.66}}'));
    const j = JSON.parse(line) as Record<string, unknown>;
    assert.deepEqual(Object.keys(j), ['summary', 'stats', 'findings', 'skipped_checks', 'data', 'exit_code', 'schema_version']);
    assert.deepEqual(Object.keys(j.stats as object), ['yaml', 'root', 'nc', 'splits', 'train_instance_counts', 'images_scanned']);
    const findings = j.findings as Array<Record<string, unknown>>;
    assert.equal(findings.length, 13);
    for (const f of findings) {
      const order = ['check_id', 'severity', 'message', 'split', 'count', 'paths', 'details'];
      const keys = Object.keys(f);
      assert.deepEqual(keys, order.filter((k) => keys.includes(k)));
    }
    const imbalance = findings.find((f) => f.check_id === 'balance.imbalance')!;
    assert.equal('count' in imbalance, false);
  });

  it('--fast drops the three image findings, lists the 9 skipped checks and still exits 1', async () => {
    const r = await runCli(['doctor', 'data=ds/data.yaml', '--fast'], parent);
    assert.equal(r.code, 1, r.stderr);
    assert.ok(r.stdout.endsWith(`${FAST_SKIPPED}\n3 error(s), 4 warning(s), 3 info(s).\n`), r.stdout);
    for (const id of ['images.corrupt', 'splits.leakage_exact', 'images.exact_duplicates']) assert.ok(!r.stdout.includes(`${id} [`) && !r.stdout.includes(`${id}:`), id);
    const j = JSON.parse((await runCli(['doctor', 'ds/data.yaml', 'fast=true', '--json'], parent)).stdout) as { stats: { images_scanned: boolean } };
    assert.equal(j.stats.images_scanned, false);
  });

  it('fast=false and strict=0 are accepted as no-ops; --strict turns warnings into exit 1', async () => {
    const clean = join(parent, 'clean');
    await put(clean, 'data.yaml', 'train: images/train\nval: images/val\nnames: [a]\n');
    await put(clean, 'images/train/x.png', await noiseImage(11, 64, 64, 'png'));
    await put(clean, 'labels/train/x.txt', `${gridBoxes(12)}0 0.5 0.5 0.99 0.99\n`);
    await put(clean, 'images/val/y.png', await noiseImage(12, 64, 64, 'png'));
    await put(clean, 'labels/val/y.txt', box(0, 0.5, 0.5, 0.3, 0.3));
    const plain = await runCli(['doctor', 'clean/data.yaml', 'fast=false', 'strict=0'], parent);
    assert.equal(plain.code, 0, plain.stdout + plain.stderr);
    assert.ok(plain.stdout.endsWith('0 error(s), 1 warning(s), 0 info(s).\n'), plain.stdout);
    assert.match(plain.stdout, /W labels\.huge_box \[train\]: 1 box\(es\) cover more than 95% of the image\./);
    const strict = await runCli(['doctor', 'clean/data.yaml', '--strict'], parent);
    assert.equal(strict.code, 1);
  });

  it('usage errors exit 2 before anything is read', async () => {
    const none = await runCli(['doctor', '--json'], parent);
    assert.equal(none.code, 2);
    assert.equal(JSON.parse(none.stdout).error, 'config_required_key');
    const twice = await runCli(['doctor', 'a.yaml', '--data', 'b.yaml'], parent);
    assert.equal(twice.code, 2);
    assert.match(twice.stderr, /Dataset given twice with different values: 'a\.yaml' and 'b\.yaml'\. Pass it once\./);
    const same = await runCli(['doctor', 'ds/data.yaml', '--data', 'ds/data.yaml', '--fast', '--quiet'], parent);
    assert.equal(same.code, 1);
    assert.equal(same.stderr, '');
    const bogus = await runCli(['doctor', 'missing.yaml', 'skip=bogus'], parent);
    assert.equal(bogus.code, 2);
    assert.match(bogus.stderr, /Unknown check 'bogus'\. Use a check id or family: balance, config, files, images, labels, splits\./);
    const empty = await runCli(['doctor', 'missing.yaml', '--fast', '--only', 'images', '--json'], parent);
    assert.equal(empty.code, 2);
    assert.equal(JSON.parse(empty.stdout).message, 'The --skip/--only/--fast combination leaves no checks to run.');
    const help = await runCli(['doctor', '--help-json'], parent);
    assert.equal(help.code, 0);
    const schema = JSON.parse(help.stdout) as { command: string; parameters: Array<{ name: string }>; flags: string[] };
    assert.equal(schema.command, 'doctor');
    assert.deepEqual(schema.parameters.map((p) => p.name), ['data', 'imgsz', 'fast', 'skip', 'only', 'strict', 'download', 'json', 'quiet']);
    assert.deepEqual(schema.flags, ['--download', '--fast', '--json', '--quiet', '--strict']);
  });

  it('a missing dataset and the format guard exit 3', async () => {
    const missing = await runCli(['doctor', 'nosuch.yaml', '--json'], parent);
    assert.equal(missing.code, 3);
    assert.equal(JSON.parse(missing.stdout).error, 'data_not_found');
    const pose = join(parent, 'pose');
    await put(pose, 'data.yaml', 'train: images/train\nval: images/train\nnames: [person]\nkpt_shape: [17, 3]\n');
    const r = await runCli(['doctor', 'pose/data.yaml', '--json'], parent);
    assert.equal(r.code, 3);
    const e = JSON.parse(r.stdout) as { error: string; message: string };
    assert.equal(e.error, 'data_invalid');
    assert.equal(e.message, "This looks like a pose (kpt_shape present in the YAML) dataset. LibreDoctor currently supports YOLO detection datasets only (label lines of the form 'class cx cy w h').");
  });
});
