/**
 * Tiled inference on one large image (default 4000x3000): seconds per image with tiles run one per
 * forward (batch 1, the original's way) vs stacked in chunks of each `--batches` size, rounds
 * interleaved in one process; prints each and its ratio to sequential (< 1 means batched is
 * faster), and checks that every mode found the same detections.
 *
 *   node --import tsx bench/tiling.ts [--width 4000] [--height 3000] [--batches 2,4,8] [--imgsz 640] [--rounds 3] [--threads N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { LibreYOLO, SAMPLE_IMAGE, type Results } from '../src/index.ts';
import { sliceBoxes } from '../src/predict/tiling.ts';

const { values } = parseArgs({
  options: {
    width: { type: 'string', default: '4000' }, height: { type: 'string', default: '3000' }, batches: { type: 'string', default: '2,4,8' },
    imgsz: { type: 'string', default: '640' }, rounds: { type: 'string', default: '3' }, threads: { type: 'string', default: String(cpus().length) },
  },
});
const [W, H, imgsz, rounds] = [values.width, values.height, values.imgsz, values.rounds].map(Number) as [number, number, number, number];
const modes = [1, ...values.batches.split(',').map(Number)];
const fixtures = resolve(import.meta.dirname, '../../shared/fixtures');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-tiling-'));
const image = join(dir, 'large.jpg');
await sharp(SAMPLE_IMAGE).resize(W, H, { fit: 'fill' }).jpeg({ quality: 92 }).toFile(image);
const model = await LibreYOLO(resolve(fixtures, 'yolo9t_ref.pt'), { threads: Number(values.threads) });
const opts = { tiling: true, imgsz, conf: 0.25 };
try {
  const reference = await model.predict(image, { ...opts, batch: 1 }) as Results;
  for (const b of modes) {
    const r = await model.predict(image, { ...opts, batch: b }) as Results; // warm-up: sessions for every chunk shape
    if (r.length !== reference.length) throw new Error(`batch ${b} tiles found different detections than sequential tiles`);
  }
  const times = new Map<number, number[]>(modes.map((b) => [b, []]));
  for (let round = 0; round < rounds; round++) {
    for (const b of round % 2 ? [...modes].reverse() : modes) {
      const t0 = performance.now();
      await model.predict(image, { ...opts, batch: b });
      times.get(b)!.push((performance.now() - t0) / 1000);
    }
  }
  const seq = median(times.get(1)!);
  console.log(`tiled predict, yolo9t, one ${W}x${H} image, ${sliceBoxes(W, H, imgsz, 0.2).length} tiles of ${imgsz}, threads ${values.threads}, median of ${rounds} interleaved rounds:`);
  console.log(`  sequential tiles (batch 1): ${seq.toFixed(2)} s/image`);
  for (const b of modes.slice(1)) {
    const t = median(times.get(b)!);
    console.log(`  batched tiles (batch ${b}): ${t.toFixed(2)} s/image, ratio batched/sequential ${(t / seq).toFixed(3)} (< 1: batched is faster)`);
  }
} finally {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
