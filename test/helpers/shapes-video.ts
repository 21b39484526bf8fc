/**
 * Test videos of moving shapes: each shape is drawn by the synthetic-data renderer (`synthScene`),
 * moved along its own lane frame by frame, optionally hidden for some frames, rasterised with sharp
 * and encoded by Debian's ffmpeg (MPEG-4, FourCC mp4v, high quality). Returns each frame's true
 * boxes, so tests can check detections and track ids against the drawing.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import sharp from 'sharp';
import { sceneSvg, SHAPE_CLASSES, synthScene, type SynthObject } from '../../src/data/synth.ts';
import { mulberry32 } from '../../src/util/random.ts';

export interface MovingShape {
  /** Top-left corner of the shape's box at frame t. */
  at(t: number): [number, number];
  /** Frames (inclusive ranges) where the shape is not drawn. */
  hidden?: Array<[number, number]>;
}

export interface ShapesVideo {
  path: string;
  width: number;
  height: number;
  frames: number;
  /** Per frame, per shape: its box, or null while hidden. */
  truth: Array<Array<SynthObject | null>>;
}

/** One shape of class `cls` (an index into the first six shape classes) of about `size` pixels, as SVG and its box. */
function drawnShape(seed: number, cls: number, size: number): { svg: string; box: SynthObject } {
  for (let s = seed; ; s++) {
    const scene = synthScene(mulberry32(s), {
      imgsz: size * 3, nc: 6, shapes: SHAPE_CLASSES.slice(0, 6), minObjects: 1, maxObjects: 1, sizeRange: [1 / 3, 1 / 3],
      small: false, square: true, empty: false,
    });
    const box = scene.objects[0];
    if (box && box.cls === cls) return { svg: scene.parts.shapes[0]!, box };
  }
}

export async function makeShapesVideo(path: string, o: { width: number; height: number; frames: number; fps: number; shapes: Array<MovingShape & { cls: number; size: number }> }): Promise<ShapesVideo> {
  const drawn = o.shapes.map((s, k) => drawnShape(1000 + k * 97, s.cls, s.size));
  const ffmpeg = spawn('ffmpeg', [
    '-v', 'error', '-nostdin', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${o.width}x${o.height}`, '-r', String(o.fps), '-i', 'pipe:0',
    '-c:v', 'mpeg4', '-tag:v', 'mp4v', '-q:v', '2', '-pix_fmt', 'yuv420p', '-y', path,
  ], { stdio: ['pipe', 'ignore', 'inherit'] });
  const truth: ShapesVideo['truth'] = [];
  for (let t = 0; t < o.frames; t++) {
    const row: Array<SynthObject | null> = [];
    const parts = [`<rect width="${o.width}" height="${o.height}" fill="#7a7f86"/>`];
    o.shapes.forEach((s, k) => {
      if (s.hidden?.some(([a, b]) => t >= a && t <= b)) { row.push(null); return; }
      const { svg, box } = drawn[k]!;
      const [x, y] = s.at(t);
      const dx = x - box.x1, dy = y - box.y1;
      parts.push(`<g transform="translate(${dx} ${dy})">${svg}</g>`);
      row.push({ cls: box.cls, x1: box.x1 + dx, y1: box.y1 + dy, x2: box.x2 + dx, y2: box.y2 + dy });
    });
    truth.push(row);
    const rgb = await sharp(Buffer.from(sceneSvg(o.width, o.height, parts)), { density: 72 }).removeAlpha().raw().toBuffer();
    if (!ffmpeg.stdin.write(rgb)) await once(ffmpeg.stdin, 'drain');
  }
  ffmpeg.stdin.end();
  const [code] = await once(ffmpeg, 'close') as [number];
  if (code !== 0) throw new Error(`ffmpeg could not encode the test video (exit ${code})`);
  return { path, width: o.width, height: o.height, frames: o.frames, truth };
}

/** A lane back and forth between x0 and x1 at `speed` px per frame (triangle wave), at height y. */
export function lane(x0: number, x1: number, y: number, speed: number, phase = 0): (t: number) => [number, number] {
  const span = x1 - x0;
  return (t) => {
    const d = (phase + t * speed) % (2 * span);
    return [x0 + (d <= span ? d : 2 * span - d), y];
  };
}

/** Frames (and their indices) of a video as ffmpeg decodes them, written as PNG files by ffmpeg itself. */
export async function extractFrames(video: string, pattern: string): Promise<void> {
  const ff = spawn('ffmpeg', ['-v', 'error', '-nostdin', '-i', video, '-f', 'image2', '-y', pattern], { stdio: ['ignore', 'ignore', 'inherit'] });
  const [code] = await once(ff, 'close') as [number];
  if (code !== 0) throw new Error(`ffmpeg could not extract frames (exit ${code})`);
}

/** ffprobe's count of decoded frames, size, frame rate and FourCC of a video file. */
export async function probeVideoFile(path: string): Promise<{ frames: number; width: number; height: number; rate: string; tag: string }> {
  const ff = spawn('ffprobe', ['-v', 'error', '-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_frames,width,height,r_frame_rate,codec_tag_string', '-of', 'json', path]);
  let out = '';
  ff.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const [code] = await once(ff, 'close') as [number];
  if (code !== 0) throw new Error(`ffprobe could not read ${path}`);
  const s = (JSON.parse(out) as { streams: Array<Record<string, string | number>> }).streams[0]!;
  return { frames: Number(s.nb_read_frames), width: Number(s.width), height: Number(s.height), rate: String(s.r_frame_rate), tag: String(s.codec_tag_string) };
}
