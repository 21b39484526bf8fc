/**
 * The chunked forward pipeline shared by plain predict, tiles and TTA views. Images go through in
 * chunks: a chunk is decoded (in parallel, on libuv's pool) and preprocessed on the main thread
 * while the worker runs the previous chunk's forward, and its own forward is dispatched before the
 * caller postprocesses the previous results, so the worker never waits on NMS or drawing. A stacked
 * chunk is letterboxed straight into one `[B,3,H,W]` buffer that moves (not copies) to the worker.
 * At most three chunks are alive: one being postprocessed, one in the worker, one being prepared.
 */
import type { RgbImage } from '../data/rgb-image.ts';
import type { HostTensor } from '../graph/tensor.ts';
import type { ModelFamily, PreprocessPlan } from '../models/registry.ts';
import type { ForwardResult } from '../runtime/engine.ts';
import { recordSpan, span } from '../runtime/spans.ts';
import { chunked, stackable } from './batching.ts';
import { planFor, planLength } from './preprocess.ts';

export interface Job<T> {
  meta: T;
  label: string;
  /** Decodes the source (recorded as a `decode` span), or hands over pixels already in memory (tiles, views). */
  load(): Promise<RgbImage> | RgbImage;
}

export interface ImageOutput<T> {
  meta: T;
  image: RgbImage;
  plan: PreprocessPlan;
  /** Raw head output holding this image's `[rows, cols]` (`[4+nc, anchors]` by default) at `offset`. */
  output: Float32Array;
  offset: number;
  anchors: number;
  /** Every output of the forward by name (`output` and the family's extra outputs), batch axis included. */
  outputs: Record<string, HostTensor>;
  /** This image's batch index in `outputs`. */
  index: number;
  /** This image's slot shape: the output's dims after the batch axis. */
  rows: number;
  cols: number;
  preprocessMs: number;
  inferenceMs: number;
  /** Session creation paid by this image's forward (the first image of a new shape), else 0. */
  loadMs: number;
  /**
   * This image's share of the wall time its caller waited for the chunk (session creation left
   * out). Stage times overlap across chunks (the next chunk is decoded during this one's forward);
   * these shares do not, so over a run they add up to its time.
   */
  waitMs: number;
}

export interface PipelineContext {
  family: ModelFamily;
  forward(x: HostTensor, options?: { transfer?: boolean }): Promise<ForwardResult>;
  /** Whether the runtime can take a batch of this size at all. */
  acceptsBatch(batch: number): boolean;
  /** The input plan of an image (default: the family's predict preprocessing, `planFor`). */
  plan?(image: RgbImage, size: [number, number]): PreprocessPlan;
}

interface PreparedChunk<T> {
  items: Array<{ meta: T; image: RgbImage; plan: PreprocessPlan }>;
  /** One stacked tensor, or one tensor per image. */
  tensors: HostTensor[];
  preprocessMs: number;
}

/** Called for a job whose image cannot be loaded; the chunk goes on without it. Absent: the chunk fails. */
export type LoadErrorHandler<T> = (meta: T, error: unknown) => void;

async function prepareChunk<T>(ctx: PipelineContext, jobs: Job<T>[], size: [number, number], stack: boolean, onLoadError?: LoadErrorHandler<T>): Promise<PreparedChunk<T>> {
  const t0 = performance.now();
  const loads = jobs.map(async (j) => {
    const loaded = j.load();
    return loaded instanceof Promise ? span('decode', 'preprocess', () => loaded, { source: j.label }) : loaded;
  });
  let loadedJobs: Array<{ meta: T; image: RgbImage }>;
  if (onLoadError) {
    loadedJobs = [];
    (await Promise.allSettled(loads)).forEach((r, k) => {
      if (r.status === 'fulfilled') loadedJobs.push({ meta: jobs[k]!.meta, image: r.value });
      else onLoadError(jobs[k]!.meta, r.reason);
    });
  } else {
    loadedJobs = (await Promise.all(loads)).map((image, k) => ({ meta: jobs[k]!.meta, image }));
  }
  const items = loadedJobs.map(({ meta, image }) => ({ meta, image, plan: ctx.plan ? ctx.plan(image, size) : planFor(ctx.family, image, size) }));
  const plans = items.map((i) => i.plan);
  let tensors: HostTensor[];
  if (stack && items.length > 1 && stackable(plans) && ctx.acceptsBatch(items.length)) {
    const per = planLength(plans[0]!);
    const data = new Float32Array(per * items.length);
    plans.forEach((p, k) => span('letterbox', 'preprocess', () => p.write(data, k * per)));
    tensors = [{ dtype: 'float32', dims: [items.length, ...plans[0]!.dims.slice(1)], data }];
  } else {
    // Shapes or dtypes differ (or stacking is off): one forward per image, so correctness never
    // depends on images happening to share a size.
    tensors = plans.map((p) => {
      const data = new Float32Array(planLength(p));
      span('letterbox', 'preprocess', () => p.write(data, 0));
      return { dtype: 'float32', dims: [...p.dims], data };
    });
  }
  return { items, tensors, preprocessMs: performance.now() - t0 };
}

