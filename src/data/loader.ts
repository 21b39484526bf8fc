/**
 * Training data loader: shuffles a dataset split per epoch, builds `TrainBatch`es (decode, augment,
 * letterbox, targets) in `workers` worker threads with prefetch, and yields them in order.
 *
 * Determinism: the epoch permutation comes from (seed, epoch) and every sample's augmentation from
 * its own generator seeded by (seed, epoch, position), so the batches are bit-identical whatever
 * the number of workers or the order in which they finish.
 *
 *     const loader = createLoader(split, { imgsz: 320, batch: 8, workers: 2, seed: 0 });
 *     for (let epoch = 0; epoch < epochs; epoch++) {
 *       loader.mosaic = epoch < epochs - 15;          // close mosaic as the original
 *       for await (const batch of loader.epoch(epoch)) step(batch.images, batch.targets);
 *     }
 *     await loader.close();
 */

import { integer } from '../util/options.ts';
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { LibreYOLOError, type ErrorCode } from '../errors.ts';
import { spawnSiblingWorker } from '../util/worker.ts';
import type { TrainBatch } from './train-batch.ts';
import { loadImageFile } from './image.ts';
import { letterboxGeometry, letterboxInto } from './letterbox.ts';
import { labelsToPixelBoxes, type ImageLabels } from './labels.ts';
import {
  DEFAULT_HYP, maybeScaleTranslate, mixSeed, mosaic4, mosaicAffine, mulberry32, preResize, trainTransform, writeMaskTargets, writeTargets,
  type AugmentHyp, type LoadedItem, type MaskTargets, type Segments,
} from './augment.ts';
import { drawMixup, mixup } from './mixup.ts';
import { strongAugment } from './strong-augment.ts';
import { maybeFlipFirst, randomResizeCrop } from './crop-resize.ts';
import type { DatasetSplit } from './dataset.ts';

export interface LoaderOptions {
  /** Square canvas side (multiple of 32). */
  imgsz: number;
  /** Images per batch. */
  batch: number;
  /** Worker threads decoding and augmenting (0 = in this thread). Default: min(8, cores - 1). */
  workers?: number;
  /** Batches in flight per worker (default 2). */
  prefetch?: number;
  /** Shuffle each epoch (default true). */
  shuffle?: boolean;
  /** Train augmentations (default true); false = plain letterbox of the original image, no jitter. */
  augment?: boolean;
  /** Mosaic items (default true); switch with `loader.mosaic` (close-mosaic). Needs `augment`. */
  mosaic?: boolean;
  /** D-FINE's strong ops (strong-augment.ts) on samples with boxes (default false); switch with `loader.strong`. Needs `augment`. */
  strong?: boolean;
  /** Seed of the shuffling and augmentation streams (default 0). */
  seed?: number;
  /** Drop the last partial batch; default as the original: when the split has at least `batch` images. */
  dropLast?: boolean;
  /** Target rows per image (default 100, as the original); extra objects are dropped. */
  maxLabels?: number;
  /** Augmentation hyper-parameters (defaults: the original's YOLO9 values). */
  hyp?: Partial<AugmentHyp>;
  /**
   * Fit each decoded image into imgsz (aspect kept, INTER_LINEAR) before the augmentations, as the
   * original's dataset does (default true); false hands the decoded image itself to them, so the
   * final stretch or letterbox is its only resize (DEIM's `wants_unresized_image`).
   */
  preResize?: boolean;
  /**
   * Keep decoded, pre-resized images in memory (the original's `cache="ram"`): each worker keeps
   * the images it has seen, about imgsz^2 * 3 bytes each. Default false.
   */
  cache?: boolean;
  /**
   * Segment training: also build mask targets `[B, maxLabels, imgsz / masks, imgsz / masks]` (the
   * downsample ratio, 4 for YOLOv9-seg) from the polygon rows; a box row becomes its rectangle.
   * The rings follow the mosaic, the random affine and scale/translate (resampled, warped, clipped;
   * the boxes recomputed from them), flip and letterbox; mixup is skipped, as the original skips it
   * when segments are present; the strong ops are refused.
   */
  masks?: number;
}

/** A batch plus where it came from. */
export interface LoaderBatch extends TrainBatch {
  epoch: number;
  /** Batch number within the epoch. */
  index: number;
  /** Dataset indices of the images (the first image of each mosaic). */
  indices: number[];
  paths: string[];
  /** `[H0, W0]` of each image file. */
  origShapes: [number, number][];
  /** Real (non-padding) target rows per image. */
  counts: number[];
}

