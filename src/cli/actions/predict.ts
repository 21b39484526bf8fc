/** What `libreyolo predict` does once its flags are parsed (imported only when it runs). */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { LibreYOLO } from '../../load.ts';
import { LibreYOLOError } from '../../errors.ts';
import { resolveSources } from '../../data/sources.ts';
import { HALF_NOTICE, PREDICT_OPTIONS, type PredictOptions } from '../../predict/options.ts';
import { tableValues } from '../option-flags.ts';
import { summaryLine, type Results } from '../../predict/results.ts';
import { SourcesFailedError } from '../../predict/source-failures.ts';
import { CliExit } from '../report.ts';
import { SAMPLE_IMAGE } from '../../assets.ts';
import { isVideoSource } from '../../video/sources.ts';
import { modelLine } from '../model-line.ts';
import { jsonDetections } from '../result-json.ts';
import { runVideoCli } from '../video-run.ts';

export interface PredictFlags {
  model: string;
  task?: string;
  source?: string;
  threads?: number;
  json: boolean;
  [option: string]: unknown;
}

/** The CLI's notice for `half` on a checkpoint (exported files get the same text as the predict-time warning). */
const HALF_CHECKPOINT_NOTICE = `Warning: ${HALF_NOTICE}`;

/** `source=[a.jpg,b.jpg]` (the original's list form) as a list; anything else, or an existing file so named, as one source. */
function sourceList(value: string): string[] {
  const m = /^\[(.*)\]$/s.exec(value.trim());
  if (!m || existsSync(value)) return [value];
  return m[1]!.split(',').map((p) => p.trim().replace(/^(['"])(.*)\1$/, '$2')).filter((p) => p !== '');
}

function jsonResult(r: Results): Record<string, unknown> {
  return {
    path: r.path,
    original_shape: r.orig_shape,
    detections: jsonDetections(r),
    speed_ms: r.speed,
  };
}

export async function runPredict(positional: string[], flags: PredictFlags): Promise<void> {
  const given = positional.join(' ');
  if (flags.source !== undefined && positional.length > 0 && flags.source !== given) {
    throw new LibreYOLOError('config_conflict', `Two sources given: '${given}' and source=${flags.source}. Pass them one way (as arguments or as source=).`);
  }
  const list = flags.source !== undefined ? sourceList(flags.source) : positional;
  const source: string | string[] = list.length > 1 ? list : list[0] ?? SAMPLE_IMAGE;
  const opts = tableValues(flags, PREDICT_OPTIONS);
  const imgsz = opts.imgsz as number | [number, number] | undefined;
  const device = (opts.device as string | number | undefined) ?? 'cpu';
  // Resolve the source first: a mistyped path fails fast (exit 3) without loading any weights.
  // A video is opened by predict itself (ffmpeg); anything else is resolved first so a mistyped path fails fast.
  const video = isVideoSource(source);
  const total = video ? 0 : (await resolveSources(source)).items.length;
  const model = await LibreYOLO(flags.model, { device, ...(flags.threads !== undefined ? { threads: flags.threads } : {}), ...(flags.task !== undefined ? { task: flags.task } : {}) });
  const half = opts.half === true;
  if (half && model.format !== 'onnx') process.stderr.write(`${HALF_CHECKPOINT_NOTICE}\n`);
  try {
    // The command line always streams (stream= is accepted for compatibility); the model already
    // sits on the device. A checkpoint gets the CLI's half notice; an exported file gets half and the predict warning.
    const { stream: _stream, half: _half, device: _device, ...rest } = opts;
    const options: PredictOptions & { stream: true } = { ...rest, stream: true, ...(half && model.format === 'onnx' ? { half: true } : {}) };
    if (video) {
      await runVideoCli(model.predictVideo(source, options), {
        json: flags.json, source, stride: (opts.vid_stride as number | undefined) ?? 1, header: modelLine(model, imgsz),
        jsonHead: { schema_version: 1, source, model: flags.model, model_family: model.family.name, model_size: model.size, device: model.device.id },
      });
      return;
    }
    const results: Results[] = [];
    const started = performance.now();
    // Unreadable images in a folder or list come last, after every good result (summary, exit 3).
    let failed: SourcesFailedError | null = null;
    try {
      for await (const r of model.predict(source, options)) {
        results.push(r);
        if (!flags.json) {
          // Named with the first result, so a source that fails prints nothing on stdout.
          if (results.length === 1) process.stdout.write(`${modelLine(model, imgsz)}\n`);
          // Its share of the run's time (stage times overlap between chunks, so their sum would not add up).
          const ms = r.wall_ms ?? r.speed.preprocess + r.speed.inference + r.speed.postprocess;
          process.stdout.write(`image ${results.length}/${total} ${r.path ?? 'input'}: ${r.orig_shape[1]}x${r.orig_shape[0]} ${summaryLine(r)}, ${ms.toFixed(1)}ms\n`);
        }
      }
    } catch (err) {
      if (!(err instanceof SourcesFailedError)) throw err;
      failed = err;
    }
    const saved = results.map((r) => r.saved_path).filter((p): p is string => Boolean(p));
    if (flags.json) {
      const [h, w] = imgsz === undefined ? model.imgsz : typeof imgsz === 'number' ? [imgsz, imgsz] : imgsz;
      process.stdout.write(`${JSON.stringify({
        schema_version: 1, source, model: flags.model, model_family: model.family.name, model_size: model.size, image_size: [h, w], device: model.device.id,
        results: results.map(jsonResult), ...(saved.length ? { output_path: dirname(saved[0]!) } : {}),
        ...(failed ? { error: failed.code, failed: failed.failures.map((f) => ({ path: f.path, message: f.message })) } : {}),
      })}\n`);
      if (failed) throw new CliExit(failed.exitCode);
      return;
    }
    const n = Math.max(results.length, 1);
    const avg = (k: 'preprocess' | 'inference' | 'postprocess'): string => (results.reduce((a, r) => a + r.speed[k], 0) / n).toFixed(1);
    // Session creation is paid once per input shape; it is said apart so `inference` stays the forward.
    const loadMs = results.reduce((a, r) => a + (r.speed.load ?? 0), 0);
    const load = loadMs > 0 ? ` (model load ${loadMs.toFixed(1)}ms)` : '';
    process.stdout.write(`Speed: ${avg('preprocess')}ms preprocess, ${avg('inference')}ms inference, ${avg('postprocess')}ms postprocess per image; ${results.length} image(s) in ${((performance.now() - started) / 1000).toFixed(2)}s${load}\n`);
    if (saved.length) process.stdout.write(`Results saved to ${saved.length === 1 ? saved[0] : dirname(saved[0]!)}\n`);
    if (failed) throw failed;
  } finally {
    await model.close();
  }
}
