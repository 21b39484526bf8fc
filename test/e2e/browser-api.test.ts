/**
 * The browser build's API in Debian's chromium, against the Node build on the same files: an
 * exported `.onnx` (with LibreYOLO metadata) loaded in the page; every browser image source
 * (HTMLImageElement, ImageBitmap, ImageData, canvas, HTMLVideoElement frame, Blob, File, URL string
 * and URL object) giving Node's detections for the same PNG; drawResults' boxes and masks read back
 * from the canvas pixels; ByteTracker over video-element frames matching Node's tracker on the same
 * detections. No console error, failed request or request off 127.0.0.1 is allowed.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import sharp from 'sharp';
import { buildBrowser } from '../../scripts/build-browser.ts';
import { LibreYOLO, type LibreYOLOModel } from '../../src/index.ts';
import { classColour } from '../../src/predict/colours.ts';
import { drawMasks } from '../../src/predict/draw-masks.ts';
import { Masks } from '../../src/predict/masks.ts';
import { ByteTracker } from '../../src/track/byte-tracker.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { f32FromBase64, PAGE_HELPERS, staticServer, withBrowserPage, type PageRun } from '../helpers/browser-page.ts';
import { maxErrors } from '../helpers/compare.ts';
import { FIXTURES_DIR, fixture } from '../helpers/fixtures.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The fixture's random segment weights score low: a low threshold gives it masks to compare.
const SEG_CONF = 0.05;
// The test video: the sample shifted SHIFT px right per frame, its first detection under a grey
// patch before frame UNCOVERED (VP8 in WebM, which chromium plays).
const FPS = 5;
const FRAMES = 6;
const SHIFT = 4;
const UNCOVERED = 3;
const SHAPES = join(ROOT, 'assets', 'LibreYOLO9t-shapes.pt');

const PAGE = `<!doctype html><meta charset="utf-8"><title>libreyolo browser API test</title><link rel="icon" href="data:,">
<script type="module">
  import * as libreyolo from '/dist/libreyolo.js';
  libreyolo.configureRuntime({ wasmPaths: '/ort/' });
  ${PAGE_HELPERS}
  // Detections as plain arrays (page.evaluate returns JSON).
  window.plain = (r) => ({ xyxy: [...r.boxes.xyxyData], conf: [...r.boxes.confData], cls: [...r.boxes.clsData],
    ids: r.boxes.idData ? [...r.boxes.idData] : null, shape: r.orig_shape, frame: r.frame_idx ?? null });
  // A wait that fails in seconds rather than hanging the test: a video frame that never comes.
  window.within = (what, promise, ms = 30000) => Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error('timed out: ' + what)), ms))]);
  // The test video in a <video>, and a seek to the middle of frame k (FPS frames a second).
  window.openVideo = async () => {
    const video = document.createElement('video');
    video.muted = true;
    video.preload = 'auto';
    // A blob URL: the test server answers no range requests, so the video at its URL could not seek.
    video.src = URL.createObjectURL(await (await fetch('/data/track.webm')).blob());
    await window.within('video metadata', new Promise((resolve, reject) => { video.onloadeddata = resolve; video.onerror = () => reject(new Error('video: ' + video.error?.message)); }));
    return video;
  };
  window.seekFrame = async (video, k) => {
    const seeked = new Promise((resolve) => (video.onseeked = resolve));
    video.currentTime = (k + 0.5) / ${FPS};
    await window.within('seek to frame ' + k, seeked);
    // 'seeked' can come before the frame is there to draw: wait until its marker shows.
    const probe = new OffscreenCanvas(16, 16).getContext('2d', { willReadFrequently: true });
    const want = 20 + 40 * k;
    await window.within('frame ' + k + ' on screen', (async () => {
      for (;;) {
        probe.drawImage(video, 0, 0, 16, 16, 0, 0, 16, 16);
        if (Math.abs(probe.getImageData(8, 8, 1, 1).data[0] - want) <= 15) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })());
  };
  window.loadImage = async (url) => { const img = new Image(); img.src = url; await img.decode(); return img; };
  window.libreyolo = libreyolo;
</script>`;

type Dets = { xyxy: number[]; conf: number[]; cls: number[]; ids: number[] | null; shape: [number, number]; frame: number | null };

type Rgb = { data: Uint8Array; width: number; height: number };

/** The grey level of frame k's marker, a 16 px square in the top-left corner that tells the page which frame it shows. */
const marker = (k: number): number => 20 + 40 * k;

