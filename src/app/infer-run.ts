/**
 * `profile infer` end to end: resolve the images, check the device, then per trial load the model,
 * profile it into its own folder, and with `--repeat` write the aggregate. Output folders increment
 * (`infer`, `infer2`, ...) and are never overwritten.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SAMPLE_IMAGE } from '../assets.ts';
import { LibreYOLO } from '../load.ts';
import { incrementDir } from '../predict/save.ts';
import { writeFileAtomic } from '../util/fs.ts';
import { aggregateInferTrials, INFER_REPEAT_FILE } from '../profile/aggregate.ts';
import { deviceOrError, ensureDeviceAvailable } from '../profile/device.ts';
import { LibreYOLOError } from '../errors.ts';
import { asProfileError } from '../profile/errors.ts';
import { profileInference } from '../profile/inference.ts';
import { pyJson } from '../profile/pyfmt.ts';
import { PROFILE_FILE, TIMELINE_FILE, type ProfileAnalysis } from '../profile/schema.ts';
import { resolveInferSource } from '../profile/sources.ts';
import { validateProfile } from '../profile/validate.ts';

export interface InferRunOptions {
  source?: string;
  weights: string;
  size: string;
  batch: number;
  imgsz: number | [number, number];
  /** `imgsz` is the command's default, not the user's: a model with a fixed input runs at its own size. */
  imgszIsDefault?: boolean;
  half: boolean;
  ampDtype: string;
  warmup: number;
  runs: number;
  repeat: number;
  conf: number;
  iou: number;
  maxDet: number;
  device: string;
  trace: boolean;
  project: string;
  /** ORT intra-op threads (default: all cores). */
  threads?: number;
  /** Where warnings go (stderr in the CLI). */
  warn?: (message: string) => void;
  /** The flags that profile on the CPU, named when the device is not there (default `--device cpu`). */
  cpuFlags?: string;
}

export interface InferRunResult {
  /** profile.json of a single run, or the aggregate of a repeated one. */
  profilePath: string;
  profile: ProfileAnalysis;
  dir: string;
  /** The last trial's timeline.html, null without a trace. */
  timelinePath: string | null;
}

const AMP_DTYPES: Record<string, 'float16' | 'bfloat16'> = { fp16: 'float16', float16: 'float16', bf16: 'bfloat16', bfloat16: 'bfloat16' };

export function normalizeAmpDtype(value: string): 'float16' | 'bfloat16' {
  const v = AMP_DTYPES[value.toLowerCase().replace(/\s+/g, '')];
  if (!v) throw new LibreYOLOError('profile_argument_invalid', `amp_dtype must be one of: bf16, bfloat16, float16, fp16; got ${value}`);
  return v;
}

function timelineOf(dir: string): string | null {
  const path = join(dir, TIMELINE_FILE);
  return existsSync(path) ? path : null;
}

export async function runInferProfile(o: InferRunOptions): Promise<InferRunResult> {
  const images = resolveInferSource(o.source ?? SAMPLE_IMAGE);
  if (!images.length) {
    const hint = o.source && /^[A-Za-z_][\w-]*=/.test(o.source) ? ' (the profile commands take POSIX flags: --weights x.pt, not weights=x.pt)' : '';
    throw new LibreYOLOError('profile_argument_invalid', `no images found at: ${o.source ?? 'the default source'}${hint}`);
  }
  const ampDtype = normalizeAmpDtype(o.ampDtype);
  const device = deviceOrError(o.device);
  await ensureDeviceAvailable(device, o.cpuFlags);
  const notes: string[] = [];
  // The ORT analogue of CUDA autocast is the model's half-precision compute (float32 islands where
  // the device has no half kernel); like the original, only on CUDA.
  const half = o.half && device.kind === 'cuda';
  if (o.half && !half) {
    const msg = `--half: fp16 autocast is CUDA-only; ${device.id} runs fp32.`;
    o.warn?.(msg);
    notes.push(msg);
  }
  const repeat = Math.max(1, o.repeat);
  const trials: number[] = [];
  let last: ProfileAnalysis | null = null;
  let dir = '';
  let lastDir = '';
  for (let i = 0; i < repeat; i++) {
    let model;
    try {
      model = await LibreYOLO(o.weights, { device: device.id, size: o.size, ...(o.threads ? { threads: o.threads } : {}) });
    } catch (err) {
      throw asProfileError(err);
    }
    try {
      if (half) await model.quantize({ recipe: ampDtype === 'bfloat16' ? 'bf16' : 'fp16' });
      // Claimed once the first model loads, so a bad --weights leaves no empty folder behind.
      dir ||= await incrementDir(o.project, 'infer');
      lastDir = repeat > 1 ? join(dir, `infer_${i}`) : dir;
      let imgsz = o.imgsz;
      if (o.imgszIsDefault && model.fixedInput) {
        const [h, w] = model.imgsz;
        const [ah, aw] = typeof o.imgsz === 'number' ? [o.imgsz, o.imgsz] : o.imgsz;
        imgsz = h === w ? h : [h, w];
        if (i === 0 && (ah !== h || aw !== w)) {
          const msg = `--imgsz: ${o.weights} takes a fixed ${h}x${w} input, so it is profiled at that size (not the default ${String(o.imgsz)}).`;
          o.warn?.(msg);
          notes.push(msg);
        }
      }
      last = await profileInference(model, images, {
        warmup: o.warmup, runs: o.runs, batch: o.batch, imgsz, conf: o.conf, iou: o.iou, maxDet: o.maxDet,
        trace: o.trace, saveDir: lastDir, meta: { model: o.weights }, half, ampDtype, notes,
      });
    } catch (err) {
      throw asProfileError(err);
    } finally {
      await model.close();
    }
    if (last.img_per_s !== null) trials.push(last.img_per_s);
  }
  if (trials.length > 1) {
    const profilePath = join(dir, INFER_REPEAT_FILE);
    const profile = aggregateInferTrials(last!, trials);
    await writeFileAtomic(profilePath, pyJson(validateProfile(profile)));
    return { profilePath, profile, dir, timelinePath: timelineOf(lastDir) };
  }
  return { profilePath: join(lastDir, PROFILE_FILE), profile: last!, dir, timelinePath: timelineOf(lastDir) };
}
