/** Small YOLO datasets on disk for the `doctor` tests: noise images written by sharp, hand-written labels. */
import { copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { mulberry32 } from '../../src/util/random.ts';

/** RGB noise of `w x h` from `seed`, encoded as `format`. */
export async function noiseImage(seed: number, w = 64, h = 64, format: 'jpeg' | 'png' = 'jpeg'): Promise<Buffer> {
  const rand = mulberry32(seed);
  const px = Buffer.alloc(w * h * 3);
  for (let i = 0; i < px.length; i++) px[i] = Math.floor(rand() * 256);
  const img = sharp(px, { raw: { width: w, height: h, channels: 3 } });
  return format === 'png' ? img.png().toBuffer() : img.jpeg({ quality: 90 }).toBuffer();
}

export async function put(root: string, rel: string, data: string | Uint8Array): Promise<string> {
  const p = join(root, rel);
  await mkdir(dirname(p), { recursive: true });
  await writeFile(p, data);
  return p;
}

export const box = (cls: number, cx: number, cy: number, w: number, h: number): string => `${cls} ${cx} ${cy} ${w} ${h}\n`;

/** `n` distinct non-overlapping class-`cls` boxes on a grid. */
export function gridBoxes(n: number, cls = 0): string {
  let s = '';
  const side = Math.ceil(Math.sqrt(n));
  for (let i = 0; i < n; i++) s += box(cls, ((i % side) + 0.5) / side, (Math.floor(i / side) + 0.5) / side, 0.8 / side, 0.8 / side);
  return s;
}

export const tempDir = (prefix = 'libreyolo-doctor-'): Promise<string> => mkdtemp(join(tmpdir(), prefix));

/**
 * The original's worked example: train a..f (with a byte copy, a corrupt file, a bad class, pixel
 * coordinates, broken lines, a missing label, an orphan label), val v1 and a copy of train's c.jpg.
 * Returns the dataset folder (`<parent>/ds`, holding data.yaml).
 */
export async function workedExample(parent: string, extraYaml = ''): Promise<string> {
  const root = join(parent, 'ds');
  await put(root, 'data.yaml', `train: images/train\nval: images/val\nnc: 3\nnames: [cat, dog, bird]\n${extraYaml}`);
  const img = async (rel: string, seed: number): Promise<string> => put(root, rel, await noiseImage(seed));
  const a = await img('images/train/a.jpg', 1);
  await put(root, 'labels/train/a.txt', gridBoxes(100));
  await img('images/train/b.jpg', 2);
  await put(root, 'labels/train/b.txt', gridBoxes(50) + box(1, 0.5, 0.5, 0.01, 0.01));
  const c = await img('images/train/c.jpg', 3);
  await put(root, 'labels/train/c.txt', box(5, 0.5, 0.5, 0.2, 0.2));
  await img('images/train/d.jpg', 4);
  await put(root, 'labels/train/d.txt', '0 320 240 100 80\n');
  await img('images/train/e.jpg', 5);
  await copyFile(a, join(root, 'images/train/a_copy.jpg'));
  await put(root, 'labels/train/a_copy.txt', box(0, 0.5, 0.5, 0.2, 0.2));
  await put(root, 'images/train/broken.jpg', 'this is not a jpeg');
  await put(root, 'labels/train/broken.txt', box(0, 0.5, 0.5, 0.2, 0.2));
  await img('images/train/f.jpg', 6);
  await put(root, 'labels/train/f.txt', '0 0.5 0.5 0.2\n0 0.5 oops 0.2 0.2\n');
  await put(root, 'labels/train/ghost.txt', box(0, 0.5, 0.5, 0.2, 0.2));
  await img('images/val/v1.jpg', 7);
  await put(root, 'labels/val/v1.txt', box(0, 0.3, 0.3, 0.2, 0.2) + box(1, 0.7, 0.7, 0.2, 0.2));
  await copyFile(c, join(root, 'images/val/leak.jpg'));
  await put(root, 'labels/val/leak.txt', box(1, 0.5, 0.5, 0.2, 0.2));
  return root;
}

/**
 * Smooth noise (12 x 12 random cells upscaled to `size`): the same seed saved as PNG and as JPEG gives
 * difference hashes a bit or two apart, different seeds about 32 bits apart.
 */
export async function smoothNoise(seed: number, format: 'jpeg' | 'png' = 'png', size = 96): Promise<Buffer> {
  const rand = mulberry32(seed);
  const cells = Buffer.alloc(12 * 12 * 3);
  for (let i = 0; i < cells.length; i++) cells[i] = Math.floor(rand() * 256);
  const raw = await sharp(cells, { raw: { width: 12, height: 12, channels: 3 } }).resize(size, size, { kernel: 'cubic' }).raw().toBuffer();
  const img = sharp(raw, { raw: { width: size, height: size, channels: 3 } });
  return format === 'png' ? img.png().toBuffer() : img.jpeg({ quality: 90 }).toBuffer();
}

/** Four boxes of each class in `classes`, spread over the image. */
export function balancedBoxes(classes: readonly number[], perClass = 4): string {
  let s = '';
  let k = 0;
  const n = classes.length * perClass;
  const side = Math.ceil(Math.sqrt(n));
  for (const c of classes) for (let i = 0; i < perClass; i++, k++) s += box(c, ((k % side) + 0.5) / side, (Math.floor(k / side) + 0.5) / side, 0.5 / side, 0.5 / side);
  return s;
}

/**
 * A dataset no check fires on: train t0..t2 and val v0..v1 (distinct smooth-noise PNGs), classes a
 * and b with 4 boxes each per image. Returns the dataset folder (holding data.yaml).
 */
export async function cleanDataset(root: string): Promise<string> {
  await put(root, 'data.yaml', 'train: images/train\nval: images/val\nnames: [a, b]\n');
  for (let i = 0; i < 3; i++) {
    await put(root, `images/train/t${i}.png`, await smoothNoise(100 + i));
    await put(root, `labels/train/t${i}.txt`, balancedBoxes([0, 1]));
  }
  for (let i = 0; i < 2; i++) {
    await put(root, `images/val/v${i}.png`, await smoothNoise(200 + i));
    await put(root, `labels/val/v${i}.txt`, balancedBoxes([0, 1]));
  }
  return root;
}