/** Frame `k`: `image` moved SHIFT*k px right (grey on the left), its marker, an optional grey patch [x1, y1, x2, y2]. */
function frame(image: Rgb, k: number, patch: [number, number, number, number] | null): Rgb {
  const dx = SHIFT * k;
  const { width, height } = image;
  const data = new Uint8Array(width * height * 3).fill(128);
  for (let y = 0; y < height; y++) data.set(image.data.subarray(y * width * 3, (y * width + width - dx) * 3), (y * width + dx) * 3);
  if (patch) {
    for (let y = Math.max(0, patch[1]); y < Math.min(height, patch[3]); y++) data.fill(128, (y * width + Math.max(0, patch[0])) * 3, (y * width + Math.min(width, patch[2])) * 3);
  }
  for (let y = 0; y < 16; y++) data.fill(marker(k), y * width * 3, (y * width + 16) * 3);
  return { data, width, height };
}

const detsOf = (r: { boxes: { xyxyData: Float32Array; confData: Float32Array; clsData: Float32Array } }): Dets => ({
  xyxy: [...r.boxes.xyxyData], conf: [...r.boxes.confData], cls: [...r.boxes.clsData], ids: null, shape: [0, 0], frame: null,
});

/** The same detections, boxes within `boxTol` px and scores within `confTol`. */
function assertSameDets(got: Dets, want: Dets, what: string, boxTol: number, confTol: number): void {
  assert.deepEqual(got.cls, want.cls, `${what}: classes ${got.cls} vs ${want.cls}`);
  const box = Math.max(0, ...got.xyxy.map((v, i) => Math.abs(v - want.xyxy[i]!)));
  const conf = Math.max(0, ...got.conf.map((v, i) => Math.abs(v - want.conf[i]!)));
  assert.ok(box <= boxTol && conf <= confTol, `${what}: box error ${box} px (tol ${boxTol}), score error ${conf} (tol ${confTol})`);
}

