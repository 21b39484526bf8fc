/**
 * The predict runner: decides per call how images go through the network (stacked chunks, one at a
 * time, tiles, or TTA views), then postprocesses each image into `Results` and saves it. Host spans
 * (`decode`, `letterbox`, `forward`, `session.run (worker)`, `nms`, `results`, `save`) are what the
 * profiler reads.
 */
import { LibreYOLOError } from '../errors.ts';
import type { RgbImage } from '../data/rgb-image.ts';
import type { SourceItem } from '../data/sources.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { checkFamilyImgsz, type ModelFamily } from '../models/registry.ts';
import type { ForwardResult } from '../runtime/engine.ts';
import { span } from '../runtime/spans.ts';
import type { Warn } from '../util/warn.ts';
import type { ResolvedPredictOptions } from './options.ts';
import { useStackedPath } from './batching.ts';
import { emptyDetections, familyDetections, mergeDetections, truncate } from './merge.ts';
import { validationPlanFor } from './preprocess.ts';
import { mergeTiles } from './tile-merge.ts';
import { runChunks, type ImageOutput, type Job, type LoadErrorHandler, type PipelineContext } from './pipeline.ts';
import { CLASS_FILTER_MIN_DET, filterClasses, postprocessDetections, postprocessKind, type Detections } from './postprocess.ts';
import { Boxes, Results } from './results.ts';
import type { Masks } from './masks.ts';
import { mergeSegmentViews, segmentDetections, type SegmentView } from './segment.ts';
import { saveAnnotated, saveTiled } from './savers.ts';
import { sourceFailure, SourcesFailedError, type SourceFailure } from './source-failures.ts';
import { checkAugmentTask, tilingMode } from './task-gates.ts';
import { cropImage, offsetBoxes, sliceBoxes, tileSize, type TileBox } from './tiling.ts';
import { ttaScales, ttaViews, unmapView, type View } from './tta.ts';

export interface PredictContext {
  family: ModelFamily;
  size: string;
  task: string;
  nc: number;
  names: Record<number, string>;
  /** Model input size `[h, w]` when imgsz is not given. */
  inputSize: [number, number];
  /** Set (to the file's name) when the model runs at `inputSize` only: an export with a static input. */
  fixedInputOf?: string;
  /** Train mode of the network: images are never stacked then. */
  training: boolean;
  /** Forward that may replay captured graphs (everything but TTA). */
  forward(x: HostTensor, options?: { transfer?: boolean }): Promise<ForwardResult>;
  /** Plain eager forward (TTA never replays graphs, as in the original). */
  eagerForward(x: HostTensor, options?: { transfer?: boolean }): Promise<ForwardResult>;
  acceptsBatch(batch: number): boolean;
  warn: Warn;
  /** Images are prepared as the original's validator does (the family's `valInput`), not as predict. */
  validation?: boolean;
}

interface ItemMeta {
  item: SourceItem;
  index: number;
}

function pipelineCtx(ctx: PredictContext, eager = false): PipelineContext {
  return {
    family: ctx.family, forward: eager ? ctx.eagerForward : ctx.forward, acceptsBatch: (b) => ctx.acceptsBatch(b),
    ...(ctx.validation ? { plan: (image: RgbImage, size: [number, number]) => validationPlanFor(ctx.family, image, size) } : {}),
  };
}

/** The family's decode choice as postprocess options, for an output of `columns` score rows. */
/** Detections of one image from its slot of the raw output. */
function detectionsOf<T>(ctx: PredictContext, o: ImageOutput<T>, opts: { conf: number; iou: number; maxDet: number; classes: number[] | null }): Detections {
  const post = {
    conf: opts.conf, iou: opts.iou, maxDet: opts.maxDet, classes: opts.classes,
    ratio: o.plan.ratio, origWidth: o.image.width, origHeight: o.image.height,
    ...(o.plan.ratioY !== undefined ? { ratioY: o.plan.ratioY } : {}),
    ...postprocessKind(ctx.family, o.rows - 4, ctx.nc),
  };
  const family = ctx.family;
  return span('nms', 'postprocess', () => family.candidates
    ? familyDetections(family.candidates(o.output, o.offset, o.rows, o.cols, post), post)
    // Score rows are read from the output itself: a DETR head has an extra no-object column (nc + 1).
    : postprocessDetections(o.output, o.offset, o.anchors, o.rows - 4, post));
}

