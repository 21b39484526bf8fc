/**
 * Every doctor check against a case that fires it and a close case that does not, on small datasets
 * on disk (a clean base plus one change). A coverage test fails when a registered check has no case.
 */
import assert from 'node:assert/strict';
import { copyFile, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { zipSync } from 'fflate';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { CHECKS, selectChecks } from '../../src/doctor/checks/index.ts';
import { nearPairs } from '../../src/doctor/checks/images.ts';
import { scanImage } from '../../src/doctor/scan.ts';
import { diagnose } from '../../src/doctor/diagnose.ts';
import type { Finding } from '../../src/doctor/findings.ts';
import { parseLabels } from '../../src/data/labels.ts';
import { LibreYOLOError } from '../../src/errors.ts';
import { balancedBoxes, box, cleanDataset, gridBoxes, put, smoothNoise, tempDir } from '../helpers/doctor-datasets.ts';

type Mutate = (root: string) => Promise<void>;
interface Case {
  /** Fires the check; `expect` matches the message of the finding it must give. */
  fire: Mutate;
  expect: RegExp;
  severity: Finding['severity'];
  /** A close variant the check must stay silent on (default: the clean base). */
  silent?: Mutate;
  imgsz?: number;
  /** Other checks to run alongside (a decoding one makes the image sizes known). */
  with?: string[];
}

const yaml = (text: string): Mutate => (root) => put(root, 'data.yaml', text).then(() => undefined);
const label = (rel: string, text: string): Mutate => (root) => put(root, `labels/${rel}`, text).then(() => undefined);
const image = (rel: string, data: () => Promise<Uint8Array>): Mutate => async (root) => { await put(root, `images/${rel}`, await data()); };
const both = (...m: Mutate[]): Mutate => async (root) => { for (const f of m) await f(root); };
const nothing: Mutate = async () => undefined;

/** 200 more train images with one box each and one with `crowd` boxes: the 99th percentile stays at the base's 8. */
const crowded = (crowd: number): Mutate => async (root) => {
  const png = await smoothNoise(300);
  for (let i = 0; i <= 200; i++) {
    const stem = `c${String(i).padStart(3, '0')}`;
    await put(root, `images/train/${stem}.png`, png);
    await put(root, `labels/train/${stem}.txt`, i === 0 ? gridBoxes(crowd) : box(i % 2, 0.5, 0.5, 0.2, 0.2));
  }
};

const CASES: Record<string, Case> = {
  'config.missing_names': { fire: yaml('train: images/train\nval: images/val\nnames: []\n'), expect: /^The YAML defines no class names \('names' is missing or empty\)\.$/, severity: 'error' },
  'config.nc_names_mismatch': {
    fire: yaml('train: images/train\nval: images/val\nnc: 5.0\nnames: [a, b]\n'), expect: /^nc=5\.0 but 'names' defines 2 classes\.$/, severity: 'error',
    silent: yaml('train: images/train\nval: images/val\nnc: 2.0\nnames: [a, b]\n'),
  },
  'config.missing_split': { fire: yaml('train: images/train\nnames: [a, b]\n'), expect: /^The YAML defines no 'val' split; training cannot be evaluated\.$/, severity: 'warning' },
  'config.path_not_found': {
    fire: yaml('train: images/train\nval: images/val\ntest: images/nothere\nnames: [a, b]\n'), expect: /^'test' path\(s\) do not exist\.$/, severity: 'error',
    silent: both(yaml('train: images/train\nval: images/val\ntest: test.txt\nnames: [a, b]\n'), (r) => put(r, 'test.txt', 'images/val/v0.png\n').then(() => undefined)),
  },
  'config.duplicate_names': { fire: yaml('train: images/train\nval: images/val\nnames: [a, a]\n'), expect: /^Multiple class ids share the same name: 'a' x2\.$/, severity: 'warning' },
  'files.missing_label': { fire: (r) => unlink(join(r, 'labels/train/t1.txt')), expect: /^1 of 3 images have no label file \(treated as background during training\)\.$/, severity: 'info' },
  'files.missing_image': {
    fire: both(yaml('train: train.txt\nval: images/val\nnames: [a, b]\n'), (r) => put(r, 'train.txt', 'images/train/t0.png\nimages/train/gone.png\n').then(() => undefined)),
    expect: /^1 image\(s\) are listed in the split but missing on disk; training crashes when it tries to read them\.$/, severity: 'error',
    silent: both(yaml('train: train.txt\nval: images/val\nnames: [a, b]\n'), (r) => put(r, 'train.txt', '# list\nimages/train/t0.png\n\nimages/train/t1.png\n').then(() => undefined)),
  },
  'files.orphan_label': {
    fire: label('train/ghost.txt', box(0, 0.5, 0.5, 0.2, 0.2)), expect: /^1 label file\(s\) have no matching image; they are silently ignored by training\.$/, severity: 'warning',
    silent: both(label('train/classes.txt', 'a\nb\n'), label('train/labels.txt', 'a\nb\n')),
  },
  'files.unsupported_ext': {
    fire: image('train/notes.docx', async () => Buffer.from('x')), expect: /^1 non-image file\(s\) in the image directory are ignored by the loader\.$/, severity: 'warning',
    silent: both(image('train/.DS_Store', async () => Buffer.from('x')), image('train/meta.json', async () => Buffer.from('{}'))),
  },
  'files.case_collision': {
    fire: image('train/t0.jpg', () => smoothNoise(400, 'jpeg')), expect: /^1 group\(s\) of images map to the same label file \(same stem, different case or extension\); their annotations are ambiguous\.$/, severity: 'warning',
  },
  'labels.syntax': {
    fire: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 nan 0.2 0.2\n`), expect: /^1 malformed label line\(s\), e\.g\. t0\.txt \(line 9: non-finite value \(nan\/inf\)\)\.$/, severity: 'error',
    silent: label('train/t0.txt', `\n${balancedBoxes([0, 1])}\n\n`),
  },
  'labels.polygon_line': {
    fire: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.1 0.1 0.3 0.1 0.2 0.3\n`), expect: /^1 label line\(s\) have more than 5 fields and are read as polygons/, severity: 'info',
  },
  'labels.class_out_of_range': {
    fire: label('train/t0.txt', `${balancedBoxes([0, 1])}2 0.5 0.5 0.1 0.1\n-1 0.5 0.5 0.1 0.1\n`), expect: /^2 box\(es\) use class ids outside \[0, 2\)\.$/, severity: 'error',
  },
  'labels.coords_out_of_range': {
    fire: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.05 0.5 0.2 0.2\n`), expect: /^1 box\(es\) extend past the image edge \(center \+\/- size\/2 spills outside \[0, 1\]\)\.$/, severity: 'warning',
    silent: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.1 0.5 0.2 0.2\n0 0.9995 0.5 0.001 0.2\n`),
  },
  'labels.degenerate_box': { fire: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0 0.2\n`), expect: /^1 box\(es\) have zero or negative width\/height\.$/, severity: 'error' },
  'labels.tiny_object': {
    // 0.03 of a side: 1.9 px at imgsz 64, 19 px at 640.
    fire: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.03 0.03\n`), imgsz: 64,
    expect: /^1 box\(es\) \(4\.0%\) are smaller than 3 px at imgsz=64; they contribute almost nothing to training\.$/, severity: 'warning',
    silent: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.03 0.03\n`),
  },
  'labels.huge_box': {
    fire: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.99 0.99\n`), expect: /^1 box\(es\) cover more than 95% of the image\.$/, severity: 'warning',
    silent: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.97 0.97\n`),
  },
  'labels.extreme_aspect': {
    // 90:1 in pixels: beyond 50:1 once the images are scanned (`with` a decoding check); without sizes the bar is 100:1.
    fire: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.9 0.01\n`), with: ['images.uniform'], expect: /^1 box\(es\) have an aspect ratio beyond 50:1 \(often annotation slips\)\.$/, severity: 'warning',
    silent: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.9 0.01\n`),
  },
  'labels.duplicate_box': {
    fire: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.3 0.3\n0 0.5 0.5 0.3 0.3\n`), expect: /^1 pair\(s\) of same-class boxes overlap with IoU > 0\.95 \(likely double annotations\)\.$/, severity: 'warning',
    silent: label('train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.3 0.3\n1 0.5 0.5 0.3 0.3\n`),
  },
  'labels.crowded_image': {
    fire: crowded(100), expect: /^1 image\(s\) have an unusually high object count \(> 50\); worth a manual look\.$/, severity: 'info',
    silent: crowded(45),
  },
  'labels.identical_files': {
    fire: async (r) => { for (let i = 0; i < 3; i++) await put(r, `labels/train/t${i}.txt`, balancedBoxes([0, 1])); await label('val/v0.txt', balancedBoxes([0, 1]))(r); for (const k of [5, 6]) { await put(r, `images/train/t${k}.png`, await smoothNoise(k)); await put(r, `labels/train/t${k}.txt`, balancedBoxes([0, 1])); } },
    expect: /^1 group\(s\) of byte-identical non-empty label files \(largest: 5 files\) - often a copy-paste export error\.$/, severity: 'warning',
    silent: async (r) => { await put(r, 'images/train/t5.png', await smoothNoise(5)); await put(r, 'labels/train/t5.txt', balancedBoxes([0, 1])); },
  },
  'balance.class_zero_instances': {
    fire: yaml('train: images/train\nval: images/val\nnames: [a, b, c]\n'), expect: /^1 class\(es\) have zero training instances: c\. The model can never learn them\.$/, severity: 'warning',
  },
  'balance.class_few_instances': {
    fire: both(label('train/t0.txt', balancedBoxes([0])), label('train/t1.txt', balancedBoxes([0])), label('train/t2.txt', balancedBoxes([0, 1]))),
    expect: /^1 class\(es\) have fewer than 10 training instances: b \(4\)\.$/, severity: 'warning',
  },
  'balance.imbalance': {
    fire: both(label('train/t0.txt', balancedBoxes([0])), label('train/t1.txt', balancedBoxes([0]))), expect: /^Class imbalance 3\.0:1 - most: a \(12\), least: b \(4\)\.$/, severity: 'info',
  },
  'balance.split_coverage': {
    fire: both(yaml('train: images/train\nval: images/val\nnames: [a, b, c]\n'), label('val/v0.txt', balancedBoxes([0, 1, 2]))),
    expect: /^1 class\(es\) appear in val but never in train: c\. Validation scores them at zero\.$/, severity: 'warning',
  },
  'balance.background_ratio': { fire: label('train/t0.txt', '\n'), expect: /^1 of 3 images \(33\.3%\) have no annotations \(background\)\.$/, severity: 'info' },
  'balance.split_skew': {
    fire: both(label('val/v0.txt', balancedBoxes([0])), label('val/v1.txt', balancedBoxes([0]))),
    expect: /^Class distribution differs between train and val by more than 10% for 2 class\(es\): a \(50%\), b \(50%\)\.$/, severity: 'info',
  },
  'images.corrupt': {
    fire: both(image('train/t0.png', async () => Buffer.from('garbage')), image('train/t1.png', async () => (await smoothNoise(101)).subarray(0, 300))),
    expect: /^2 image\(s\) cannot be decoded, e\.g\. t0\.png \(UnidentifiedImageError: cannot identify image file t0\.png\); t1\.png \(OSError: .+\)\.$/, severity: 'error',
  },
  'images.exif_orientation': {
    fire: image('train/t0.png', async () => sharp(await smoothNoise(100)).jpeg().withMetadata({ orientation: 6 }).toBuffer()),
    expect: /^1 image\(s\) carry an EXIF orientation flag; annotations drawn on the rotated view will be misaligned in loaders that ignore EXIF\. Bake the rotation into the pixels\.$/, severity: 'warning',
    silent: image('train/t0.png', async () => sharp(await smoothNoise(100)).jpeg().withMetadata({ orientation: 1 }).toBuffer()),
  },
  'images.odd_mode': {
    fire: image('train/t0.png', async () => sharp(await smoothNoise(100)).toColourspace('b-w').png().toBuffer()),
    expect: /^1 image\(s\) have a different channel layout than the rest of the dataset \(L x1\); they are converted implicitly and may train inconsistently\.$/, severity: 'warning',
    silent: image('train/t0.png', async () => sharp(await smoothNoise(100)).jpeg().toBuffer()),
  },
  'images.tiny_or_extreme': {
    fire: image('train/t0.png', () => smoothNoise(100, 'png', 16)), expect: /^1 image\(s\) are smaller than 32 px a side or have an aspect ratio beyond 20:1\.$/, severity: 'warning',
    silent: image('train/t0.png', () => smoothNoise(100, 'png', 32)),
  },
  'images.uniform': {
    fire: image('train/t0.png', () => sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } }).png().toBuffer()),
    expect: /^1 image\(s\) are a single flat color \(often failed downloads or padding artifacts\)\.$/, severity: 'warning',
  },
  'images.exact_duplicates': {
    fire: async (r) => { await copyFile(join(r, 'images/train/t0.png'), join(r, 'images/train/t9.png')); await label('train/t9.txt', balancedBoxes([0, 1]))(r); },
    expect: /^1 duplicate image\(s\) across 1 group\(s\) of byte-identical files; duplicates skew training statistics\.$/, severity: 'warning',
  },
  'images.near_duplicates': {
    fire: async (r) => { await image('train/t9.jpg', () => smoothNoise(100, 'jpeg'))(r); await label('train/t9.txt', balancedBoxes([0, 1]))(r); },
    expect: /^1 pair\(s\) of visually near-identical images \(perceptual hash\); common with extracted video frames\.$/, severity: 'info',
    silent: async (r) => { await image('train/t9.jpg', () => smoothNoise(109, 'jpeg'))(r); await label('train/t9.txt', balancedBoxes([0, 1]))(r); },
  },
  'splits.leakage_exact': {
    fire: async (r) => { await copyFile(join(r, 'images/train/t0.png'), join(r, 'images/val/v9.png')); await label('val/v9.txt', balancedBoxes([0, 1]))(r); },
    expect: /^1 identical image\(s\) appear in both train and val; validation metrics are inflated\.$/, severity: 'error',
  },
  'splits.leakage_near': {
    fire: async (r) => { await image('val/v9.jpg', () => smoothNoise(100, 'jpeg'))(r); await label('val/v9.txt', balancedBoxes([0, 1]))(r); },
    expect: /^1 pair\(s\) of visually near-identical images span different splits; validation may be leaking\.$/, severity: 'warning',
    silent: async (r) => { await image('val/v9.jpg', () => smoothNoise(209, 'jpeg'))(r); await label('val/v9.txt', balancedBoxes([0, 1]))(r); },
  },
};

