/**
 * predict on a video against the same frames as a folder of PNG images (extracted by ffmpeg), in
 * one process, alternating, `--rounds` times each: prints frames/s of both and their ratio
 * (video / folder). Usage: node --import tsx bench/video-vs-images.ts [--frames 120] [--rounds 3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LibreYOLO } from '../src/index.ts';
import { extractFrames, lane, makeShapesVideo } from '../test/helpers/shapes-video.ts';

const { values } = parseArgs({ options: { frames: { type: 'string', default: '120' }, rounds: { type: 'string', default: '3' } } });
const frames = Number(values.frames);
const rounds = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-video-'));
try {
  const video = await makeShapesVideo(join(dir, 'clip.mp4'), {
    width: 320, height: 240, frames, fps: 25,
    shapes: [{ cls: 0, size: 60, at: lane(4, 250, 8, 3) }, { cls: 3, size: 60, at: lane(4, 250, 90, 2) }, { cls: 1, size: 60, at: lane(4, 250, 170, 4) }],
  });
  const folder = join(dir, 'frames');
  await import('node:fs/promises').then((fs) => fs.mkdir(folder));
  await extractFrames(video.path, join(folder, '%06d.png'));
  const model = await LibreYOLO();
  const time = async (source: string): Promise<number> => {
    const t0 = performance.now();
    let n = 0;
    for await (const _ of model.predict(source, { stream: true })) n++;
    if (n !== frames) throw new Error(`${source}: ${n} results for ${frames} frames`);
    return n / ((performance.now() - t0) / 1000);
  };
  await time(folder); // warm-up: session creation
  const v: number[] = [], f: number[] = [];
  for (let r = 0; r < rounds; r++) {
    v.push(await time(video.path));
    f.push(await time(folder));
  }
  const mean = (a: number[]): number => a.reduce((s, x) => s + x, 0) / a.length;
  console.log(`video  ${v.map((x) => x.toFixed(1)).join(' ')} frames/s (mean ${mean(v).toFixed(1)})`);
  console.log(`folder ${f.map((x) => x.toFixed(1)).join(' ')} frames/s (mean ${mean(f).toFixed(1)})`);
  console.log(`ratio video/folder: ${(mean(v) / mean(f)).toFixed(3)} (${frames} frames of 320x240, ${rounds} alternating rounds)`);
  await model.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