/** `speed.load` is set only on a result whose forward created a session, so a warm result has none. */
function withLoad(speed: Results['speed'], loadMs: number): Results['speed'] {
  return loadMs > 0 ? { ...speed, load: loadMs } : speed;
}

function makeResults(ctx: PredictContext, det: Detections, image: RgbImage, item: SourceItem, speed: Results['speed'], masks: Masks | null = null): Results {
  return span('results', 'postprocess', () => new Results({
    boxes: new Boxes(det.xyxy, det.conf, det.cls),
    masks,
    names: ctx.names,
    orig_shape: [image.height, image.width],
    path: item.path,
    speed,
  }));
}

async function savePlain(image: RgbImage, result: Results, item: SourceItem, index: number, opts: ResolvedPredictOptions, isBatch: boolean): Promise<void> {
  if (!opts.save) return;
  result.saved_path = await span('save', 'io', () => saveAnnotated(image, result, {
    ...(opts.outputPath === undefined ? {} : { outputPath: opts.outputPath }),
    ext: opts.outputFormat,
    baseDir: opts.projectDir,
    stem: item.saveStem(isBatch ? index : null),
  }));
}

async function finish(ctx: PredictContext, o: ImageOutput<ItemMeta>, opts: ResolvedPredictOptions, isBatch: boolean): Promise<Results> {
  const t0 = performance.now();
  const { det, masks } = ctx.task === 'segment' ? segmentDetections(ctx.family, o, { ...opts, nc: ctx.nc }) : { det: detectionsOf(ctx, o, opts), masks: null };
  const result = makeResults(ctx, det, o.image, o.meta.item, withLoad({ preprocess: o.preprocessMs, inference: o.inferenceMs, postprocess: performance.now() - t0 }, o.loadMs), masks);
  await savePlain(o.image, result, o.meta.item, o.meta.index, opts, isBatch);
  result.wall_ms = o.waitMs + performance.now() - t0;
  return result;
}

/** One image through one forward (the plain single-image path). */
async function predictOne(ctx: PredictContext, item: SourceItem, index: number, image: RgbImage, size: [number, number], opts: ResolvedPredictOptions, isBatch: boolean): Promise<Results> {
  const jobs: Array<Job<ItemMeta>> = [{ meta: { item, index }, label: item.label, load: () => image }];
  for await (const [o] of runChunks(pipelineCtx(ctx), jobs, 1, false, size)) return finish(ctx, o!, opts, isBatch);
  throw new Error('unreachable: one job yields one output');
}

/** Items a predict run reads: a resolved list, or frames that arrive one by one (video). */
export type ItemStream = readonly SourceItem[] | AsyncIterable<SourceItem>;

async function* indexed(items: ItemStream): AsyncGenerator<ItemMeta> {
  let index = 0;
  for await (const item of items) yield { item, index: index++ };
}

/**
 * Yields each item with its decoded image, decoding the next one while the caller works. An item that
 * cannot be loaded goes to `onLoadError` (absent: the error ends the run) and the others go on.
 */
async function* decoded(items: ItemStream, onLoadError?: LoadErrorHandler<ItemMeta>): AsyncGenerator<{ item: SourceItem; index: number; image: RgbImage }> {
  const source = indexed(items);
  const load = async (): Promise<{ meta: ItemMeta; image: Promise<RgbImage> } | null> => {
    const r = await source.next();
    if (r.done) return null;
    const { item } = r.value;
    const image = span('decode', 'preprocess', () => item.load(), { source: item.label });
    image.catch(() => undefined);
    return { meta: r.value, image };
  };
  try {
    // The next item is asked for, not awaited, before this one is handed out: a live frame is never held back.
    let next = load();
    for (let current = await next; current !== null; current = await next) {
      let image: RgbImage;
      try {
        image = await current.image;
      } catch (error) {
        if (!onLoadError) throw error;
        onLoadError(current.meta, error);
        next = load();
        continue;
      }
      next = load();
      next.catch(() => undefined);
      yield { ...current.meta, image };
    }
  } finally {
    void source.return(undefined);
  }
}