describe('doctor checks: each fires on its case and stays silent on a close one', () => {
  let dir: string;
  let n = 0;
  before(async () => { dir = await tempDir(); });
  after(() => rm(dir, { recursive: true, force: true }));
  const dataset = async (mutate: Mutate): Promise<string> => {
    const root = await cleanDataset(join(dir, `d${n++}`));
    await mutate(root);
    return join(root, 'data.yaml');
  };

  it('every registered check has a case (the 36 ids of the catalogue)', () => {
    assert.equal(CHECKS.length, 36);
    assert.deepEqual(CHECKS.map((c) => c.id).filter((id) => !(id in CASES)), []);
  });

  it('the clean base gives no finding at all', async () => {
    const r = await diagnose(await dataset(nothing));
    assert.deepEqual(r.findings, []);
    assert.equal(r.exitCode(true), 0);
    assert.equal(r.renderHuman().split('\n').at(-1), 'No problems found.');
  });

  for (const [id, c] of Object.entries(CASES)) {
    it(id, async () => {
      const fired = await diagnose(await dataset(c.fire), { only: [id, ...(c.with ?? [])], ...(c.imgsz ? { imgsz: c.imgsz } : {}) });
      const mine = fired.findings.filter((f) => f.checkId === id);
      assert.ok(mine.some((f) => c.expect.test(f.message) && f.severity === c.severity), `${id} fired: ${JSON.stringify(mine.map((f) => [f.severity, f.message]))}`);
      assert.ok(fired.findings.every((f) => f.checkId === id), `only the selected check reports: ${fired.findings.map((f) => f.checkId).join(', ')}`);
      const quiet = await diagnose(await dataset(c.silent ?? nothing), { only: [id] });
      assert.deepEqual(quiet.findings.map((f) => f.message), [], `${id} stays silent`);
    });
  }
});

