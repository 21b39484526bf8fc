/**
 * What ORT's graph optimisation buys a training step, by input size: for each configuration, one
 * child process (bench/train-step-child.ts) at level 'all' and one at 'disabled', alternating, each
 * printing its session create time and median step time. The ratio is the step at 'disabled' over
 * the step at 'all' in the same run of this script; the break-even is how many steps repay the
 * extra create time of 'all'. The on-disk cache of optimised graphs is off here
 * (LIBREYOLO_ORT_CACHE=0), so every 'all' session optimises from scratch.
 *
 *   node --import tsx bench/train-opt-level.ts [--steps 3] [--only yolo9:t:2:160]
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { steps: { type: 'string', default: '3' }, only: { type: 'string' } } });
const CONFIGS = values.only ? [values.only] : [
  'yolo9:t:2:64', 'yolo9:t:2:160', 'yolo9:t:4:160', 'yolo9:t:8:160', 'yolo9:t:2:320', 'yolo9:t:8:320',
  'yolox:n:2:160', 'yolox:n:8:320',
];

interface ChildResult { stepMs: number; createMs: number; peakRssMb: number }
function child(family: string, size: string, batch: string, imgsz: string, level: string): ChildResult {
  const out = execFileSync(process.execPath, ['--import', 'tsx', new URL('./train-step-child.ts', import.meta.url).pathname,
    '--family', family, '--size', size, '--batch', batch, '--imgsz', imgsz, '--steps', values.steps!, '--warmup', '1', '--opt-level', level],
  { encoding: 'utf8', env: { ...process.env, LIBREYOLO_ORT_CACHE: '0' }, maxBuffer: 1 << 24 });
  return JSON.parse(out.trim().split('\n').at(-1)!) as ChildResult;
}

console.log('config                 create all  create off   step all   step off   off/all   break-even steps');
for (const c of CONFIGS) {
  const [family, size, batch, imgsz] = c.split(':') as [string, string, string, string];
  const all = child(family, size, batch, imgsz, 'all');
  const off = child(family, size, batch, imgsz, 'disabled');
  const saved = off.stepMs - all.stepMs;
  const breakEven = saved > 0 ? String(Math.ceil((all.createMs - off.createMs) / saved)) : 'never';
  console.log(`${`${family}${size} b${batch}/${imgsz}`.padEnd(22)} ${(all.createMs / 1000).toFixed(1).padStart(9)} s ${(off.createMs / 1000).toFixed(1).padStart(9)} s ${all.stepMs.toFixed(0).padStart(7)} ms ${off.stepMs.toFixed(0).padStart(7)} ms ${(off.stepMs / all.stepMs).toFixed(3).padStart(8)}   ${breakEven}`);
}
