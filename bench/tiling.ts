/**
 * Tiled inference on one large image with real detections: `assets/sample-large.jpg` (1600x1200, 48
 * shapes) repeated `--mosaic` times across and down (default 2: 3200x2400, 192 shapes), predicted
 * with the bundled shapes model in 160 px tiles. Seconds per image with tiles run one per forward
 * (batch 1, the original's way) vs stacked in chunks of each `--batches` size, rounds interleaved in
 * one process; prints each, its ratio to sequential (< 1 means batched is faster) and the boxes
 * found, and checks that every mode found the same detections (count, boxes within 0.01 px). A last
 * line gives the boxes of SAHI's GREEDYNMM + IOS merge on the same tiles.
 *
 *   node --import tsx bench/tiling.ts [--mosaic 2] [--batches 2,4,8] [--rounds 3] [--threads N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { DEFAULT_MODEL_PATH, LibreYOLO, SAMPLE_LARGE_IMAGE, type Results } from '../src/index.ts';
import { sliceBoxes } from '../src/predict/tiling.ts';
import { median } from './common.ts';

const { values } = parseArgs({
  options: {
    mosaic: { type: 'string', default: '2' }, batches: { type: 'string', default: '2,4,8' },
    rounds: { type: 'string', default: '3' }, threads: { type: 'string', default: String(cpus().length) },
  },
});
const n = Number(values.mosaic), rounds = Number(values.rounds);
const modes = [1, ...values.batches.split(',').map(Number)];
const W = 1600 * n, H = 1200 * n;

const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-tiling-'));
const image = join(dir, 'large.jpg');
const tile = await sharp(SAMPLE_LARGE_IMAGE).toBuffer();
const placed = Array.from({ length: n * n }, (_, k) => ({ input: tile, left: (k % n) * 1600, top: Math.floor(k / n) * 1200 }));
await sharp({ create: { width: W, height: H, channels: 3, background: '#000000' } }).composite(placed).jpeg({ quality: 92 }).toFile(image);
const model = await LibreYOLO(DEFAULT_MODEL_PATH, { threads: Number(values.threads) });
const S = model.imgsz[0];
const opts = { tiling: true, conf: 0.25 };
try {
  const reference = await model.predict(image, { ...opts, batch: 1 }) as Results;
  for (const b of modes) {
    const r = await model.predict(image, { ...opts, batch: b }) as Results; // warm-up: sessions for every chunk shape
    if (r.length !== reference.length) throw new Error(`batch ${b}: ${r.length} boxes, sequential tiles found ${reference.length}`);
    r.boxes.xyxyData.forEach((v, k) => {
      if (Math.abs(v - reference.boxes.xyxyData[k]!) > 0.01) throw new Error(`batch ${b}: box ${k >> 2} differs from sequential tiles`);
    });
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
  console.log(`tiled predict, bundled yolo9t (shapes), one ${W}x${H} image of ${48 * n * n} shapes, ${sliceBoxes(W, H, S, 0.2).length} tiles of ${S}, conf 0.25, threads ${values.threads}, median of ${rounds} interleaved rounds:`);
  console.log(`  sequential tiles (batch 1): ${seq.toFixed(2)} s/image, ${reference.length} boxes (per-class NMS merge, the default)`);
  for (const b of modes.slice(1)) {
    const t = median(times.get(b)!);
    console.log(`  batched tiles (batch ${b}): ${t.toFixed(2)} s/image, ratio batched/sequential ${(t / seq).toFixed(3)} (< 1: batched is faster), ${reference.length} boxes, same as sequential`);
  }
  const greedy = await model.predict(image, { ...opts, batch: modes[modes.length - 1]!, postprocess_type: 'GREEDYNMM', match_metric: 'IOS', class_agnostic: true }) as Results;
  console.log(`  GREEDYNMM + IOS + class_agnostic merge: ${greedy.length} boxes for ${48 * n * n} shapes`);
} finally {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
