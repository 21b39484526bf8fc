import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import { Boxes, Results, summaryLine } from '../../src/predict/results.ts';
import {
  classColour, defaultSaveDir, detectionsSvg, drawDetections, incrementDir, saveAnnotated, writeUnique,
} from '../../src/predict/save.ts';

let dir: string;
before(async () => { dir = await mkdtemp(join(tmpdir(), 'ly-save-')); });
after(async () => { await rm(dir, { recursive: true, force: true }); });

const W = 320, H = 200;
function greyImage(): RgbImage {
  return { data: new Uint8Array(W * H * 3).fill(128), width: W, height: H };
}

function makeResult(path: string | null = null): Results {
  const xyxy = new Float32Array([20, 30, 120, 150, 200, 40, 300, 190, 150, 10, 190, 60]);
  return new Results({
    boxes: new Boxes(xyxy, new Float32Array([0.87, 0.5, 0.31]), new Float32Array([0, 2, 0])),
    names: { 0: 'person', 1: 'bicycle', 2: 'car' },
    orig_shape: [H, W],
    path,
  });
}

describe('Results', () => {
  it('exposes boxes in the usual layouts', () => {
    const r = makeResult('/x/img.jpg');
    assert.equal(r.length, 3);
    assert.deepEqual(r.boxes.xyxy[0], [20, 30, 120, 150]);
    assert.deepEqual(r.boxes.xywh[0], [70, 90, 100, 120]);
    assert.deepEqual(r.boxes.xyxyn[0], [20 / W, 30 / H, 120 / W, 150 / H]);
    assert.deepEqual(r.boxes.xywhn[0], [70 / W, 90 / H, 100 / W, 120 / H]);
    assert.deepEqual(r.boxes.cls, [0, 2, 0]);
    assert.deepEqual(r.boxes.data[1], [200, 40, 300, 190, Math.fround(0.5), 2]);
    assert.deepEqual(r.speed, { preprocess: 0, inference: 0, postprocess: 0 });
  });

  it('summarises rows and renders the CLI line', () => {
    const r = makeResult();
    assert.deepEqual(r.summary()[0], { name: 'person', class: 0, confidence: 0.87, box: { x1: 20, y1: 30, x2: 120, y2: 150 } });
    assert.deepEqual(r.summary({ normalize: true, decimals: 2 })[1]!.box, { x1: 0.63, y1: 0.2, x2: 0.94, y2: 0.95 });
    assert.deepEqual(JSON.parse(JSON.stringify(r)), r.summary());
    assert.equal(summaryLine(r), 'person: 2, car: 1');
    const empty = new Results({ boxes: new Boxes(new Float32Array(0), new Float32Array(0), new Float32Array(0)), names: {}, orig_shape: [H, W] });
    assert.equal(summaryLine(empty), '(no detections)');
    assert.deepEqual(empty.summary(), []);
  });
});

