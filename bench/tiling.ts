/**
 * Tiled inference on one large image (default 4000x3000): seconds per image with tiles run one per
 * forward (batch 1, the original's way) vs stacked in chunks (batch 8), rounds interleaved in one
 * process; prints both and the ratio (batched / sequential, < 1 means batched is faster), and checks
 * both found the same detections.
 *
 *   node --import tsx bench/tiling.ts [--width 4000] [--height 3000] [--batch 8] [--imgsz 640] [--rounds 3] [--threads N]
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
    width: { type: 'string', default: '4000' }, height: { type: 'string', default: '3000' }, batch: { type: 'string', default: '8' },
    imgsz: { type: 'string', default: '640' }, rounds: { type: 'string', default: '3' }, threads: { type: 'string', default: String(cpus().length) },
  },
});
const [W, H, batch, imgsz, rounds] = [values.width, values.height, values.batch, values.imgsz, values.rounds].map(Number) as [number, number, number, number, number];
const fixtures = resolve(import.meta.dirname, '../../shared/fixtures');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-tiling-'));
const image = join(dir, 'large.jpg');
await sharp(SAMPLE_IMAGE).resize(W, H, { fit: 'fill' }).jpeg({ quality: 92 }).toFile(image);
const model = await LibreYOLO(resolve(fixtures, 'yolo9t_ref.pt'), { threads: Number(values.threads) });
const opts = { tiling: true, imgsz, conf: 0.25 };
try {
  const one = await model.predict(image, { ...opts, batch: 1 }) as Results;
  const many = await model.predict(image, { ...opts, batch }) as Results;
  if (one.length !== many.length) throw new Error('batched tiles found different detections than sequential tiles');
  const seq: number[] = [];
  const bat: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const b of round % 2 ? [batch, 1] : [1, batch]) {
      const t0 = performance.now();
      await model.predict(image, { ...opts, batch: b });
      (b === 1 ? seq : bat).push((performance.now() - t0) / 1000);
    }
  }
  const s = median(seq), b = median(bat);
  console.log(`tiled predict, yolo9t, one ${W}x${H} image, ${sliceBoxes(W, H, imgsz, 0.2).length} tiles of ${imgsz}, threads ${values.threads}, median of ${rounds} interleaved rounds:`);
  console.log(`  sequential tiles (batch 1): ${s.toFixed(2)} s/image`);
  console.log(`  batched tiles (batch ${batch}): ${b.toFixed(2)} s/image`);
  console.log(`  ratio batched/sequential ${(b / s).toFixed(3)} (< 1: batched is faster)`);
} finally {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