describe('doctor runner', () => {
  let dir: string;
  before(async () => { dir = await tempDir(); });
  after(() => rm(dir, { recursive: true, force: true }));

  it('--fast skips exactly the checks that decode images, and decodes none', async () => {
    const decoding = CHECKS.filter((c) => c.scan).map((c) => c.id).sort();
    assert.deepEqual(decoding, ['images.corrupt', 'images.exact_duplicates', 'images.exif_orientation', 'images.near_duplicates', 'images.odd_mode',
      'images.tiny_or_extreme', 'images.uniform', 'splits.leakage_exact', 'splits.leakage_near']);
    assert.deepEqual(selectChecks([], [], true).skipped, decoding);
    const root = await cleanDataset(join(dir, 'fast'));
    await put(root, 'images/train/t0.png', 'not an image');
    const fast = await diagnose(join(root, 'data.yaml'), { fast: true });
    assert.equal(fast.stats.imagesScanned, false);
    assert.deepEqual(fast.skippedChecks, decoding);
    assert.deepEqual(fast.findings, []);
    const full = await diagnose(join(root, 'data.yaml'));
    assert.deepEqual(full.findings.map((f) => f.checkId), ['images.corrupt']);
  });

  it('skip / only select by id or family; a family skip lists its ids as skipped', async () => {
    const { selected, skipped } = selectChecks(['labels'], [], false);
    assert.ok(selected.every((c) => !c.id.startsWith('labels.')));
    assert.ok(skipped.includes('labels.huge_box'));
    assert.deepEqual(selectChecks([' '], ['images.corrupt', ''], false).selected.map((c) => c.id), ['images.corrupt']);
    assert.throws(() => selectChecks(['label'], [], false), (e: unknown) => e instanceof LibreYOLOError && e.exitCode === 2);
  });

  it('a check that throws is one error under its id, and the other checks still report', async () => {
    const root = await cleanDataset(join(dir, 'crash'));
    await put(root, 'labels/train/t0.txt', `${balancedBoxes([0, 1])}0 0.5 0.5 0.99 0.99\n`);
    const broken = CHECKS.map((c) => (c.id === 'balance.split_skew' ? { ...c, run: () => { throw new RangeError('boom'); } } : c));
    const r = await diagnose(join(root, 'data.yaml'), {}, broken);
    assert.deepEqual(r.findings.map((f) => [f.checkId, f.severity, f.message]), [
      ['balance.split_skew', 'error', 'Check crashed (RangeError: boom); results are incomplete.'],
      ['labels.huge_box', 'warning', '1 box(es) cover more than 95% of the image.'],
    ]);
    assert.equal(r.exitCode(), 1);
  });

  it('a comment-only .txt split resolves to no images (exit 1)', async () => {
    const root = await cleanDataset(join(dir, 'comments'));
    await put(root, 'data.yaml', 'train: train.txt\nval: images/val\nnames: [a, b]\n');
    await put(root, 'train.txt', '# nothing here\n\n');
    const r = await diagnose(join(root, 'data.yaml'));
    assert.ok(r.findings.some((f) => f.checkId === 'config.path_not_found' && f.message === "'train' resolves to no images." && f.count === undefined));
    assert.equal(r.exitCode(), 1);
  });

  it('the format guard: 9-field rows, keypoint rows; polygon minority and one odd row pass', async () => {
    const guard = async (name: string, rows: string): Promise<unknown> => {
      const root = await cleanDataset(join(dir, name));
      for (let i = 0; i < 3; i++) await put(root, `labels/train/t${i}.txt`, rows);
      for (let i = 0; i < 2; i++) await put(root, `labels/val/v${i}.txt`, rows);
      try { return await diagnose(join(root, 'data.yaml'), { fast: true }); } catch (e) { return e; }
    };
    const obb = await guard('obb', '0 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.3\n');
    assert.ok(obb instanceof LibreYOLOError && obb.exitCode === 3 && obb.message.startsWith('This looks like a obb or segment (9-field label lines) dataset.'), String(obb));
    const kp = `0 0.5 0.5 0.2 0.2 ${Array.from({ length: 51 }, () => '0.5').join(' ')}\n`;
    const pose = await guard('pose', kp);
    assert.ok(pose instanceof LibreYOLOError && pose.message.startsWith('This looks like a pose (keypoint label lines) dataset.'), String(pose));
    const minority = await guard('minority', `${balancedBoxes([0, 1])}0 0.1 0.1 0.3 0.1 0.2 0.3\n`);
    assert.ok(!(minority instanceof Error));
    const six = await guard('six', `${balancedBoxes([0, 1])}0 0.5 0.5 0.2 0.2 0.1\n`);
    assert.ok(!(six instanceof Error));
  });

  it('reads label rows exactly as training does: a row training refuses to read is a labels.syntax finding', async () => {
    const root = await cleanDataset(join(dir, 'parity'));
    const rows = ['0 0.1 0.2 0.3 0.4 0.5 0.6 0.7', '1 0.5 0.5 0.2', '0 0.5 x 0.2 0.2', '0.5 0.5 0.5 0.2 0.2', '0 inf 0.5 0.2 0.2'];
    await put(root, 'labels/train/t0.txt', `${balancedBoxes([0, 1])}${rows.join('\n')}\n`);
    for (const row of rows) assert.throws(() => parseLabels(row, 'x.txt', 2), LibreYOLOError, row);
    const r = await diagnose(join(root, 'data.yaml'), { only: ['labels.syntax'] });
    assert.equal(r.findings[0]?.count, rows.length);
    assert.match(r.findings[0]!.message, /^5 malformed label line\(s\), e\.g\. t0\.txt \(line 9: expected 5 fields or a polygon \(an odd count of 7 or more\), got 8\); t0\.txt \(line 10: expected 5 fields, got 4\); t0\.txt \(line 11: non-numeric value\)\.$/);
    // and what training reads (5 fields, or an odd polygon) is not one
    await writeFile(join(root, 'labels/train/t0.txt'), `${balancedBoxes([0, 1])}0 0.1 0.2 0.3 0.2 0.2 0.6\n`);
    assert.doesNotThrow(() => parseLabels('0 0.1 0.2 0.3 0.2 0.2 0.6', 'x.txt', 2));
    assert.deepEqual((await diagnose(join(root, 'data.yaml'), { only: ['labels.syntax'] })).findings, []);
  });
});