async function forwardChunk<T>(ctx: PipelineContext, chunk: PreparedChunk<T>): Promise<Array<ImageOutput<T>>> {
  const n = chunk.items.length;
  const outs: Array<ImageOutput<T>> = [];
  let k = 0;
  for (const t of chunk.tensors) {
    const t0 = performance.now();
    const { output, extra, runMs, startEpochMs, loadMs = 0 } = await span('forward', 'forward', () => ctx.forward(t, { transfer: true }), { batch: t.dims[0] });
    const outputs = { ...extra, output };
    recordSpan('session.run (worker)', 'forward', startEpochMs, runMs);
    const b = t.dims[0]!;
    const ms = (performance.now() - t0 - loadMs) / b;
    const per = output.dims[1]! * output.dims[2]!;
    for (let j = 0; j < b; j++, k++) {
      const item = chunk.items[k]!;
      outs.push({
        ...item, output: output.data as Float32Array, offset: j * per, anchors: output.dims[2]!, rows: output.dims[1]!, cols: output.dims[2]!, outputs, index: j,
        preprocessMs: chunk.preprocessMs / n, inferenceMs: ms, loadMs: j === 0 ? loadMs : 0, waitMs: 0,
      });
    }
  }
  return outs;
}

/** Keeps a rejection of a promise we will await later from being reported as unhandled meanwhile. */
function later<P>(p: Promise<P>): Promise<P> {
  p.catch(() => undefined);
  return p;
}

/**
 * Runs `jobs` in chunks of `chunkSize` (stacked into one forward when `stack` allows it), yielding
 * each chunk's per-image outputs in order. With `onLoadError`, a job whose image cannot be loaded is
 * reported there and left out; without it, the failure ends the run, but only after the outputs
 * computed before it were yielded (the next chunk is prepared while the current one is handed out).
 */
export async function* runChunks<T>(
  ctx: PipelineContext, jobs: Iterable<Job<T>> | AsyncIterable<Job<T>>, chunkSize: number, stack: boolean, size: [number, number], onLoadError?: LoadErrorHandler<T>,
): AsyncGenerator<Array<ImageOutput<T>>> {
  // Jobs may arrive one by one (video frames): a chunk is taken only when it is prepared.
  const groups = Array.isArray(jobs) ? chunked(jobs as Job<T>[], Math.max(1, chunkSize)).values() : groupsOf(jobs, Math.max(1, chunkSize));
  const prepare = async (): Promise<PreparedChunk<T> | null> => {
    const g = await groups.next();
    return g.done ? null : prepareChunk(ctx, g.value, size, stack, onLoadError);
  };
  // When the caller last asked for a chunk: its wait for the next one starts there.
  let asked = performance.now();
  try {
    const first = await prepare();
    if (first === null) return;
    let inFlight = later(forwardChunk(ctx, first));
    let next = later(prepare());
    for (;;) {
      const outputs = await inFlight;
      let failure: { error: unknown } | null = null;
      let more = false;
      try {
        const chunk = await next;
        if (chunk !== null) {
          inFlight = later(forwardChunk(ctx, chunk));
          next = later(prepare());
          more = true;
        }
      } catch (error) {
        failure = { error };
      }
      if (outputs.length > 0) {
        const share = (performance.now() - asked - outputs.reduce((a, o) => a + o.loadMs, 0)) / outputs.length;
        for (const o of outputs) o.waitMs = Math.max(0, share);
      }
      yield outputs;
      asked = performance.now();
      if (failure) throw failure.error;
      if (!more) return;
    }
  } finally {
    // Not awaited: a frame source waiting on its producer is closed by its owner, which ends this.
    const closing = groups.return?.(undefined);
    if (closing instanceof Promise) closing.catch(() => undefined);
  }
}

/** Groups of `size` consecutive jobs (the last may be shorter), pulled as they are needed. */
async function* groupsOf<J>(jobs: Iterable<J> | AsyncIterable<J>, size: number): AsyncGenerator<J[]> {
  let group: J[] = [];
  for await (const j of jobs) {
    group.push(j);
    if (group.length === size) {
      yield group;
      group = [];
    }
  }
  if (group.length > 0) yield group;
}