/** Tiles of one image, stacked in chunks of `batch` where the family allows it (the original ran them one by one). */
async function predictTiled(ctx: PredictContext, item: SourceItem, index: number, image: RgbImage, opts: ResolvedPredictOptions, isBatch: boolean): Promise<Results> {
  const S = tileSize(opts.imgsz ?? ctx.inputSize);
  if (image.width <= S && image.height <= S) return predictOne(ctx, item, index, image, [S, S], opts, isBatch);
  const t0 = performance.now();
  const slices = sliceBoxes(image.width, image.height, S, opts.overlapRatio);
  const tiles = opts.save ? slices.map((s) => cropImage(image, s)) : null;
  const jobs: Array<Job<TileBox>> = slices.map((s, k) => ({ meta: s, label: `${item.label} tile ${k}`, load: () => tiles?.[k] ?? cropImage(image, s) }));
  const stack = ctx.family.capabilities.SUPPORTS_BATCHED_PREDICT && !ctx.training;
  const parts: Detections[] = [];
  let inference = 0;
  let load = 0;
  // SAHI's perform_standard_pred: the whole image, letterboxed to one tile, merged with the tiles.
  if (opts.standardPred) {
    for await (const [o] of runChunks(pipelineCtx(ctx), [{ meta: null, label: `${item.label} full`, load: () => image }], 1, false, [S, S])) {
      inference += o!.inferenceMs;
      load += o!.loadMs;
      parts.push(detectionsOf(ctx, o!, opts));
    }
  }
  for await (const chunk of runChunks(pipelineCtx(ctx), jobs, opts.batch, stack, [S, S])) {
    for (const o of chunk) {
      inference += o.inferenceMs;
      load += o.loadMs;
      const det = detectionsOf(ctx, o, opts);
      offsetBoxes(det.xyxy, o.meta[0], o.meta[1]);
      parts.push(det);
    }
  }
  const t1 = performance.now();
  let det = span('nms', 'postprocess', () => truncate(mergeTiles(parts, opts.tileMerge, opts.iou), opts.maxDet));
  if (opts.classes) det = filterClasses(det, opts.classes, -1);
  const result = makeResults(ctx, det, image, item, withLoad({ preprocess: t1 - t0 - inference - load, inference, postprocess: performance.now() - t1 }, load));
  result.tiled = true;
  result.num_tiles = slices.length;
  if (opts.save) {
    const saved = await span('save', 'io', () => saveTiled({
      image, result, tiles: tiles!, slices, stem: item.saveStem(isBatch ? index : null), family: ctx.family.name, size: ctx.size,
      ext: opts.outputFormat, ...(opts.outputPath === undefined ? {} : { outputPath: opts.outputPath }), baseDir: opts.projectDir,
      tileSize: S, overlapRatio: opts.overlapRatio, conf: opts.conf, iou: opts.iou,
    }));
    result.saved_path = saved.dir;
    result.tiles_path = saved.tilesPath;
    result.grid_path = saved.gridPath;
  }
  return result;
}

/** The image and its mirrored (and scaled) views, one eager stacked forward, merged by per-class NMS. */
async function predictAugmented(ctx: PredictContext, item: SourceItem, index: number, image: RgbImage, size: [number, number], opts: ResolvedPredictOptions, isBatch: boolean): Promise<Results> {
  const t0 = performance.now();
  const scales = ttaScales(ctx.family.capabilities);
  if (ctx.task === 'segment' && scales.some((s) => s !== 1)) {
    throw new LibreYOLOError('config_unsupported', `Test-time augmentation of segment models runs at scale 1.0 only; ${ctx.family.displayName} declares scales ${scales.join(', ')}. Use augment=false.`);
  }
  const views = ttaViews(image, scales);
  const jobs: Array<Job<View>> = views.map((v, k) => ({ meta: v, label: `${item.label} view ${k}`, load: () => v.image }));
  const stack = ctx.family.capabilities.SUPPORTS_BATCHED_PREDICT && !ctx.training;
  // The class filter runs after the merge, on a wider candidate set, as in the original.
  const viewOpts = { conf: opts.conf, iou: opts.iou, classes: null, maxDet: opts.classes ? Math.max(opts.maxDet, CLASS_FILTER_MIN_DET) : opts.maxDet };
  const parts: Detections[] = [];
  const segmented: SegmentView[] = [];
  let inference = 0;
  let load = 0;
  for await (const chunk of runChunks(pipelineCtx(ctx, true), jobs, views.length, stack, size)) {
    for (const o of chunk) {
      inference += o.inferenceMs;
      load += o.loadMs;
      if (ctx.task === 'segment') {
        const { det, masks } = segmentDetections(ctx.family, o, { ...viewOpts, nc: ctx.nc });
        segmented.push({ det: unmapView(det, o.meta, image.width, image.height), masks, flipped: o.meta.flipped });
      } else {
        parts.push(unmapView(detectionsOf(ctx, o, viewOpts), o.meta, image.width, image.height));
      }
    }
  }
  const t1 = performance.now();
  let det: Detections;
  let masks: Masks | null = null;
  if (ctx.task === 'segment') {
    ({ det, masks } = span('nms', 'postprocess', () => mergeSegmentViews(segmented, opts)));
  } else {
    det = parts.length ? span('nms', 'postprocess', () => mergeDetections(parts, opts.iou)) : emptyDetections();
    if (opts.classes) det = filterClasses(det, opts.classes, -1);
    det = truncate(det, opts.maxDet);
  }
  const result = makeResults(ctx, det, image, item, withLoad({ preprocess: t1 - t0 - inference - load, inference, postprocess: performance.now() - t1 }, load), masks);
  await savePlain(image, result, item, index, opts, isBatch);
  return result;
}

