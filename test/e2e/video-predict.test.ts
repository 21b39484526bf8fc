/**
 * predict() on a real video (drawn shapes, encoded by ffmpeg): vid_stride keeps frames 0, s, 2s, ...
 * with detections equal to predicting the same frames extracted as PNG images by ffmpeg; batch
 * stacks consecutive frames without changing them; save writes an mp4v .mp4 with one frame per
 * result at fps / stride, under a new runs/detect/predict[N] or into an output_path folder.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { extractFrames, lane, makeShapesVideo, probeVideoFile, type ShapesVideo } from '../helpers/shapes-video.ts';

const FRAMES = 24;

describe('predict on a video', () => {
  let dir: string;
  let video: ShapesVideo;
  let model: LibreYOLOModel;
  let imageResults: Results[];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'libreyolo-video-'));
    video = await makeShapesVideo(join(dir, 'shapes.mp4'), {
      width: 256, height: 192, frames: FRAMES, fps: 25,
      shapes: [
        { cls: 0, size: 56, at: lane(4, 190, 6, 6) },
        { cls: 3, size: 56, at: lane(4, 190, 120, 5, 90) },
      ],
    });
    await extractFrames(video.path, join(dir, 'frame_%04d.png'));
    model = await LibreYOLO();
    const pngs = readdirSync(dir).filter((f) => f.endsWith('.png')).sort().map((f) => join(dir, f));
    assert.equal(pngs.length, FRAMES);
    imageResults = await model.predict(pngs);
  });
  after(async () => {
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds the drawn shapes in the frames (the comparison below is not between empty results)', () => {
    for (const r of imageResults) assert.ok(r.length >= 2, `${r.path}: ${r.length} detections`);
  });

  for (const stride of [1, 2, 3]) {
    it(`vid_stride=${stride} keeps frames 0, ${stride}, ${2 * stride}, ... with the detections of those frames as images`, async () => {
      const results = await model.predict(video.path, { vid_stride: stride }) as Results[];
      const kept = Array.from({ length: Math.ceil(FRAMES / stride) }, (_, k) => k * stride);
      assert.deepEqual(results.map((r) => r.frame_idx), kept);
      for (const r of results) {
        const img = imageResults[r.frame_idx!]!;
        assert.equal(r.path, video.path);
        assert.deepEqual(r.orig_shape, [192, 256]);
        assert.deepEqual(r.boxes.data, img.boxes.data, `frame ${r.frame_idx}`);
      }
    });
  }

  it('batch stacks consecutive frames: same results, and stream: true yields them one by one', async () => {
    const seen: Results[] = [];
    for await (const r of model.predict(video.path, { stream: true, batch: 4, vid_stride: 2 })) seen.push(r);
    assert.deepEqual(seen.map((r) => r.frame_idx), Array.from({ length: FRAMES / 2 }, (_, k) => 2 * k));
    for (const r of seen) assert.deepEqual(r.boxes.data, imageResults[r.frame_idx!]!.boxes.data);
  });

  it('save writes runs/detect/predict[N]/<stem>.mp4 (mp4v, one frame per result, fps / stride), a new folder each time', async () => {
    const results = await model.predict(video.path, { save: true, vid_stride: 2, project_dir: dir }) as Results[];
    const saved = join(dir, 'runs', 'detect', 'predict', 'shapes.mp4');
    assert.ok(results.every((r) => r.saved_path === saved), String(results[0]?.saved_path));
    assert.deepEqual(await probeVideoFile(saved), { frames: results.length, width: 256, height: 192, rate: '25/2', tag: 'mp4v' });
    await model.predict(video.path, { save: true, vid_stride: 3, project_dir: dir });
    assert.deepEqual(await probeVideoFile(join(dir, 'runs', 'detect', 'predict2', 'shapes.mp4')), { frames: 8, width: 256, height: 192, rate: '25/3', tag: 'mp4v' });
    // Nothing but finished videos: no partial file left beside them.
    assert.deepEqual(readdirSync(join(dir, 'runs', 'detect', 'predict')), ['shapes.mp4']);
  });

  it('output_path: a folder gets <stem>.mp4 (the original crashed here), a file name is used as given and never overwritten', async () => {
    const folder = join(dir, 'out');
    await model.predict(video.path, { save: true, output_path: `${folder}/`, vid_stride: 4 });
    assert.equal((await probeVideoFile(join(folder, 'shapes.mp4'))).frames, 6);
    await model.predict(video.path, { save: true, output_path: join(folder, 'clip.avi'), vid_stride: 4 });
    await model.predict(video.path, { save: true, output_path: join(folder, 'clip.avi'), vid_stride: 6 });
    assert.equal((await probeVideoFile(join(folder, 'clip.avi'))).frames, 6);
    assert.equal((await probeVideoFile(join(folder, 'clip2.avi'))).frames, 4);
  });
});