/** What a batch job needs; sent once to each worker. */
export interface SampleContext {
  paths: string[];
  labels: ImageLabels[];
  imgsz: number;
  maxLabels: number;
  hyp: AugmentHyp;
  /** Keep decoded, pre-resized images in memory (per worker). */
  cache: boolean;
  /** Fit each image into imgsz before the augmentations (LoaderOptions.preResize). */
  preResize: boolean;
  /** Mask downsample ratio of segment training (0: no masks). */
  maskRatio: number;
}

export interface BatchJob {
  indices: number[];
  seeds: number[];
  augment: boolean;
  mosaic: boolean;
  /** D-FINE's strong ops on this batch's samples. */
  strong?: boolean;
}

export interface BatchData {
  images: Float32Array;
  targets: Float32Array;
  /** `[B, maxLabels, s / ratio, s / ratio]` with masks on, else null. */
  masks: Float32Array | null;
  origShapes: [number, number][];
  counts: number[];
}

/** Per sample context (one per loader, or per worker): dataset index -> decoded item. */
const itemCaches = new WeakMap<SampleContext, Map<number, Promise<LoadedItem>>>();

async function decodeItem(ctx: SampleContext, i: number): Promise<LoadedItem> {
  const img = await loadImageFile(ctx.paths[i]!);
  const r = ctx.preResize ? letterboxGeometry(img.width, img.height, ctx.imgsz, ctx.imgsz).ratio : 1;
  const boxes = labelsToPixelBoxes(ctx.labels[i]!, img.width, img.height, r);
  return {
    img: ctx.preResize ? preResize(img, ctx.imgsz) : img,
    boxes,
    ...(ctx.maskRatio ? { segs: pixelSegments(ctx.labels[i]!, boxes, img.width * r, img.height * r) } : {}),
    origShape: [img.height, img.width],
  };
}

/** The ring of each label row in pixels of a `w x h` image: the polygon, or a box row's rectangle (clipped to the image). */
function pixelSegments(labels: ImageLabels, boxes: Float32Array, w: number, h: number): Segments {
  return Array.from({ length: labels.n }, (_, k) => {
    const ring = labels.segments?.[k];
    if (ring) return ring.map((v, j) => v * (j % 2 ? h : w));
    const cx = (v: number): number => Math.min(Math.max(v, 0), w), cy = (v: number): number => Math.min(Math.max(v, 0), h);
    const x1 = cx(boxes[k * 5 + 1]!), y1 = cy(boxes[k * 5 + 2]!), x2 = cx(boxes[k * 5 + 3]!), y2 = cy(boxes[k * 5 + 4]!);
    return Float32Array.of(x1, y1, x2, y1, x2, y2, x1, y2);
  });
}

/** The pre-resized image and its boxes; with the cache on, a private copy of the cached item. */
async function loadItem(ctx: SampleContext, i: number): Promise<LoadedItem> {
  if (!ctx.cache) return decodeItem(ctx, i);
  let itemCache = itemCaches.get(ctx);
  if (!itemCache) itemCaches.set(ctx, (itemCache = new Map()));
  let p = itemCache.get(i);
  if (!p) {
    p = decodeItem(ctx, i);
    itemCache.set(i, p);
    p.catch(() => itemCache.delete(i));
  }
  const it = await p;
  return { img: { ...it.img, data: it.img.data.slice() }, boxes: it.boxes.slice(), ...(it.segs ? { segs: it.segs.map((r) => r.slice()) } : {}), origShape: it.origShape };
}

const labelledCache = new WeakMap<SampleContext, number[]>();

/** Dataset indices of the images with at least one label (mixup's candidates). */
function labelledIndices(ctx: SampleContext): number[] {
  let l = labelledCache.get(ctx);
  if (!l) labelledCache.set(ctx, (l = ctx.labels.flatMap((x, i) => (x.n > 0 ? [i] : []))));
  return l;
}

