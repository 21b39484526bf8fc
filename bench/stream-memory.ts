/**
 * Streaming memory: peak RSS of a process that streams N small images through
 * `predict(folder, {batch, stream: true})`, for 200 and 2,000 images, each in a fresh child process
 * so the peaks are comparable. Streaming holds at most a few chunks, so the 2,000-image peak should
 * stay within 1.2x of the 200-image one.
 *
 *   node --import tsx bench/stream-memory.ts [--small 200] [--large 2000] [--batch 4] [--imgsz 160]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { LibreYOLO, SAMPLE_IMAGE } from '../src/index.ts';
import { listImages } from '../src/data/sources.ts';

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
  const model = await LibreYOLO(resolve(import.meta.dirname, '../../shared/fixtures/yolo9t_ref.pt'), { progress: false });
  let seen = 0, boxes = 0;
  for await (const r of model.predict(files, { batch: Number(values.batch), imgsz: Number(values.imgsz), stream: true })) {
    seen++;
    boxes += r.length;
  }
  await model.close();
  process.stdout.write(JSON.stringify({ seen, boxes, maxRssKb: process.resourceUsage().maxRSS }));
  process.exit(0);
}

const small = Number(values.small), large = Number(values.large);
const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-stream-'));
try {
  const base = await sharp(SAMPLE_IMAGE).resize(96, 64).jpeg().toBuffer();
  for (let k = 0; k < large; k++) {
    // A different pixel per image, so every file is decoded for real.
    await sharp(base).modulate({ brightness: 0.5 + (k % 100) / 100 }).jpeg().toFile(join(dir, `s_${String(k).padStart(5, '0')}.jpg`));
  }
  const run = (n: number): { seen: number; maxRssKb: number } => JSON.parse(execFileSync(process.execPath, [
    '--import', 'tsx', fileURLToPath(import.meta.url), '--child', String(n), '--dir', dir, '--batch', values.batch, '--imgsz', values.imgsz,
  ], { encoding: 'utf8', maxBuffer: 1 << 20 })) as { seen: number; maxRssKb: number };
  const a = run(small);
  const b = run(large);
  if (a.seen !== small || b.seen !== large) throw new Error(`streamed ${a.seen}/${small} and ${b.seen}/${large} images`);
  const mb = (kb: number): string => (kb / 1024).toFixed(1);
  console.log(`streaming predict (batch ${values.batch}, imgsz ${values.imgsz}, 96x64 JPEGs), peak RSS per process:`);
  console.log(`  ${small} images: ${mb(a.maxRssKb)} MB`);
  console.log(`  ${large} images: ${mb(b.maxRssKb)} MB`);
  console.log(`  ratio ${(b.maxRssKb / a.maxRssKb).toFixed(3)} (goal <= 1.2)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