describe('browser API in chromium', { timeout: 1_800_000 }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-browser-api-'));
  const data = join(tmp, 'data');
  let server: { url: string; close(): Promise<void> };
  let node: LibreYOLOModel;
  let nodeDets: Dets;
  let rgb: Rgb;
  let frameUncovered: Rgb;
  let videoDets: Dets;
  let nodeForward: HostTensor;

  const inPage = <T>(fn: (run: PageRun) => Promise<T>): Promise<T> => withBrowserPage(tmp, `${server.url}/index.html`, async (run) => {
    const out = await fn(run);
    assert.deepEqual(run.problems, []);
    return out;
  });

  before(async () => {
    const { outDir } = await buildBrowser(join(tmp, 'dist'));
    writeFileSync(join(tmp, 'index.html'), PAGE);
    mkdirSync(data);
    // A PNG decodes to the same pixels in sharp and chromium, so both builds see one image.
    const png = await sharp(join(ROOT, 'assets', 'sample.jpg')).removeAlpha().png().toBuffer();
    writeFileSync(join(data, 'sample.png'), png);
    const raw = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    rgb = { data: new Uint8Array(raw.data), width: raw.info.width, height: raw.info.height };
    // The bundled shapes model finds the sample's shapes (the fixtures' random weights find nothing in a photo).
    node = await LibreYOLO(SHAPES, { progress: false, threads: 2 });
    await node.export({ format: 'onnx', output_path: join(data, 'shapes.onnx') });
    nodeDets = detsOf(await node.predictOne(join(data, 'sample.png')));
    assert.ok(nodeDets.conf.length >= 3, `the sample has several detections in Node: ${nodeDets.conf.length}`);
    frameUncovered = frame(rgb, UNCOVERED, null);
    videoDets = detsOf(await node.predictOne(frameUncovered));
    const [px1, py1, px2, py2] = nodeDets.xyxy.slice(0, 4).map(Math.round) as [number, number, number, number];
    const ffmpeg = spawn('ffmpeg', ['-v', 'error', '-nostdin', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${rgb.width}x${rgb.height}`, '-r', String(FPS),
      '-i', 'pipe:0', '-c:v', 'libvpx', '-b:v', '8M', '-crf', '4', '-y', join(data, 'track.webm')], { stdio: ['pipe', 'ignore', 'inherit'] });
    for (let k = 0; k < FRAMES; k++) ffmpeg.stdin.write(frame(rgb, k, k < UNCOVERED ? [px1 - 10, py1 - 10, px2 + 10, py2 + 10] : null).data);
    ffmpeg.stdin.end();
    const [code] = await once(ffmpeg, 'exit');
    assert.equal(code, 0, 'ffmpeg (Debian\'s, with libvpx) encodes the test video');
    fixture('yolo9t_seg_ref.pt');
    // The shapes export is static at the model's 160: the fixture's input, cropped to it.
    const x640 = readSafetensors(new Uint8Array(readFileSync(fixture('yolo9t_ref_io.safetensors'))), 'io').tensors.get('input_1x3x640x640')!.data as Float32Array;
    const xf = new Float32Array(3 * 160 * 160);
    for (let c = 0; c < 3; c++) for (let y = 0; y < 160; y++) xf.set(x640.subarray((c * 640 + y) * 640, (c * 640 + y) * 640 + 160), (c * 160 + y) * 160);
    const x: HostTensor = { dtype: 'float32', dims: [1, 3, 160, 160], data: xf };
    writeFileSync(join(data, 'yolo9_in.bin'), new Uint8Array(xf.buffer, xf.byteOffset, xf.byteLength));
    nodeForward = await node.forward(x);
    const ortDist = dirname(fileURLToPath(import.meta.resolve('onnxruntime-web')));
    server = await staticServer({ '/ort/': ortDist, '/dist/': outDir, '/fixtures/': FIXTURES_DIR, '/assets/': join(ROOT, 'assets'), '/data/': data, '/': tmp }, true);
  });
  after(async () => {
    await node?.close();
    await server?.close();
  });

  it('loads an exported .onnx by URL and as a File: metadata, forward and predict as in Node', async () => {
    const got = await inPage(async ({ page }) => page.evaluate(`(async () => {
      const L = window.libreyolo;
      const model = await L.LibreYOLO('/data/shapes.onnx');
      const input = new Float32Array(await (await fetch('/data/yolo9_in.bin')).arrayBuffer());
      const out = await model.forward({ dtype: 'float32', dims: [1, 3, 160, 160], data: input });
      const r = window.plain(await model.predict('/data/sample.png'));
      const meta = { format: model.format, family: model.family.name, size: model.size, task: model.task, imgsz: model.imgsz, names: model.names };
      await model.close();
      const file = new File([await (await fetch('/data/shapes.onnx')).blob()], 'shapes.onnx');
      const again = await L.LibreYOLO(file);
      const r2 = window.plain(await again.predict('/data/sample.png'));
      await again.close();
      return { meta, dims: out.dims, out: window.toBase64(out.data), r, r2 };
    })()`)) as { meta: Record<string, unknown>; dims: number[]; out: string; r: Dets; r2: Dets };
    assert.deepEqual(got.meta, { format: 'onnx', family: 'yolo9', size: 't', task: 'detect', imgsz: node.imgsz, names: node.names });
    const err = maxErrors({ dtype: 'float32', dims: got.dims, data: f32FromBase64(got.out) }, nodeForward);
    assert.ok(err.box <= 1e-3 && err.score <= 1e-4, `exported .onnx in the page vs Node's .pt forward: box ${err.box}, score ${err.score}`);
    assertSameDets(got.r, nodeDets, '.onnx predict vs Node', 0.05, 1e-4);
    assertSameDets(got.r2, nodeDets, '.onnx from a File vs Node', 0.05, 1e-4);
  });

  it('every image source gives Node\'s detections; drawResults paints the class colours on the box edges', async () => {
    const got = await inPage(async ({ page }) => page.evaluate(`(async () => {
      const L = window.libreyolo;
      const model = await L.LibreYOLO('/assets/LibreYOLO9t-shapes.pt');
      const img = await window.loadImage('/data/sample.png');
      const blob = await (await fetch('/data/sample.png')).blob();
      const canvas = document.createElement('canvas');
      canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
      const ctx = canvas.getContext('2d', { willReadFrequently: true });
      ctx.drawImage(img, 0, 0);
      const sources = {
        HTMLImageElement: img,
        ImageBitmap: await createImageBitmap(blob),
        ImageData: ctx.getImageData(0, 0, canvas.width, canvas.height),
        HTMLCanvasElement: canvas,
        Blob: blob,
        File: new File([blob], 'sample.png', { type: 'image/png' }),
        'URL string': '/data/sample.png',
        URL: new URL('/data/sample.png', location.href),
      };
      const out = {};
      for (const [kind, source] of Object.entries(sources)) out[kind] = window.plain(await model.predict(source));
      // A video element's current frame: a canvas stream played in a <video>.
      const video = await window.openVideo();
      await window.seekFrame(video, ${UNCOVERED});
      out.HTMLVideoElement = window.plain(await model.predict(video));
      // The same results drawn: read back the pixel on each box's left edge, half way down.
      const r = await model.predict(img);
      L.drawResults(canvas, r, { lineWidth: 4 });
      const edges = [];
      for (let i = 0; i < r.boxes.confData.length; i++) {
        const [x1, y1, , y2] = r.boxes.xyxyData.subarray(4 * i, 4 * i + 4);
        const p = ctx.getImageData(Math.floor(x1), Math.floor((y1 + y2) / 2), 1, 1).data;
        edges.push([...p.subarray(0, 3)]);
      }
      const bad = await model.predict(42).then(() => null, (e) => ({ code: e.code, message: e.message }));
      await model.close();
      return { out, edges, bad };
    })()`)) as { out: Record<string, Dets>; edges: number[][]; bad: { code: string; message: string } };
    const kinds = ['HTMLImageElement', 'ImageBitmap', 'ImageData', 'HTMLCanvasElement', 'Blob', 'File', 'URL string', 'URL', 'HTMLVideoElement'];
    assert.deepEqual(Object.keys(got.out).sort(), [...kinds].sort());
    for (const kind of kinds.filter((k) => k !== 'HTMLVideoElement')) {
      assert.deepEqual(got.out[kind]!.shape, [rgb.height, rgb.width], `${kind}: orig_shape`);
      assertSameDets(got.out[kind]!, nodeDets, `${kind} vs Node`, 0.05, 1e-4);
    }
    // A video frame is VP8-coded and converted from YUV: the same objects as Node finds in the frame drawn, boxes close.
    const video = got.out.HTMLVideoElement!;
    assert.deepEqual(video.shape, [rgb.height, rgb.width]);
    const strong = videoDets.conf.map((c, i) => [c, i] as const).filter(([c]) => c > 0.5).map(([, i]) => i);
    assert.ok(strong.length >= 3);
    for (const i of strong) {
      const near = video.cls.findIndex((c, j) => c === videoDets.cls[i] && [0, 1, 2, 3].every((k) => Math.abs(video.xyxy[4 * j + k]! - videoDets.xyxy[4 * i + k]!) < 8));
      assert.ok(near >= 0, `video frame ${UNCOVERED}: Node's detection ${i} (class ${videoDets.cls[i]}, conf ${videoDets.conf[i]}) found in the page: ${JSON.stringify(videoDets.xyxy.slice(4 * i, 4 * i + 4))} vs the page's ${JSON.stringify(video.cls)} ${JSON.stringify(video.xyxy.map(Math.round))}`);
    }
    assert.equal(got.edges.length, nodeDets.conf.length);
    // An edge may lie under a later box's edge or label: every one shows a class colour of this
    // image's boxes, and most their own class's.
    const colours = got.edges.map((px) => `#${px.map((v) => v.toString(16).padStart(2, '0')).join('')}`.toUpperCase());
    colours.forEach((hex, i) => assert.ok(nodeDets.cls.some((c) => classColour(c) === hex), `box ${i} edge is ${hex}, no class colour of this image's boxes`));
    const own = colours.filter((hex, i) => hex === classColour(nodeDets.cls[i]!)).length;
    assert.ok(own * 2 > colours.length, `${own} of ${colours.length} box edges show their class colour: ${colours}`);
    assert.equal(got.bad.code, 'config_type_error');
    assert.match(got.bad.message, /^Unsupported image source/);
  });

  it('a segment model predicts masks as in Node; drawResults composites them as the Node build draws them', async () => {
    const nodeSeg = await LibreYOLO(fixture('yolo9t_seg_ref.pt'), { progress: false, threads: 2 });
    let want;
    try {
      want = await nodeSeg.predictOne(join(data, 'sample.png'), { conf: SEG_CONF });
    } finally {
      await nodeSeg.close();
    }
    assert.ok(want.masks && want.masks.length >= 1, 'Node finds masks in the sample');
    const got = await inPage(async ({ page }) => page.evaluate(`(async () => {
      const L = window.libreyolo;
      const model = await L.LibreYOLO('/fixtures/yolo9t_seg_ref.pt');
      const img = await window.loadImage('/data/sample.png');
      const r = await model.predict(img, { conf: ${SEG_CONF} });
      const canvas = document.createElement('canvas');
      canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
      const ctx = canvas.getContext('2d', { willReadFrequently: true });
      ctx.drawImage(img, 0, 0);
      L.drawResults(canvas, r, { boxes: false });
      const rgba = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      await model.close();
      return { task: model.task, dets: window.plain(r), runs: r.masks.runs.map((x) => [...x]), areas: r.masks.areas,
        drawn: window.toBase64(new Float32Array(rgba.buffer.slice(0))) };
    })()`)) as { task: string; dets: Dets; runs: number[][]; areas: number[]; drawn: string };
    assert.equal(got.task, 'segment');
    assertSameDets(got.dets, detsOf(want), 'segment boxes vs Node', 0.05, 1e-4);
    assert.equal(got.runs.length, want.masks!.length);
    got.areas.forEach((a, i) => {
      const w = want.masks!.areas[i]!;
      assert.ok(Math.abs(a - w) <= Math.max(4, 0.01 * w), `mask ${i}: ${a} px in the page, ${w} in Node`);
    });
    // The canvas holds exactly what Node's drawMasks makes of the page's own masks.
    const masks = new Masks({ height: rgb.height, width: rgb.width, runs: got.runs.map((r) => Int32Array.from(r)) });
    const expected = drawMasks(rgb, masks, got.dets.cls).data;
    const drawn = new Uint8Array(f32FromBase64(got.drawn).buffer);
    let diff = 0;
    for (let i = 0, j = 0; j < expected.length; i += 4, j += 3) {
      if (drawn[i] !== expected[j] || drawn[i + 1] !== expected[j + 1] || drawn[i + 2] !== expected[j + 2]) diff++;
    }
    assert.equal(diff, 0, `${diff} pixels differ from Node's drawMasks`);
    assert.ok(expected.some((v, j) => v !== rgb.data[j]), 'the masks change the image');
  });

  it('tracks over video-element frames with the same ids as Node\'s ByteTracker on the same detections', async () => {
    // Frames before UNCOVERED hide the first detection under a grey patch; then it appears (a new track
    // is reported from its second frame on, so a tracker that does not persist across frames differs).
    const got = await inPage(async ({ page }) => page.evaluate(`(async () => {
      const L = window.libreyolo;
      const model = await L.LibreYOLO('/assets/LibreYOLO9t-shapes.pt');
      const img = await window.loadImage('/data/sample.png');
      const video = await window.openVideo();
      const raw = [];
      const show = async (k) => {
        await window.seekFrame(video, k);
        // The detector's view of this very frame, at the tracker's low threshold, for the Node check.
        raw.push(window.plain(await model.predict(video, { conf: 0.1 })));
      };
      async function* frames() {
        for (let k = 0; k < ${FRAMES}; k++) { await show(k); yield video; }
      }
      const tracked = [];
      for await (const r of model.track(frames(), { track_low_thresh: 0.1 })) tracked.push(window.plain(r));
      await model.close();
      return { raw, tracked };
    })()`)) as { raw: Dets[]; tracked: Dets[] };
    assert.equal(got.tracked.length, FRAMES);
    const tracker = new ByteTracker({ track_low_thresh: 0.1 });
    got.raw.forEach((d, k) => {
      const dets = d.conf.map((c, i) => [...d.xyxy.slice(4 * i, 4 * i + 4), c, d.cls[i]!]);
      const rows = tracker.update(dets, dets.length);
      const t = got.tracked[k]!;
      assert.equal(t.frame, k);
      assert.deepEqual(t.ids, rows.map((r) => r[0]), `frame ${k}: track ids`);
      assert.deepEqual(t.cls, rows.map((r) => d.cls[r[1]]!), `frame ${k}: classes`);
    });
    const first = new Set(got.tracked[0]!.ids);
    assert.ok(first.size >= 2, `tracks on frame 0: ${[...first]}`);
    assert.ok(got.tracked[FRAMES - 1]!.ids!.some((id) => !first.has(id)), 'the uncovered object gets a new id');
    assert.ok([...first].every((id) => got.tracked[FRAMES - 1]!.ids!.includes(id)), 'the first frame\'s tracks keep their ids');
  });
});