/** Builds one sample into its slices of the batch tensors; returns its origShape and label count. */
async function buildSample(ctx: SampleContext, job: BatchJob, k: number, out: BatchData): Promise<void> {
  const s = ctx.imgsz, plane = 3 * s * s, tOff = k * ctx.maxLabels * 5;
  const index = job.indices[k]!;
  const m = ctx.maskRatio ? s / ctx.maskRatio : 0;
  const maskSlot = (segs: Segments): MaskTargets => ({ segs, out: out.masks!, offset: k * ctx.maxLabels * m * m, ratio: ctx.maskRatio });
  if (!job.augment) {
    const img = await loadImageFile(ctx.paths[index]!);
    const info = letterboxInto(img, s, out.images, k * plane);
    out.origShapes[k] = [img.height, img.width];
    const boxes = labelsToPixelBoxes(ctx.labels[index]!, img.width, img.height, info.ratio);
    out.counts[k] = writeTargets(boxes, 1 / s, out.targets, tOff, ctx.maxLabels);
    if (ctx.maskRatio) {
      const segs = pixelSegments(ctx.labels[index]!, boxes, img.width * info.ratio, img.height * info.ratio);
      writeMaskTargets(segs.slice(0, out.counts[k]), 1, 1, s, maskSlot(segs));
    }
    return;
  }
  const rand = mulberry32(job.seeds[k]!);
  const useMosaic = job.mosaic && rand() < ctx.hyp.mosaicProb;
  let item: { img: LoadedItem['img']; boxes: Float32Array; segs?: Segments };
  if (useMosaic) {
    const n = ctx.paths.length;
    const idx = [index, Math.floor(rand() * n), Math.floor(rand() * n), Math.floor(rand() * n)];
    const items = await Promise.all(idx.map((i) => loadItem(ctx, i)));
    out.origShapes[k] = items[0]!.origShape;
    item = ctx.hyp.affine ? mosaicAffine(items, s, ctx.hyp.affine, rand) : mosaic4(items, s, rand);
    // Mixup follows a mosaic that has labels, with another labelled image (as the original).
    const labelled = labelledIndices(ctx);
    // Mixup is skipped when segments are present, as the original skips it.
    if (!ctx.maskRatio && ctx.hyp.mixupProb > 0 && item.boxes.length > 0 && labelled.length > 0 && rand() < ctx.hyp.mixupProb) {
      const draw = drawMixup(rand, ctx.hyp.mixupScale);
      const other = await loadItem(ctx, labelled[Math.floor(rand() * labelled.length)]!);
      item = mixup(item, other, s, draw, rand);
    }
  } else {
    const it = await loadItem(ctx, index);
    out.origShapes[k] = it.origShape;
    let sample = maybeFlipFirst(it, ctx.hyp.preFlipProb, rand);
    if (ctx.hyp.cropResize) sample = randomResizeCrop(sample, ctx.hyp.cropResize, rand);
    item = job.strong ? strongAugment(sample, rand) : sample;
  }
  item = maybeScaleTranslate(item, ctx.hyp, rand);
  out.counts[k] = trainTransform(item.img, item.boxes, s, ctx.hyp, rand, out.images, k * plane, out.targets, tOff, ctx.maxLabels,
    ctx.maskRatio ? maskSlot(item.segs!) : undefined);
}

/**
 * Builds a whole batch (all samples concurrently: decodes overlap in sharp's thread pool). With
 * `shared`, the tensors live in SharedArrayBuffers, so a worker hands them over without detaching
 * anything: a detached ArrayBuffer makes V8 drop its fast typed-array paths for the whole isolate,
 * which slows every later batch of that worker.
 */
