/** What the `libreyolo profile` subcommands do once their flags are parsed (imported only when one runs). */
import type { Command } from 'commander';
import { runInferProfile } from '../../app/infer-run.ts';
import { loadProfile } from '../../profile/load.ts';
import { writeCompareHtml, writeReport } from '../../profile/report.ts';
import { pyF, pyJson } from '../../profile/pyfmt.ts';
import {
  compareReader, getReader, kernelsReader, opsReader, phasesReader, summaryReader, whatIfReader, type ReaderOutput,
} from '../../profile/readers/index.ts';
import { DEFAULT_MODEL } from '../../assets.ts';
import { cliInvocation } from '../invocation.ts';
import { raisedToFloor } from '../values.ts';

function print(out: ReaderOutput, json: boolean): void {
  process.stdout.write(`${json ? pyJson(out.json, out.compact ? undefined : 2) : out.text}\n`);
}

export interface InferFlags {
  weights: string; size: string; batch: number; imgsz: number | [number, number]; half: boolean; ampDtype: string;
  warmup: number; runs: number; repeat: number; conf: number; iou: number; maxDet: number; device: string;
  trace: boolean; project: string; threads?: number; json: boolean;
}

export async function runInfer(source: string | undefined, f: InferFlags, cmd: Command): Promise<void> {
  const warn = (m: string): void => void process.stderr.write(`Warning: ${m}\n`);
  // The original's floors, said out loud: it measures at least 2 runs, one image, one trial.
  f.warmup = raisedToFloor('--warmup', f.warmup, 0, warn);
  f.runs = raisedToFloor('--runs', f.runs, 2, warn);
  f.batch = raisedToFloor('--batch', f.batch, 1, warn);
  f.repeat = raisedToFloor('--repeat', f.repeat, 1, warn);
  // The seed's defaults need CUDA and a download; on a CPU-only machine these flags work offline.
  const cpuFlags = `--device cpu${cmd.getOptionValueSource('weights') === 'default' ? ` --weights ${DEFAULT_MODEL.replace(/\.pt$/, '')}` : ''}`;
  const { profilePath, profile: a, timelinePath } = await runInferProfile({
    ...(source !== undefined ? { source } : {}), weights: f.weights, size: f.size, batch: f.batch, imgsz: f.imgsz,
    imgszIsDefault: cmd.getOptionValueSource('imgsz') === 'default', half: f.half,
    ampDtype: f.ampDtype, warmup: f.warmup, runs: f.runs, repeat: f.repeat, conf: f.conf, iou: f.iou, maxDet: f.maxDet,
    device: f.device, trace: f.trace, project: f.project, ...(f.threads ? { threads: f.threads } : {}),
    warn, cpuFlags,
  });
  const lat = a.latency;
  if (f.json) {
    process.stdout.write(`${pyJson({
      profile: profilePath, mode: 'inference', img_per_s: a.img_per_s, img_per_s_std: a.img_per_s_std ?? null, img_per_s_n: a.img_per_s_n ?? 1,
      latency_p50_ms: lat?.p50_ms ?? null, latency_p90_ms: lat?.p90_ms ?? null, latency_p99_ms: lat?.p99_ms ?? null,
      bound: a.bound, stages_ms: a.stages_ms ?? null,
    }, 2)}\n`);
    return;
  }
  const spread = (a.img_per_s_n ?? 1) > 1 ? ` +/- ${pyF(a.img_per_s_std)} (n=${a.img_per_s_n})` : '';
  const st = a.stages_ms;
  process.stdout.write([
    `latency  p50 ${pyF(lat?.p50_ms)} ms | p90 ${pyF(lat?.p90_ms)} ms | p99 ${pyF(lat?.p99_ms)} ms  |  ${pyF(a.img_per_s)}${spread} img/s`,
    `stages   preprocess ${pyF(st?.preprocess)} ms | forward ${pyF(st?.forward)} ms | postprocess/NMS ${pyF(st?.postprocess)} ms`,
    `>> ${a.bound.toUpperCase()}: ${a.bound_why}`,
    `profile: ${profilePath}`,
    ...(timelinePath ? [`timeline: ${timelinePath}  (open it in a browser)`] : []),
    `next:    ${cliInvocation()} profile summary ${profilePath}`,
  ].join('\n') + '\n');
}

export async function summary(trace: string, f: { json: boolean }): Promise<void> {
  print(summaryReader(await loadProfile(trace)), f.json);
}

export async function get(trace: string, field: string | undefined, f: { json: boolean }): Promise<void> {
  print(getReader(await loadProfile(trace), trace, field), f.json);
}

export async function phases(trace: string, f: { json: boolean }): Promise<void> {
  print(phasesReader(await loadProfile(trace)), f.json);
}

export async function kernels(trace: string, f: { top: number; category?: string; grep?: string; tensorcore: boolean; sort: string; phase?: string; json: boolean }): Promise<void> {
  print(kernelsReader(await loadProfile(trace), f), f.json);
}

export async function ops(trace: string, f: { top: number; phase?: string; json: boolean }): Promise<void> {
  print(opsReader(await loadProfile(trace), f), f.json);
}

export async function compare(before: string, after: string, f: { html?: string; json: boolean }): Promise<void> {
  const a = await loadProfile(before);
  const b = await loadProfile(after);
  const out = compareReader(a, b, before, after);
  if (f.html !== undefined) {
    const html = await writeCompareHtml(a, b, before, after, f.html);
    out.json = { ...(out.json as object), html };
    out.text += `\nhtml           ${html}`;
  }
  print(out, f.json);
}

export async function report(trace: string, f: { out?: string; json: boolean }): Promise<void> {
  const r = await writeReport(trace, f.out);
  print({ json: { timeline: r.path, traced: r.traced }, text: `timeline: ${r.path}${r.traced ? '' : '  (no trace found: panel only)'}` }, f.json);
}

export async function whatIf(trace: string, f: { removeCategory?: string; removeLaunches?: number; json: boolean }): Promise<void> {
  print(whatIfReader(await loadProfile(trace), f), f.json);
}
