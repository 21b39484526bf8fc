/**
 * `libreyolo doctor` throughput: the full run (every image read once and decoded) against `--fast`
 * (labels only) on the same synthetic dataset, rounds alternating in one process so machine noise
 * hits both alike. Prints images/s of each (median of the rounds), the process's CPU time per image
 * (libuv's decode threads included) and how many times slower the full run is; both runs must report
 * the same label findings.
 *
 *   node --import tsx bench/doctor.ts [--images 2000] [--imgsz 160] [--rounds 3] [--data <data.yaml>]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { generateSynthDataset } from '../src/data/synth.ts';
import { diagnose } from '../src/doctor/diagnose.ts';
import { median } from './common.ts';

const { values } = parseArgs({
  options: { images: { type: 'string', default: '2000' }, imgsz: { type: 'string', default: '160' }, rounds: { type: 'string', default: '3' }, data: { type: 'string' } },
});
const rounds = Number(values.rounds);

let dir: string | null = null;
let yaml = values.data;
if (!yaml) {
  dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-doctor-'));
  const n = Number(values.images);
  const made = await generateSynthDataset({ out: join(dir, 'ds'), seed: 0, train: Math.round(n * 0.9), val: n - Math.round(n * 0.9), imgsz: Number(values.imgsz), format: 'jpg' });
  yaml = made.yaml;
}

try {
  const times: Record<'full' | 'fast', number[]> = { full: [], fast: [] };
  const cpu: Record<'full' | 'fast', number[]> = { full: [], fast: [] };
  let images = 0;
  const labelFindings: Record<'full' | 'fast', string> = { full: '', fast: '' };
  for (let r = 0; r < rounds; r++) {
    for (const mode of ['full', 'fast'] as const) {
      const t = performance.now();
      const c = process.cpuUsage();
      const report = await diagnose(yaml, { fast: mode === 'fast' });
      times[mode].push((performance.now() - t) / 1000);
      const used = process.cpuUsage(c);
      cpu[mode].push((used.user + used.system) / 1000);
      images = [...report.stats.splits.values()].reduce((k, s) => k + s.images, 0);
      labelFindings[mode] = JSON.stringify(report.findings.filter((f) => !/^(images|splits)\./.test(f.checkId)));
    }
  }
  if (labelFindings.full !== labelFindings.fast) throw new Error('--fast reported different label findings than the full run');
  const full = median(times.full), fast = median(times.fast);
  console.log(`dataset: ${yaml} (${images} images), ${rounds} rounds alternating`);
  console.log(`full:   ${(images / full).toFixed(0)} images/s (${full.toFixed(2)} s), CPU ${(median(cpu.full) / images).toFixed(2)} ms/image`);
  console.log(`--fast: ${(images / fast).toFixed(0)} images/s (${fast.toFixed(2)} s), CPU ${(median(cpu.fast) / images).toFixed(2)} ms/image`);
  console.log(`full / --fast time: ${(full / fast).toFixed(2)}x`);
} finally {
  if (dir) rmSync(dir, { recursive: true, force: true });
}