export async function buildBatch(ctx: SampleContext, job: BatchJob, shared = false): Promise<BatchData> {
  const B = job.indices.length, s = ctx.imgsz;
  const alloc = (n: number): Float32Array => (shared ? new Float32Array(new SharedArrayBuffer(n * 4)) : new Float32Array(n));
  const out: BatchData = {
    images: alloc(B * 3 * s * s),
    targets: alloc(B * ctx.maxLabels * 5),
    masks: ctx.maskRatio ? alloc(B * ctx.maxLabels * (s / ctx.maskRatio) ** 2) : null,
    origShapes: new Array(B),
    counts: new Array(B),
  };
  await Promise.all(job.indices.map((_, k) => buildSample(ctx, job, k, out)));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Worker pool

type WorkerRequest = { type: 'init'; ctx: SampleContext } | { type: 'batch'; id: number; job: BatchJob };
export type WorkerReply =
  | { id: number; ok: true; data: BatchData }
  | { id: number; ok: false; code: string | null; message: string };
export type { WorkerRequest };

interface PoolWorker {
  worker: Worker;
  busy: number;
}

class WorkerPool {
  private readonly workers: PoolWorker[] = [];
  private readonly pending = new Map<number, { w: PoolWorker; resolve: (d: BatchData) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private dead: Error | null = null;

  constructor(count: number, ctx: SampleContext) {
    for (let i = 0; i < count; i++) {
      const worker = spawnSiblingWorker(import.meta.url, 'loader-worker');
      const pw: PoolWorker = { worker, busy: 0 };
      worker.unref();
      worker.on('message', (msg: WorkerReply) => this.onReply(msg));
      worker.on('error', (err) => this.fail(err));
      worker.on('exit', (code) => { if (code !== 0) this.fail(new Error(`data loader worker exited with code ${code}`)); });
      worker.postMessage({ type: 'init', ctx } satisfies WorkerRequest);
      this.workers.push(pw);
    }
  }

  private onReply(msg: WorkerReply): void {
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (--p.w.busy === 0) p.w.worker.unref();
    // Copy out of the shared buffers: consumers may transfer or keep the batch tensors freely.
    if (msg.ok) p.resolve({ ...msg.data, images: new Float32Array(msg.data.images), targets: new Float32Array(msg.data.targets), masks: msg.data.masks && new Float32Array(msg.data.masks) });
    else p.reject(isErrorCode(msg.code) ? new LibreYOLOError(msg.code, msg.message) : new Error(msg.message));
  }

  private fail(err: Error): void {
    if (this.dead) return;
    this.dead = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  run(job: BatchJob): Promise<BatchData> {
    if (this.dead) return Promise.reject(this.dead);
    let w = this.workers[0]!;
    for (const c of this.workers) if (c.busy < w.busy) w = c;
    const id = this.nextId++;
    if (w.busy++ === 0) w.worker.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { w, resolve, reject });
      w.worker.postMessage({ type: 'batch', id, job } satisfies WorkerRequest);
    });
  }

  async close(): Promise<void> {
    this.fail(new Error('data loader closed'));
    await Promise.all(this.workers.map((w) => w.worker.terminate()));
  }
}

const ERROR_CODES = new Set<string>(['data_invalid', 'data_not_found', 'data_images_missing', 'source_not_found', 'io_error']);
function isErrorCode(c: string | null): c is ErrorCode {
  return c !== null && ERROR_CODES.has(c);
}

// ---------------------------------------------------------------------------------------------
// The loader

export class DataLoader {
  /** Mosaic on/off for the next batches submitted (the trainer's close-mosaic switch). */
  mosaic: boolean;
  /** Strong ops on/off for the next batches submitted (D-FINE's stop epoch). */
  strong: boolean;
  readonly imgsz: number;
  readonly batchSize: number;
  readonly workers: number;
  readonly dropLast: boolean;
  readonly maxLabels: number;
  private readonly ctx: SampleContext;
  private readonly shuffle: boolean;
  private readonly augment: boolean;
  private readonly seed: number;
  private readonly prefetch: number;
  private pool: WorkerPool | null = null;
  private iterating = false;
  private closed = false;

  constructor(private readonly split: Pick<DatasetSplit, 'images' | 'labels'>, options: LoaderOptions) {
    const { imgsz, batch } = options;
    if (!Number.isInteger(imgsz) || imgsz < 32 || imgsz % 32 !== 0) throw new LibreYOLOError('invalid_imgsz', `imgsz must be a positive multiple of 32, got ${imgsz}`);
    integer({ min: 1 }).check('batch', batch);
    if (split.images.length === 0) throw new LibreYOLOError('data_images_missing', 'the dataset split has no images');
    const workers = options.workers ?? Math.min(8, Math.max(0, availableParallelism() - 1));
    if (!Number.isInteger(workers) || workers < 0) throw new LibreYOLOError('config_range_error', `workers must be an integer >= 0, got ${workers}`);
    this.imgsz = imgsz;
    this.batchSize = batch;
    this.workers = workers;
    this.prefetch = Math.max(1, options.prefetch ?? 2);
    this.shuffle = options.shuffle ?? true;
    this.augment = options.augment ?? true;
    this.mosaic = options.mosaic ?? true;
    this.strong = options.strong ?? false;
    this.seed = options.seed ?? 0;
    this.dropLast = options.dropLast ?? split.images.length >= batch;
    this.maxLabels = options.maxLabels ?? 100;
    const hyp: AugmentHyp = { ...DEFAULT_HYP, ...options.hyp };
    const maskRatio = options.masks ?? 0;
    if (maskRatio) {
      if (!Number.isInteger(maskRatio) || maskRatio < 1 || imgsz % maskRatio !== 0) throw new LibreYOLOError('config_range_error', `masks must be a ratio dividing imgsz ${imgsz}, got ${maskRatio}`);
      // The random affine and scale/translate warp the rings with the image (affine.ts); the strong ops do not.
      if (this.strong) throw new LibreYOLOError('config_unsupported', 'Segment training does not apply the strong ops to polygons: leave them off.');
      if (hyp.cropResize || hyp.preFlipProb > 0) throw new LibreYOLOError('config_unsupported', 'Segment training does not apply pre_flip or crop_resize to polygons: leave them off.');
    }
    if (hyp.stretchLinear && hyp.resize !== 'stretch') throw new LibreYOLOError('config_unsupported', 'The stretch_linear step needs a stretch onto the input; this run letterboxes.');
    this.ctx = { paths: split.images, labels: split.labels, imgsz, maxLabels: this.maxLabels, hyp, cache: options.cache ?? false, preResize: options.preResize ?? true, maskRatio };
  }

