/**
 * A segment model on video: predict and track with `save: true` write frames that carry the masks
 * as saved images do (each mask in its class colour under the boxes). The saved .mp4 is decoded back
 * and compared with the source frame with its boxes drawn twice, over `drawMasks` (the image
 * saver's masks) and without: where the two differ clearly, the saved pixels must be nearer the
 * former (predict frames are compared with what `save` draws on an image).
 * The fixture's weights find few confident objects in the photo, hence the low thresholds.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import type { RgbImage } from '../../src/data/rgb-image.ts';
import sharp from 'sharp';
import { drawMasks } from '../../src/predict/draw-masks.ts';
import { trackSvg } from '../../src/predict/frame-draw.ts';
import { detectionsSvg, drawDetections, encodeImage } from '../../src/predict/save.ts';
import { openVideo } from '../../src/video/reader.ts';
import { runCli } from '../helpers/cli.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';

const FRAMES = 4;

async function frames(path: string): Promise<RgbImage[]> {
  const out: RgbImage[] = [];
  for await (const f of await openVideo(path)) out.push(f.image);
  return out;
}

/**
 * Of the pixels where the two drawings differ clearly (by `min` on average over the channels), the
 * share where `saved` is nearer `masked` than `bare`; and how many such pixels there are.
 */
function nearerMasked(saved: Uint8Array, masked: Uint8Array, bare: Uint8Array, min = 24): { share: number; pixels: number } {
  let pixels = 0;
  let nearer = 0;
  for (let i = 0; i < saved.length; i += 3) {
    let dm = 0, db = 0, apart = 0;
    for (let c = 0; c < 3; c++) {
      dm += Math.abs(saved[i + c]! - masked[i + c]!);
      db += Math.abs(saved[i + c]! - bare[i + c]!);
      apart += Math.abs(masked[i + c]! - bare[i + c]!);
    }
    if (apart < 3 * min) continue;
    pixels++;
    if (dm < db) nearer++;
  }
  return { share: nearer / pixels, pixels };
}

async function composite(image: RgbImage, svg: string): Promise<Uint8Array> {
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
    .composite([{ input: Buffer.from(svg), top: 0, left: 0 }]).removeAlpha().raw().toBuffer();
}

/** What a frame looks like drawn with and without its masks: predict as the image saver draws it, track in its own style. */
async function drawings(image: RgbImage, r: Results): Promise<{ masked: Uint8Array; bare: Uint8Array }> {
  if (r.boxes.is_track) {
    const svg = trackSvg(image.width, image.height, r);
    return { masked: await composite(drawMasks(image, r.masks!, r.boxes.clsData), svg), bare: await composite(image, svg) };
  }
  const png = (b: Buffer): Promise<Uint8Array> => sharp(b).removeAlpha().raw().toBuffer();
  return {
    masked: await png(await drawDetections(image, r, 'png')),
    bare: await png(await encodeImage(image, 'png', detectionsSvg(image.width, image.height, r))),
  };
}

/** Every frame of the saved video is its frame drawn with its masks, not without. */
async function assertMasksDrawn(source: RgbImage[], saved: RgbImage[], results: Results[]): Promise<void> {
  assert.equal(saved.length, results.length);
  const counts = results.map((r) => `${r.frame_idx}:${r.masks?.length ?? 0}`).join(' ');
  assert.ok(results.every((r) => r.masks && r.masks.length > 0), `every frame has masks to check (frame:masks ${counts})`);
  for (const [k, r] of results.entries()) {
    const image = source[r.frame_idx!]!;
    const { masked, bare } = await drawings(image, r);
    const { share, pixels } = nearerMasked(saved[k]!.data, masked, bare);
    assert.ok(pixels > 1000, `frame ${r.frame_idx}: its masks change ${pixels} pixels clearly`);
    assert.ok(share > 0.8, `frame ${r.frame_idx}: where its masks change the drawing clearly, ${(100 * share).toFixed(1)} % of the saved frame's pixels are nearer the drawing with masks than the one without`);
  }
}

describe('segment model on a video: saved frames carry the masks', () => {
  let dir: string;
  let video: string;
  let source: RgbImage[];
  let model: LibreYOLOModel;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'libreyolo-video-seg-'));
    video = join(dir, 'parkour.mp4');
    // The photo the seg fixture was made with, panned a few pixels per frame, at half size.
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-loop', '1', '-i', join(REPO_ROOT, 'test/assets/parkour.jpg'),
      '-vf', 'scale=640:-2,crop=600:400:4*n:4', '-frames:v', String(FRAMES), '-r', '10', '-c:v', 'mpeg4', '-q:v', '2', video]);
    source = await frames(video);
    assert.equal(source.length, FRAMES);
    model = await LibreYOLO(fixture('yolo9t_seg_ref.pt'));
  });
  after(async () => {
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('predict save=true', async () => {
    const run = model.predictVideo(video, { save: true, conf: 0.05, project_dir: dir });
    const results: Results[] = [];
    for await (const r of run) results.push(r);
    assert.ok(run.saved_path, 'a saved video');
    await assertMasksDrawn(source, await frames(run.saved_path), results);
  });

  it('--json gives each frame\'s mask contours as for images (and track ids when tracking)', async () => {
    for (const command of ['predict', 'track']) {
      const r = await runCli([command, `model=${fixture('yolo9t_seg_ref.pt')}`, `source=${video}`, '--json',
        ...(command === 'predict' ? ['conf=0.05'] : ['track_high_thresh=0.05', 'track_low_thresh=0.02', 'new_track_thresh=0.05'])], dir);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { results: Array<{ detections: Array<{ segments?: { x: number[] }; track_id?: number }> }> };
      const dets = out.results.flatMap((f) => f.detections);
      assert.ok(dets.length > 0, `${command}: detections`);
      assert.ok(dets.every((d) => d.segments && d.segments.x.length >= 3), `${command}: a contour per detection`);
      assert.ok(dets.every((d) => (d.track_id !== undefined) === (command === 'track')), `${command}: track ids only when tracking`);
    }
  });

  it('track save=true (boxes by id, masks by class)', async () => {
    const run = model.track(video, { save: true, project_dir: dir, track_high_thresh: 0.05, track_low_thresh: 0.02, new_track_thresh: 0.05 });
    const results: Results[] = [];
    for await (const r of run) results.push(r);
    assert.ok(results.every((r) => r.boxes.is_track), 'tracked results');
    assert.ok(run.saved_path, 'a saved video');
    await assertMasksDrawn(source, await frames(run.saved_path), results);
  });
});