describe('drawing', () => {
  it('draws coloured boxes and labels into a JPEG of the same size', async () => {
    const jpeg = await drawDetections(greyImage(), makeResult());
    const meta = await sharp(jpeg).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', W, H]);
    // colours are checked on a lossless rendering (JPEG chroma subsampling smears 2 px lines)
    const { data } = await sharp(await drawDetections(greyImage(), makeResult(), 'png')).raw().toBuffer({ resolveWithObject: true });
    // the left edge of box 0 (x = 20, mid-height) carries class 0's colour
    const px = (x: number, y: number): number[] => Array.from(data.subarray((y * W + x) * 3, (y * W + x) * 3 + 3));
    const want = parseInt(classColour(0).slice(1), 16);
    const [r, g, b] = px(20, 100);
    assert.deepEqual([r, g, b], [want >> 16, (want >> 8) & 255, want & 255]);
    // far from any box the image is untouched
    assert.deepEqual(px(160, 120), [128, 128, 128]);
  });

  it('writes escaped label text with the requested font', () => {
    const r = makeResult();
    r.names[0] = 'a<b&c';
    const svg = detectionsSvg(W, H, r);
    assert.match(svg, /a&#60;b&#38;c 0\.87/);
    assert.match(svg, /font-family="DejaVu Sans, sans-serif"/);
  });

  it('sizes labels to the box, so small objects in a large image keep readable labels that do not bury them', () => {
    // 1600x1200, one 30 px shape and one 400 px shape: the image alone would ask for a 22 px font.
    const r = new Results({
      boxes: new Boxes(new Float32Array([100, 100, 130, 130, 600, 300, 1000, 700]), new Float32Array([0.9, 0.8]), new Float32Array([0, 1])),
      names: { 0: 'circle', 1: 'square' }, orig_shape: [1200, 1600],
    });
    const svg = detectionsSvg(1600, 1200, r);
    const fonts = [...svg.matchAll(/<text [^>]*font-size="(\d+)"/g)].map((m) => Number(m[1]));
    const strokes = [...svg.matchAll(/stroke-width="(\d+)"/g)].map((m) => Number(m[1]));
    assert.deepEqual(fonts, [12, 22], 'the small box gets 0.4 of its side, the large one the image-scaled size');
    assert.deepEqual(strokes, [2, 4]);
    const labelHeights = [...svg.matchAll(/<rect [^>]*height="(\d+)" fill="#/g)].map((m) => Number(m[1]));
    assert.ok(labelHeights[0]! <= 30 * 0.6, `label ${labelHeights[0]} px tall on a 30 px box`);
  });
});

describe('save locations', () => {
  it('increments predict, predict2, ... without reusing a folder', async () => {
    const parent = join(dir, 'inc');
    assert.equal(basename(await incrementDir(parent, 'predict')), 'predict');
    assert.equal(basename(await incrementDir(parent, 'predict')), 'predict2');
    await mkdir(join(parent, 'predict3'));
    const concurrent = await Promise.all(Array.from({ length: 5 }, () => incrementDir(parent, 'predict')));
    assert.deepEqual(concurrent.map((d) => basename(d)).sort(), ['predict4', 'predict5', 'predict6', 'predict7', 'predict8']);
  });

  it('resolves the default folder once per process', async () => {
    const project = join(dir, 'project');
    await mkdir(join(project, 'runs', 'detect', 'predict'), { recursive: true });
    const first = await defaultSaveDir(project);
    assert.equal(first, join(project, 'runs', 'detect', 'predict2'));
    assert.equal(await defaultSaveDir(project), first);
    assert.deepEqual((await readdir(join(project, 'runs', 'detect'))).sort(), ['predict', 'predict2']);
  });

  it('never overwrites: name, name2, name3', async () => {
    const d = join(dir, 'files');
    await mkdir(d);
    const p1 = await writeUnique(d, 'bus', 'jpg', new Uint8Array([1]));
    const p2 = await writeUnique(d, 'bus', 'jpg', new Uint8Array([2]));
    await writeFile(join(d, 'bus3.jpg'), 'taken');
    const p4 = await writeUnique(d, 'bus', 'jpg', new Uint8Array([4]));
    assert.deepEqual([p1, p2, p4].map((p) => basename(p)), ['bus.jpg', 'bus2.jpg', 'bus4.jpg']);
    assert.deepEqual([...await readFile(p1)], [1]);
    assert.deepEqual([...await readFile(p2)], [2]);
    const names = await Promise.all(Array.from({ length: 4 }, (_, i) => writeUnique(d, 'x', 'png', new Uint8Array([i]))));
    assert.equal(new Set(names).size, 4);
    assert.deepEqual((await readdir(d)).filter((f) => f.endsWith('.tmp')), []);
  });

  it('saves into the default folder with the source stem and sets saved_path', async () => {
    const project = join(dir, 'proj2');
    const r = makeResult('/somewhere/street.png');
    const p = await saveAnnotated(greyImage(), r, { baseDir: project });
    assert.equal(p, join(project, 'runs', 'detect', 'predict', 'street.jpg'));
    assert.equal(r.saved_path, p);
    const again = await saveAnnotated(greyImage(), makeResult('/elsewhere/street.jpg'), { baseDir: project });
    assert.equal(again, join(project, 'runs', 'detect', 'predict', 'street2.jpg'));
    const meta = await sharp(await readFile(p)).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', W, H]);
    const mem = await saveAnnotated(greyImage(), makeResult(), { baseDir: project, stem: 'image3', ext: '.PNG' });
    assert.equal(basename(mem), 'image3.png');
    assert.equal((await sharp(mem).metadata()).format, 'png');
    assert.equal(basename(await saveAnnotated(greyImage(), makeResult(), { baseDir: project })), 'inference.jpg');
    assert.equal(basename(await saveAnnotated(greyImage(), makeResult('https://h.test/p/bus.jpg?q=1'), { baseDir: project })), 'bus.jpg');
  });

  it('honours an explicit folder or file output path', async () => {
    const out = join(dir, 'explicit');
    const p = await saveAnnotated(greyImage(), makeResult('/a/cat.jpg'), { outputPath: `${out}/` });
    assert.equal(p, join(out, 'cat.jpg'));
    const f = await saveAnnotated(greyImage(), makeResult('/a/cat.jpg'), { outputPath: join(out, 'sub', 'result.webp') });
    assert.equal(f, join(out, 'sub', 'result.webp'));
    assert.equal((await sharp(f).metadata()).format, 'webp');
    await assert.rejects(saveAnnotated(greyImage(), makeResult(), { outputPath: out, ext: '' }), { code: 'config_range_error' });
    await assert.rejects(saveAnnotated(greyImage(), makeResult(), { outputPath: out, ext: 'xyz' }), { code: 'config_range_error' });
  });
});