  /** Images in the split. */
  get size(): number {
    return this.split.images.length;
  }

  /** Batches per epoch. */
  get length(): number {
    const n = this.size / this.batchSize;
    return this.dropLast ? Math.floor(n) : Math.ceil(n);
  }

  /** The dataset order of an epoch (a seeded Fisher-Yates shuffle, or identity). */
  order(epoch: number): Int32Array {
    const n = this.size;
    const perm = new Int32Array(n);
    for (let i = 0; i < n; i++) perm[i] = i;
    if (!this.shuffle) return perm;
    const rand = mulberry32(mixSeed(this.seed, epoch, 0x5eed));
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      const t = perm[i]!; perm[i] = perm[j]!; perm[j] = t;
    }
    return perm;
  }

  private job(epoch: number, k: number, perm: Int32Array): BatchJob {
    const start = k * this.batchSize, end = Math.min(start + this.batchSize, this.size);
    const indices: number[] = [], seeds: number[] = [];
    for (let p = start; p < end; p++) {
      indices.push(perm[p]!);
      seeds.push(mixSeed(this.seed, epoch, p, 0xa09));
    }
    return { indices, seeds, augment: this.augment, mosaic: this.augment && this.mosaic, strong: this.augment && this.strong };
  }

  private run(job: BatchJob): Promise<BatchData> {
    if (this.workers === 0) return buildBatch(this.ctx, job);
    this.pool ??= new WorkerPool(this.workers, this.ctx);
    return this.pool.run(job);
  }

  /**
   * The batches of one epoch, in order. Up to `max(1, workers) * prefetch` batches are built ahead.
   * Leaving the loop early (break / throw) discards what was prefetched. One epoch at a time.
   */
  async *epoch(epoch: number): AsyncGenerator<LoaderBatch, void, undefined> {
    if (this.closed) throw new LibreYOLOError('io_error', 'this data loader has been closed');
    if (this.iterating) throw new LibreYOLOError('config_conflict', 'a data loader iterates one epoch at a time; finish or break the current loop first');
    this.iterating = true;
    const perm = this.order(epoch);
    const total = this.length;
    const ahead = Math.max(1, this.workers) * this.prefetch;
    const inflight = new Map<number, { job: BatchJob; result: Promise<BatchData> }>();
    let submitted = 0;
    try {
      for (let k = 0; k < total; k++) {
        while (submitted < total && submitted - k < ahead) {
          const job = this.job(epoch, submitted, perm);
          const result = this.run(job);
          result.catch(() => undefined); // observed below; avoids unhandled rejections for discarded batches
          inflight.set(submitted++, { job, result });
        }
        const { job, result } = inflight.get(k)!;
        inflight.delete(k);
        const data = await result;
        const B = job.indices.length, s = this.imgsz;
        yield {
          images: { dtype: 'float32', dims: [B, 3, s, s], data: data.images },
          targets: { dtype: 'float32', dims: [B, this.maxLabels, 5], data: data.targets },
          ...(data.masks ? { masks: { dtype: 'float32', dims: [B, this.maxLabels, s / this.ctx.maskRatio, s / this.ctx.maskRatio], data: data.masks } } : {}),
          epoch, index: k,
          indices: job.indices,
          paths: job.indices.map((i) => this.split.images[i]!),
          origShapes: data.origShapes,
          counts: data.counts,
        };
      }
    } finally {
      this.iterating = false;
    }
  }

  /** Stops the worker threads. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = null;
    await pool?.close();
  }
}

/** Creates a loader over a loaded split (see `loadDataset`). */
export function createLoader(split: Pick<DatasetSplit, 'images' | 'labels'>, options: LoaderOptions): DataLoader {
  return new DataLoader(split, options);
}
