/**
 * predict on a video against the same frames as a folder of PNG images (extracted by ffmpeg), in
 * one process, alternating, `--rounds` times each: prints frames/s of both and their ratio
 * (video / folder, medians), and splits each run into its start (call to first result: for the video
 * the ffmpeg and ffprobe process starts) and its steady rate after the first result.
 * Usage: node --import tsx bench/video-vs-images.ts [--frames 300] [--rounds 5]
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LibreYOLO } from '../src/index.ts';
import { extractFrames, lane, makeShapesVideo } from '../test/helpers/shapes-video.ts';
import { median } from './common.ts';

const { values } = parseArgs({ options: { frames: { type: 'string', default: '300' }, rounds: { type: 'string', default: '5' } } });
const frames = Number(values.frames);
const rounds = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-video-'));
try {
  const video = await makeShapesVideo(join(dir, 'clip.mp4'), {
    width: 320, height: 240, frames, fps: 25,
    shapes: [{ cls: 0, size: 60, at: lane(4, 250, 8, 3) }, { cls: 3, size: 60, at: lane(4, 250, 90, 2) }, { cls: 1, size: 60, at: lane(4, 250, 170, 4) }],
  });
  const folder = join(dir, 'frames');
  mkdirSync(folder);
  await extractFrames(video.path, join(folder, '%06d.png'));
  const model = await LibreYOLO();
  interface Run { fps: number; startMs: number; steadyFps: number }
  const time = async (source: string): Promise<Run> => {
    const t0 = performance.now();
    let n = 0;
    let first = 0;
    for await (const _ of model.predict(source, { stream: true })) if (n++ === 0) first = performance.now();
    const end = performance.now();
    if (n !== frames) throw new Error(`${source}: ${n} results for ${frames} frames`);
    return { fps: n / ((end - t0) / 1000), startMs: first - t0, steadyFps: (n - 1) / ((end - first) / 1000) };
  };
  await time(folder); // warm-up: session creation
  await time(video.path);
  const v: Run[] = [], f: Run[] = [];
  const load0 = loadavg()[0]!;
  for (let r = 0; r < rounds; r++) {
    v.push(await time(video.path));
    f.push(await time(folder));
  }
  const line = (name: string, runs: Run[]): string =>
    `${name} ${runs.map((x) => x.fps.toFixed(1)).join(' ')} frames/s (median ${median(runs.map((x) => x.fps)).toFixed(1)}); ` +
    `start ${median(runs.map((x) => x.startMs)).toFixed(0)} ms, then ${median(runs.map((x) => x.steadyFps)).toFixed(1)} frames/s`;
  console.log(line('video ', v));
  console.log(line('folder', f));
  const ratio = (k: keyof Run): string => (median(v.map((x) => x[k])) / median(f.map((x) => x[k]))).toFixed(3);
  console.log(`ratio video/folder: ${ratio('fps')} (after the first result: ${ratio('steadyFps')}); ${frames} frames of 320x240, ${rounds} alternating rounds, load average ${load0.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}`);
  await model.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
