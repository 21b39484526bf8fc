/** `libreyolo predict model=... source=... conf=0.25 save=true ...` */
import { modelLine } from '../model-line.ts';
import { Command, Option } from 'commander';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { LibreYOLO } from '../../load.ts';
import { LibreYOLOError } from '../../errors.ts';
import { resolveSources } from '../../data/sources.ts';
import { HALF_NOTICE, type PredictOptions } from '../../predict/options.ts';
import { summaryLine, type Results } from '../../predict/results.ts';
import { SourcesFailedError } from '../../predict/source-failures.ts';
import { CliExit } from '../report.ts';
import { checkRange, parseClasses, parseImgsz, parseInteger, parseNumber } from '../values.ts';
import { DEFAULT_MODEL, SAMPLE_IMAGE } from '../../assets.ts';
import { isVideoSource } from '../../video/sources.ts';
import { jsonDetections } from '../result-json.ts';
import { runVideoCli } from '../video-run.ts';

/** `true`/`false`/`1`/`0` for a valued boolean option. */
function parseFlag(name: string, v: string): boolean {
  if (/^(true|1)$/i.test(v)) return true;
  if (/^(false|0)$/i.test(v)) return false;
  throw new LibreYOLOError('config_type_error', `${name} must be true or false, got '${v}'`);
}

/** The bundled shapes detector, so `libreyolo predict` works offline on a fresh install. */
export const DEFAULT_PREDICT_MODEL = DEFAULT_MODEL;

interface PredictFlags {
  model: string;
  task?: string;
  source?: string;
  conf: number;
  iou: number;
  imgsz?: number | [number, number];
  classes?: number[];
  maxDet: number;
  save: boolean;
  batch: number;
  device: string;
  outputPath?: string;
  outputFileFormat?: string;
  half: boolean;
  stream?: boolean;
  tiling: boolean;
  overlapRatio?: number;
  postprocessType?: string;
  matchMetric?: string;
  matchThreshold?: number;
  classAgnostic?: boolean;
  performStandardPred?: boolean;
  augment: boolean;
  vidStride?: number;
  streamBuffer?: string;
  cudaGraph?: string;
  threads?: number;
  json: boolean;
}

/** The CLI's notice for `half` on a checkpoint (exported files get the same text as the predict-time warning). */
const HALF_CHECKPOINT_NOTICE = `Warning: ${HALF_NOTICE}`;

/** `true`/`false`/`1`/`0`/`auto`; anything else is passed on for predict to refuse with the original's message. */
function parseGraphMode(v: string): boolean | string {
  if (/^(true|1)$/i.test(v)) return true;
  if (/^(false|0)$/i.test(v)) return false;
  return v;
}

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

