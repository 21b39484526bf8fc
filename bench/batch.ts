/**
 * Batched predict throughput with real detections. Writes a folder of images (the crowd scene of 144
 * shapes at several sizes), then predicts the whole folder with the bundled shapes model at batch 1,
 * 4 and 8 in one process, rounds interleaved so machine noise hits every batch size alike; prints
 * images/s per batch size (median of the rounds), the ratio to batch 1 and the boxes found, and
 * checks that every batch size found the same detections as batch 1 (count per image, boxes within
 * 0.01 px).
 *
 *   node --import tsx bench/batch.ts [--images 32] [--imgsz 640] [--rounds 3] [--batches 1,4,8] [--threads N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { DEFAULT_MODEL_PATH, LibreYOLO, type Results } from '../src/index.ts';
import { crowdJpeg, median } from './common.ts';

const { values } = parseArgs({
  options: {
    images: { type: 'string', default: '32' }, imgsz: { type: 'string', default: '640' }, rounds: { type: 'string', default: '3' },
    batches: { type: 'string', default: '1,4,8' }, threads: { type: 'string', default: String(cpus().length) },
  },
});
const count = Number(values.images);
const imgsz = Number(values.imgsz);
const rounds = Number(values.rounds);
const batches = values.batches.split(',').map(Number);

/** Per-image box counts must match and boxes agree within 0.01 px; returns the total boxes. */
function sameDetections(a: Results[], b: Results[], label: string): number {
  let total = 0;
  a.forEach((r, i) => {
    const o = b[i]!;
    if (r.length !== o.length) throw new Error(`${label}: image ${i} has ${r.length} boxes, batch 1 found ${o.length}`);
    r.boxes.xyxyData.forEach((v, k) => {
      if (Math.abs(v - o.boxes.xyxyData[k]!) > 0.01) throw new Error(`${label}: image ${i} box ${k >> 2} differs from batch 1 by ${Math.abs(v - o.boxes.xyxyData[k]!)} px`);
    });
    total += r.length;
  });
  return total;
}

const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-batch-'));
const sizes: Array<[number, number]> = [[768, 768], [800, 600], [1280, 720], [640, 640]];
const crowd = await crowdJpeg();
for (let k = 0; k < count; k++) {
  const [w, h] = sizes[k % sizes.length]!;
  await sharp(crowd).resize(w, h, { fit: 'fill' }).jpeg({ quality: 90 }).toFile(join(dir, `img_${String(k).padStart(3, '0')}.jpg`));
}
const model = await LibreYOLO(DEFAULT_MODEL_PATH, { threads: Number(values.threads) });
const opts = { imgsz, conf: 0.25 };
try {
  const reference = await model.predict(dir, { ...opts, batch: 1 }) as Results[];
  const boxes = new Map<number, number>();
  for (const b of batches) {
    const r = await model.predict(dir, { ...opts, batch: b }) as Results[]; // warm-up: sessions for every chunk shape
    boxes.set(b, sameDetections(r, reference, `batch ${b}`));
  }
  const times = new Map<number, number[]>(batches.map((b) => [b, []]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 ? [...batches].reverse() : batches;
    for (const b of order) {
      const t0 = performance.now();
      await model.predict(dir, { ...opts, batch: b });
      times.get(b)!.push((performance.now() - t0) / 1000);
    }
  }
  const base = count / median(times.get(batches[0]!)!);
  console.log(`batched predict, bundled yolo9t (shapes) on ${count} crowd-scene images (${sizes.map((s) => s.join('x')).join(', ')}), imgsz ${imgsz}, conf 0.25, threads ${values.threads}, median of ${rounds} interleaved rounds:`);
  for (const b of batches) {
    const s = median(times.get(b)!);
    console.log(`  batch ${b}: ${(count / s).toFixed(2)} img/s (${s.toFixed(2)} s per folder) ratio ${(count / s / base).toFixed(3)} vs batch ${batches[0]}; ${boxes.get(b)} boxes (${(boxes.get(b)! / count).toFixed(1)} per image), same as batch 1`);
  }
} finally {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