describe('doctor image scan', () => {
  let dir: string;
  before(async () => { dir = await tempDir(); });
  after(() => rm(dir, { recursive: true, force: true }));

  it("difference hashes, modes and orientation match Pillow 9.4's (convert('L').resize((9, 8)), worked out there)", async () => {
    // Hashes printed by Pillow 9.4.0 for these exact files (PNG: the pixels do not depend on an encoder).
    const pillow: Array<[string, () => Promise<Buffer>, string, string]> = [
      ['s0.png', () => smoothNoise(0), '0xa4963264275d19a6', 'RGB'],
      ['s1.png', () => smoothNoise(1), '0x956a4a4a46c4312d', 'RGB'],
      ['s2.png', () => smoothNoise(2), '0x26338b9a49e9b116', 'RGB'],
      ['s3.png', () => smoothNoise(3), '0x3831696165605236', 'RGB'],
      ['s4.png', () => smoothNoise(4), '0xd18a5a74a170382a', 'RGB'],
      ['grey.png', async () => sharp(await smoothNoise(9, 'png', 150)).toColourspace('b-w').png().toBuffer(), '0xbab8d3ac2dab1336', 'L'],
      ['rgba.png', async () => sharp(await smoothNoise(8, 'png', 120)).ensureAlpha(0.5).png().toBuffer(), '0x27a44dd599b8b6a1', 'RGBA'],
      ['pal.png', async () => sharp(await smoothNoise(7, 'png', 80)).png({ palette: true }).toBuffer(), '0xab6f4b553c3617c3', 'P'],
    ];
    for (const [name, make, hash, mode] of pillow) {
      const s = await scanImage(await put(dir, name, await make()));
      assert.equal(`0x${s.dhash!.toString(16).padStart(16, '0')}`, hash, name);
      assert.equal(s.mode, mode, name);
    }
    const rot = await scanImage(await put(dir, 'rot.jpg', await sharp(await smoothNoise(6, 'png', 90)).jpeg().withMetadata({ orientation: 6 }).toBuffer()));
    assert.equal(rot.orientation, 6);
    const zero = await scanImage(await put(dir, 'zero.jpg', ''));
    assert.deepEqual([zero.ok, zero.error, zero.sha1], [false, 'zero-byte file', null]);
  });

  it('near pairs: banded buckets find every pair within 4 bits, once, and no pair beyond', () => {
    const rand = (() => { let x = 7; return () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0); })();
    const records = Array.from({ length: 300 }, (_, i) => ({ path: `p${i}`, scan: { dhash: (BigInt(rand()) << 32n) | BigInt(rand()) } })) as unknown as Parameters<typeof nearPairs>[0];
    // Near copies of the first 40: 0 to 5 bits flipped at random places.
    const mutable = records as unknown as Array<{ path: string; scan: { dhash: bigint } }>;
    for (let i = 0; i < 40; i++) {
      let h = mutable[i]!.scan.dhash;
      for (let k = 0; k < i % 6; k++) h ^= 1n << BigInt(rand() % 64);
      mutable.push({ path: `q${i}`, scan: { dhash: h } });
    }
    const naive = new Set<string>();
    const dist = (a: bigint, b: bigint): number => [...(a ^ b).toString(2)].filter((c) => c === '1').length;
    for (let i = 0; i < mutable.length; i++) for (let j = i + 1; j < mutable.length; j++) if (dist(mutable[i]!.scan.dhash, mutable[j]!.scan.dhash) <= 4) naive.add(`${mutable[i]!.path}|${mutable[j]!.path}`);
    const found = nearPairs(records, 4).map(([a, b]) => [a.path, b.path].sort((x, y) => (x < y ? -1 : 1)).join('|'));
    assert.equal(new Set(found).size, found.length, 'each pair once');
    const sortedNaive = [...naive].map((p) => p.split('|').sort((x, y) => (x < y ? -1 : 1)).join('|')).sort();
    assert.deepEqual([...found].sort(), sortedNaive);
    assert.ok(sortedNaive.length >= 25, `${sortedNaive.length} near pairs planted`);
  });
});