export function predictCommand(): Command {
  return new Command('predict')
    .description('Detect objects in an image, a folder, a URL or a list (key=value or --flag style); a segment model (LibreYOLO9t-seg.pt) also gives each object\'s mask.')
    .argument('[sources...]', 'image files, folders or URLs, one or several (default: the bundled sample image)')
    .option('--model <weights>', 'weights: a path, an exported .onnx, or a published name such as LibreYOLO9t.pt (the bundled shapes model by default)', DEFAULT_PREDICT_MODEL)
    .option('--task <task>', 'detect or segment (default: what the weights say; a -seg file or a mask head is segment)')
    .option('--source <source>', "image file, folder or URL, or a list as the original writes it: source=[a.jpg,b.jpg] (same as the positional arguments)")
    .option('--conf <number>', 'confidence threshold', parseNumber('conf'), 0.25)
    .option('--iou <number>', 'NMS IoU threshold', parseNumber('iou'), 0.45)
    .option('--imgsz <size>', 'input size: 640 or 480x640 (height x width)', parseImgsz)
    .option('--classes <ids>', 'keep only these class ids: 0 or 0,2 or [0,2]', parseClasses)
    .option('--max-det <n>', 'maximum detections per image', parseInteger('max_det'), 300)
    .option('--save', 'save annotated images under runs/detect/predict[N]', false)
    .option('--no-save', 'do not save annotated images')
    .option('--batch <n>', 'images per forward pass for folders and lists', parseInteger('batch'), 1)
    .option('--device <device>', 'cpu, 0 / cuda:0, or webgpu', 'cpu')
    .option('--output-path <path>', 'folder or file for saved images')
    .option('--output-file-format <fmt>', 'jpg, png or webp')
    .option('--half', 'accepted for compatibility; a no-op (warns). Use export half=true or quantize recipe=fp16', false)
    .option('--stream', 'accepted for compatibility: the CLI always prints each result as soon as it is ready')
    .option('--tiling', 'tiled inference for large images', false)
    .option('--overlap-ratio <r>', 'tile overlap in [0, 1)', parseNumber('overlap_ratio'))
    .option('--postprocess-type <type>', 'tile merge: NMS (default, the original\'s), NMM or GREEDYNMM (SAHI\'s)')
    .option('--match-metric <metric>', 'tile merge overlap: IOU (default) or IOS (intersection over the smaller box)')
    .option('--match-threshold <t>', 'tile merge: boxes match above this (default: iou)', parseNumber('match_threshold'))
    .option('--class-agnostic', 'tile merge across classes (default: per class)')
    .option('--perform-standard-pred', 'add a whole-image pass to the tiles before merging')
    .option('--augment', 'test-time augmentation (original + mirrored view, merged by NMS)', false)
    .option('--vid-stride <n>', 'videos and live streams: keep every N-th frame', parseInteger('vid_stride'))
    .option('--stream-buffer <bool>', 'live streams: queue every frame (true) or keep only the newest (false, default)')
    .option('--cuda-graph <mode>', 'graph capture: false, true or auto (needs a device that can capture)')
    .option('--threads <n>', 'ONNX Runtime threads (default: all cores)', parseInteger('threads'))
    .addOption(new Option('--json', 'print one JSON object (results only on stdout)').default(false))
    .action(async (positional: string[], flags: PredictFlags) => {
      const given = positional.join(' ');
      if (flags.source !== undefined && positional.length > 0 && flags.source !== given) {
        throw new LibreYOLOError('config_conflict', `Two sources given: '${given}' and source=${flags.source}. Pass them one way (as arguments or as source=).`);
      }
      const list = flags.source !== undefined ? sourceList(flags.source) : positional;
      const source: string | string[] = list.length > 1 ? list : list[0] ?? SAMPLE_IMAGE;
      checkRange('conf', flags.conf, 0, 1);
      checkRange('iou', flags.iou, 0, 1);
      checkRange('max_det', flags.maxDet, 1);
      checkRange('batch', flags.batch, 1);
      checkRange('threads', flags.threads, 1);
      // Resolve the source first: a mistyped path fails fast (exit 3) without loading any weights.
      // A video is opened by predict itself (ffmpeg); anything else is resolved first so a mistyped path fails fast.
      const video = isVideoSource(source);
      const total = video ? 0 : (await resolveSources(source)).items.length;
      const model = await LibreYOLO(flags.model, { device: flags.device, ...(flags.threads !== undefined ? { threads: flags.threads } : {}), ...(flags.task !== undefined ? { task: flags.task } : {}) });
      if (flags.half && model.format !== 'onnx') process.stderr.write(`${HALF_CHECKPOINT_NOTICE}\n`);
      try {
        const options: PredictOptions & { stream: true } = {
          stream: true, conf: flags.conf, iou: flags.iou, max_det: flags.maxDet, save: flags.save, batch: flags.batch,
          ...(flags.imgsz !== undefined ? { imgsz: flags.imgsz } : {}),
          ...(flags.classes ? { classes: flags.classes } : {}),
          ...(flags.outputPath ? { output_path: flags.outputPath } : {}),
          ...(flags.outputFileFormat ? { output_file_format: flags.outputFileFormat } : {}),
          // A checkpoint gets the CLI's notice; an exported file gets half and the predict warning.
          ...(flags.half && model.format === 'onnx' ? { half: true } : {}),
          ...(flags.cudaGraph !== undefined ? { cuda_graph: parseGraphMode(flags.cudaGraph) } : {}),
          ...(flags.tiling ? { tiling: true } : {}),
          ...(flags.overlapRatio !== undefined ? { overlap_ratio: flags.overlapRatio } : {}),
          ...(flags.postprocessType !== undefined ? { postprocess_type: flags.postprocessType as NonNullable<PredictOptions['postprocess_type']> } : {}),
          ...(flags.matchMetric !== undefined ? { match_metric: flags.matchMetric as NonNullable<PredictOptions['match_metric']> } : {}),
          ...(flags.matchThreshold !== undefined ? { match_threshold: flags.matchThreshold } : {}),
          ...(flags.classAgnostic ? { class_agnostic: true } : {}),
          ...(flags.performStandardPred ? { perform_standard_pred: true } : {}),
          ...(flags.augment ? { augment: true } : {}),
          ...(flags.vidStride !== undefined ? { vid_stride: flags.vidStride } : {}),
          ...(flags.streamBuffer !== undefined ? { stream_buffer: parseFlag('stream_buffer', flags.streamBuffer) } : {}),
        };
        if (video) {
          await runVideoCli(model.predictVideo(source, options), {
            json: flags.json, source, stride: flags.vidStride ?? 1, header: modelLine(model, flags.imgsz),
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
              if (results.length === 1) process.stdout.write(`${modelLine(model, flags.imgsz)}\n`);
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
          const [h, w] = flags.imgsz === undefined ? model.imgsz : typeof flags.imgsz === 'number' ? [flags.imgsz, flags.imgsz] : flags.imgsz;
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
    });
}
