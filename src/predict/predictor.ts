/**
 * The predict pipeline: load -> letterbox -> forward (worker) -> postprocess -> Results -> save.
 * Loading and letterboxing of the next image run on the main thread while the worker runs the
 * current forward, so host work hides behind inference.
 */
import { performance } from 'node:perf_hooks';
import type { RgbImage } from '../data/image.ts';
import { letterboxInto, type LetterboxInfo } from '../data/letterbox.ts';
import type { SourceItem } from '../data/sources.ts';
import type { SessionEngine } from '../runtime/engine.ts';
import { postprocessDetections } from './postprocess.ts';
import type { ResolvedPredictOptions } from './options.ts';
import { Boxes, Results } from './results.ts';
import { saveAnnotated } from './save.ts';
import { recordSpan, span } from '../runtime/spans.ts';

export interface PredictContext {
  engine: SessionEngine;
  nc: number;
  names: Record<number, string>;
  /** Model input size `[h, w]` when imgsz is not given. */
  inputSize: [number, number];
}

interface Prepared {
  item: SourceItem;
  index: number;
  image: RgbImage;
  tensor: Float32Array;
  lb: LetterboxInfo;
  preprocessMs: number;
}

async function prepare(item: SourceItem, index: number, size: [number, number]): Promise<Prepared> {
  const t0 = performance.now();
  const image = await span('decode', 'preprocess', () => item.load(), { source: item.label });
  const tensor = new Float32Array(3 * size[0] * size[1]);
  const lb = span('letterbox', 'preprocess', () => letterboxInto(image, size, tensor, 0));
  return { item, index, image, tensor, lb, preprocessMs: performance.now() - t0 };
}

async function finish(ctx: PredictContext, p: Prepared, size: [number, number], opts: ResolvedPredictOptions, batchSaveIndex: boolean): Promise<Results> {
  const t1 = performance.now();
  const { output, runMs, startEpochMs } = await span('forward', 'forward', () => ctx.engine.forward({ dtype: 'float32', dims: [1, 3, size[0], size[1]], data: p.tensor }));
  recordSpan('session.run (worker)', 'forward', startEpochMs, runMs);
  const inferenceMs = performance.now() - t1;
  const t2 = performance.now();
  const anchors = output.dims[2]!;
  const det = span('nms', 'postprocess', () => postprocessDetections(output.data as Float32Array, 0, anchors, ctx.nc, {
    conf: opts.conf, iou: opts.iou, maxDet: opts.maxDet, classes: opts.classes,
    ratio: p.lb.ratio, origWidth: p.image.width, origHeight: p.image.height,
  }));
  const result = span('results', 'postprocess', () => new Results({
    boxes: new Boxes(det.xyxy, det.conf, det.cls),
    names: ctx.names,
    orig_shape: [p.image.height, p.image.width],
    path: p.item.path,
    speed: { preprocess: p.preprocessMs, inference: inferenceMs, postprocess: performance.now() - t2 },
  }));
  if (opts.save) {
    result.saved_path = await span('save', 'io', () => saveAnnotated(p.image, result, {
      ...(opts.outputPath === undefined ? {} : { outputPath: opts.outputPath }),
      ext: opts.outputFormat,
      baseDir: opts.projectDir,
      stem: p.item.saveStem(batchSaveIndex ? p.index : null),
    }));
  }
  return result;
}

/** Predicts every item in order, one forward per image, overlapping host work with inference. */
export async function* predictSequential(ctx: PredictContext, items: SourceItem[], opts: ResolvedPredictOptions, isBatch: boolean): AsyncGenerator<Results> {
  const size = opts.imgsz ?? ctx.inputSize;
  let next: Promise<Prepared> | null = items.length ? prepare(items[0]!, 0, size) : null;
  for (let k = 0; k < items.length; k++) {
    const current = await next!;
    next = k + 1 < items.length ? prepare(items[k + 1]!, k + 1, size) : null;
    // Keep a failed prefetch from surfacing as an unhandled rejection before we reach it.
    next?.catch(() => undefined);
    yield await finish(ctx, current, size, opts, isBatch);
  }
}
