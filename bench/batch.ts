/**
 * Batched predict throughput. Writes a folder of images (the sample scene at several sizes), then
 * predicts the whole folder at batch 1, 4 and 8 in one process, rounds interleaved so machine noise
 * hits every batch size alike; prints images/s per batch size (median of the rounds) and the ratio
 * to batch 1, and checks that every batch size found the same detections.
 *
 *   node --import tsx bench/batch.ts [--images 32] [--imgsz 640] [--rounds 3] [--batches 1,4,8] [--threads N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { LibreYOLO, SAMPLE_IMAGE, type Results } from '../src/index.ts';

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
const fixtures = resolve(import.meta.dirname, '../../shared/fixtures');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-batch-'));
const sizes: Array<[number, number]> = [[640, 480], [800, 600], [1280, 720], [960, 540]];
for (let k = 0; k < count; k++) {
  const [w, h] = sizes[k % sizes.length]!;
  await sharp(SAMPLE_IMAGE).resize(w, h, { fit: 'fill' }).jpeg({ quality: 90 }).toFile(join(dir, `img_${String(k).padStart(3, '0')}.jpg`));
}
const model = await LibreYOLO(resolve(fixtures, 'yolo9t_ref.pt'), { threads: Number(values.threads) });
const opts = { imgsz, conf: 0.25 };
try {
  const reference = await model.predict(dir, { ...opts, batch: 1 }) as Results[];
  for (const b of batches) {
    const r = await model.predict(dir, { ...opts, batch: b }) as Results[]; // warm-up: sessions for every chunk shape
    if (r.some((x, i) => x.length !== reference[i]!.length)) throw new Error(`batch ${b} found different detections than batch 1`);
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
  console.log(`batched predict, yolo9t on ${count} images (${sizes.map((s) => s.join('x')).join(', ')}), imgsz ${imgsz}, threads ${values.threads}, median of ${rounds} interleaved rounds:`);
  for (const b of batches) {
    const s = median(times.get(b)!);
    console.log(`  batch ${b}: ${(count / s).toFixed(2)} img/s (${s.toFixed(2)} s per folder) ratio ${(count / s / base).toFixed(3)} vs batch ${batches[0]}`);
  }
} finally {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
