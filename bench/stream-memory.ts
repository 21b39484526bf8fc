/**
 * Streaming memory: peak RSS of a process that streams N small images through
 * `predict(folder, {batch, stream: true})` with the bundled shapes model (real detections: the
 * sample scene at 160x90, eight shapes each), for 200 and 2,000 images, each in a fresh child process
 * so the peaks are comparable. Streaming holds at most a few chunks, so the 2,000-image peak should
 * stay within 1.2x of the 200-image one. The boxes each run found are printed beside its peak.
 *
 *   node --import tsx bench/stream-memory.ts [--small 200] [--large 2000] [--batch 4] [--imgsz 160]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { DEFAULT_MODEL_PATH, LibreYOLO, SAMPLE_IMAGE } from '../src/index.ts';
import { listImages } from '../src/data/sources.ts';
import { peakRssKb } from '../test/helpers/peak-rss.ts';

const { values } = parseArgs({
  options: {
    small: { type: 'string', default: '200' }, large: { type: 'string', default: '2000' }, batch: { type: 'string', default: '4' },
    imgsz: { type: 'string', default: '160' }, child: { type: 'string' }, dir: { type: 'string' },
  },
});

if (values.child) {
  // Child: stream the first N images of the folder and report the peak RSS.
  const n = Number(values.child);
  const files = (await listImages(values.dir!)).slice(0, n);
  const model = await LibreYOLO(DEFAULT_MODEL_PATH, { progress: false });
  let seen = 0, boxes = 0;
  for await (const r of model.predict(files, { batch: Number(values.batch), imgsz: Number(values.imgsz), stream: true })) {
    seen++;
    boxes += r.length;
  }
  await model.close();
  process.stdout.write(JSON.stringify({ seen, boxes, maxRssKb: peakRssKb() }));
  process.exit(0);
}

const small = Number(values.small), large = Number(values.large);
const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-stream-'));
try {
  const base = await sharp(SAMPLE_IMAGE).resize(160, 90).jpeg().toBuffer();
  for (let k = 0; k < large; k++) {
    // A different pixel per image, so every file is decoded for real.
    await sharp(base).modulate({ brightness: 0.5 + (k % 100) / 100 }).jpeg().toFile(join(dir, `s_${String(k).padStart(5, '0')}.jpg`));
  }
  const run = (n: number): { seen: number; boxes: number; maxRssKb: number } => JSON.parse(execFileSync(process.execPath, [
    '--import', 'tsx', fileURLToPath(import.meta.url), '--child', String(n), '--dir', dir, '--batch', values.batch, '--imgsz', values.imgsz,
  ], { encoding: 'utf8', maxBuffer: 1 << 20 })) as { seen: number; boxes: number; maxRssKb: number };
  const a = run(small);
  const b = run(large);
  if (a.seen !== small || b.seen !== large) throw new Error(`streamed ${a.seen}/${small} and ${b.seen}/${large} images`);
  const mb = (kb: number): string => (kb / 1024).toFixed(1);
  console.log(`streaming predict, bundled yolo9t (shapes), batch ${values.batch}, imgsz ${values.imgsz}, 160x90 JPEGs of 8 shapes; peak RSS per process:`);
  console.log(`  ${small} images: ${mb(a.maxRssKb)} MB, ${a.boxes} boxes (${(a.boxes / small).toFixed(2)} per image)`);
  console.log(`  ${large} images: ${mb(b.maxRssKb)} MB, ${b.boxes} boxes (${(b.boxes / large).toFixed(2)} per image)`);
  console.log(`  ratio ${(b.maxRssKb / a.maxRssKb).toFixed(3)} (goal <= 1.2)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