describe('doctor --download', () => {
  let dir: string;
  before(async () => { dir = await tempDir(); });
  after(() => rm(dir, { recursive: true, force: true }));

  it('fetches a missing dataset from the YAML URL (a local server) only when asked; a script is never run', async () => {
    const zip = zipSync({
      'images/train/a.png': new Uint8Array(await smoothNoise(1)), 'labels/train/a.txt': new TextEncoder().encode(balancedBoxes([0, 1], 10)),
      'images/val/b.png': new Uint8Array(await smoothNoise(2)), 'labels/val/b.txt': new TextEncoder().encode(balancedBoxes([0, 1])),
    });
    let hits = 0;
    const server = createServer((req, res) => { hits++; res.writeHead(req.url === '/ds.zip' ? 200 : 404); res.end(req.url === '/ds.zip' ? zip : undefined); });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds.zip`;
      const root = join(dir, 'dl');
      const yamlPath = await put(root, 'data.yaml', `path: ${join(root, 'data')}\ntrain: images/train\nval: images/val\nnames: [a, b]\ndownload: ${url}\n`);
      const offline = await diagnose(yamlPath, { fast: true });
      assert.deepEqual(offline.findings.map((f) => f.message), ["'train' path(s) do not exist.", "'val' path(s) do not exist."]);
      assert.equal(hits, 0, 'nothing fetched without --download');
      const fetched = await diagnose(yamlPath, { download: true, log: () => undefined });
      assert.equal(hits, 1);
      assert.deepEqual(fetched.findings, []);
      assert.deepEqual([...fetched.stats.splits.keys()], ['train', 'val']);
      const script = await put(join(dir, 'script'), 'data.yaml', 'train: images/train\nval: images/val\nnames: [a]\ndownload: |\n  import os; os.system("touch pwned")\n');
      const logs: string[] = [];
      const r = await diagnose(script, { download: true, fast: true, log: (m) => logs.push(m) });
      assert.match(logs.join('\n'), /download entry is a script, which is never run/);
      assert.equal(r.exitCode(), 1);
    } finally {
      server.close();
    }
  });
});