/** Refuses an imgsz other than the input size an export with a static input was made at. */
function checkFixedInput(ctx: PredictContext, [h, w]: readonly [number, number]): void {
  const [fh, fw] = ctx.inputSize;
  if (ctx.fixedInputOf === undefined || (h === fh && w === fw)) return;
  const option = (a: number, b: number): string => `imgsz=${a === b ? a : `[${a}, ${b}]`}`;
  throw new LibreYOLOError('invalid_imgsz',
    `${ctx.fixedInputOf} takes a fixed ${fh}x${fw} input (it was exported at that size), so ${option(h, w)} cannot run on it. Leave imgsz unset (or pass ${option(fh, fw)}), or export the model again at the size you need.`);
}

/**
 * Predicts every item in order, yielding each result as soon as it is ready. In a folder or list, an
 * image that cannot be read (missing, corrupt, too large, a failed download) does not stop the others:
 * after the last good result, a `SourcesFailedError` names every bad image and why. A single source
 * that cannot be read raises its own error.
 */
export async function* runPredict(ctx: PredictContext, items: ItemStream, opts: ResolvedPredictOptions, isBatch: boolean): AsyncGenerator<Results> {
  const failures: SourceFailure[] = [];
  const onLoadError: LoadErrorHandler<ItemMeta> | undefined = isBatch
    ? ({ item, index }, error) => failures.push(sourceFailure(index, item.path, item.label, error))
    : undefined;
  yield* predictItems(ctx, items, opts, isBatch, onLoadError);
  if (failures.length) throw new SourcesFailedError(failures, Array.isArray(items) ? items.length : failures.length);
}

async function* predictItems(
  ctx: PredictContext, items: ItemStream, opts: ResolvedPredictOptions, isBatch: boolean, onLoadError: LoadErrorHandler<ItemMeta> | undefined,
): AsyncGenerator<Results> {
  const size = opts.imgsz ?? ctx.inputSize;
  checkFamilyImgsz(ctx.family, size);
  checkFixedInput(ctx, size);
  const caps = ctx.family.capabilities;
  if (opts.tiling && tilingMode(ctx.task) === 'tile') {
    tileSize(size); // a rectangular imgsz is refused before any image is read
    for await (const { item, index, image } of decoded(items, onLoadError)) yield await predictTiled(ctx, item, index, image, opts, isBatch);
    return;
  }
  if (opts.augment && caps.TTA_ENABLED) {
    checkAugmentTask(ctx.task);
    for await (const { item, index, image } of decoded(items, onLoadError)) yield await predictAugmented(ctx, item, index, image, size, opts, isBatch);
    return;
  }
  const stack = useStackedPath(opts, caps, ctx.training);
  if (stack && !ctx.acceptsBatch(opts.batch)) {
    ctx.warn(`Batched inference is not possible for this model (its input batch size is fixed); falling back to sequential processing.`);
  }
  const job = (meta: ItemMeta): Job<ItemMeta> => ({ meta, label: meta.item.label, load: () => meta.item.load() });
  const jobs = Array.isArray(items) ? (items as SourceItem[]).map((item, index) => job({ item, index })) : mapJobs(indexed(items), job);
  for await (const chunk of runChunks(pipelineCtx(ctx), jobs, opts.batch, stack, size, onLoadError)) {
    for (const o of chunk) yield await finish(ctx, o, opts, isBatch);
  }
}

async function* mapJobs(metas: AsyncIterable<ItemMeta>, job: (m: ItemMeta) => Job<ItemMeta>): AsyncGenerator<Job<ItemMeta>> {
  for await (const m of metas) yield job(m);
}
