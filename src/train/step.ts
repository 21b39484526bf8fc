/**
 * One training step on ONNX Runtime: forward (train-mode BN) + loss + backward in a single session
 * owned by a worker thread, keyed by (device, batch, input sizes): with several sizes (multi-scale
 * training) the graph is built at each, merged into one (graph/passes/share-shapes.ts), and each
 * run feeds its size's constants. Parameters are read from the network at every call and never
 * modified here: the optimizer updates them, the trainer copies the returned running statistics
 * into the BN buffers.
 */
import { cpus } from 'node:os';
import { serializeModel } from '../graph/onnx.ts';
import { shareShapes } from '../graph/passes/share-shapes.ts';
import { LibreYOLOError } from '../errors.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { trainingHooks, type DetectionNetwork, type HostAssigner, type ModelFamily, type TrainShape } from '../models/registry.ts';
import { mulberry32 } from '../util/random.ts';
import { deviceUnavailable, executionProviders, type Device } from '../runtime/device.ts';
import { WorkerHost, WorkerSession } from '../runtime/worker-host.ts';
import { createCachedSession, type CacheOutcome } from '../runtime/optimized-model-cache.ts';
import { recordSpan } from '../runtime/spans.ts';
import { LossScaler } from './amp.ts';
import { buildTrainGraph, lentParameterFeeds, type TrainGraph } from './graph.ts';
import type { StepResult } from './types.ts';
import type { TrainBatch } from '../data/train-batch.ts';

export interface TrainStepOptions {
  device: Device;
  threads?: number;
  batch: number;
  imgsz: [number, number];
  /**
   * Further input sizes `[h, w]` the step's one session serves (multi-scale training); `imgsz` is
   * always served. Default none.
   */
  sizes?: ReadonlyArray<readonly [number, number]>;
  /** Target rows per image (batches are padded to this). */
  maxTargets: number;
  /**
   * Accumulate BatchNorm statistics in float64 as PyTorch's CPU kernel does (default true, the
   * parity setting); false keeps them in float32 (two-pass, within ~2e-7 of float64), for providers
   * without float64 kernels and 1-4% faster on ORT CPU (bench/train-step.ts --float32-stats).
   */
  preciseStats?: boolean;
  /** Mixed precision with dynamic loss scaling (amp.ts); the trainer enables it on GPU providers only. */
  amp?: boolean;
  /** Recompute cheap forward values in the backward (TrainGraphConfig.recomputeCheap; default true). */
  recomputeCheap?: boolean;
  /** Hide per-image shapes from ORT's allocation planner (TrainGraphConfig.hideShapes; default true). */
  hideShapes?: boolean;
  /**
   * ORT's memory pattern (default false): after the first run it allocates all intermediates as one
   * block on top of the arena that run filled, paying each image's activations twice. True only to
   * measure the old behaviour (bench/train-step-child.ts --old-graph).
   */
  memPattern?: boolean;
  /** ORT's CPU memory arena (default on; SessionConfig.cpuArena). */
  cpuArena?: boolean;
  /** ORT profile file prefix: profile this step's session. */
  profileFilePrefix?: string;
  /** ORT graph optimisation level of the step's sessions (default 'all'; the trainer picks it with trainOptimizationLevel). */
  optimizationLevel?: TrainOptimizationLevel;
  /** Seed of the generator behind the family's host draws (`HostAssigner.draws`); default 0. */
  seed?: number;
}

export type TrainOptimizationLevel = 'disabled' | 'basic' | 'extended' | 'all';

/**
 * Train steps a run must plan before its step session is optimised. ORT's level 'all' makes a step
 * 1-12% faster and costs 7-17 s more to create (bench/train-opt-level.ts on 2 cores, 2026-12-04:
 * yolo9t b8/320 1.91 against 2.13 s a step, 21.3 against 5.1 s to create; b2/160 290 against 299 ms,
 * 17.4 against 5.1 s; yoloxn b8/320 2.36 against 2.40 s, 12.5 against 5.1 s), so it pays back after
 * 74 to 1400 steps. Once optimised, the graph is kept on disk (optimized-model-cache.ts) and later
 * runs of the same shape start at the unoptimised cost.
 */
export const OPTIMIZE_MIN_STEPS = 300;

/**
 * The level for a run of `plannedSteps` steps: 'all' for long runs and for profiled ones (a profile
 * stands for the long runs whose time it explains), the graph as built otherwise. A pure function of
 * the run, never of the cache, so the same run gives the same numbers bit for bit.
 */
export function trainOptimizationLevel(plannedSteps: number, profiled: boolean): TrainOptimizationLevel {
  return profiled || plannedSteps >= OPTIMIZE_MIN_STEPS ? 'all' : 'disabled';
}

/** The assignment half of a step whose family assigns targets on the host. */
interface AssignStage {
  assigner: HostAssigner;
  session: WorkerSession;
}

/** The size-dependent constants one input size feeds the shared graphs (none for a one-size step). */
interface SizeFeeds {
  train: Readonly<Record<string, HostTensor>>;
  assign: Readonly<Record<string, HostTensor>>;
}

const sizeKey = (h: number, w: number): string => `${h}x${w}`;

/** `imgsz` then the further sizes, each once. */
function stepSizes(options: TrainStepOptions): Array<readonly [number, number]> {
  const all = [options.imgsz, ...(options.sizes ?? [])];
  return all.filter(([h, w], k) => all.findIndex(([h2, w2]) => h2 === h && w2 === w) === k);
}

/**
 * The train graph for every size in `sizes`: built at each, merged into one graph whose
 * size-dependent constants are inputs (one size: the graph as built, no side inputs).
 */
async function buildStepGraph(family: ModelFamily, network: DetectionNetwork, options: TrainStepOptions, sizes: ReadonlyArray<readonly [number, number]>): Promise<{ graph: TrainGraph; feeds: Map<string, SizeFeeds> }> {
  const anySize = sizes.length > 1;
  const graphs: TrainGraph[] = [];
  for (const [height, width] of sizes) {
    graphs.push(await buildTrainGraph(family, network, {
      batch: options.batch, height, width, maxTargets: options.maxTargets, preciseStats: options.preciseStats !== false,
      amp: options.amp === true, recomputeCheap: options.recomputeCheap !== false, anySize, hideShapes: options.hideShapes !== false,
    }));
  }
  const first = graphs[0]!;
  if (!anySize) return { graph: first, feeds: new Map([[sizeKey(...sizes[0]!), { train: {}, assign: {} }]]) };
  if (first.masks) throw new LibreYOLOError('config_unsupported', 'multi_scale=true does not train segmentation heads: their mask targets have one size. Pass multi_scale=false.');
  const train = shareShapes(graphs.map((g) => g.graph));
  const assign = first.assign ? shareShapes(graphs.map((g) => g.assign!.graph)) : null;
  const feeds = new Map(sizes.map(([h, w], k) => [sizeKey(h, w), { train: train.feeds[k]!, assign: assign?.feeds[k] ?? {} }]));
  return { graph: { ...first, graph: train.graph, assign: first.assign && assign ? { ...first.assign, graph: assign.graph } : null }, feeds };
}

export class TrainStep {
  private constructor(
    private readonly network: DetectionNetwork,
    private readonly graph: TrainGraph,
    private readonly host: WorkerHost,
    private readonly session: WorkerSession,
    private readonly assign: AssignStage | null,
    private readonly sizeFeeds: ReadonlyMap<string, SizeFeeds>,
    /** Whether the loss session's optimised graph came from the on-disk cache. */
    readonly sessionCache: CacheOutcome,
    readonly options: TrainStepOptions,
    /** The dynamic loss scale, when amp is on. */
    readonly scaler: LossScaler | null = options.amp ? new LossScaler() : null,
    private readonly rand: () => number = mulberry32(options.seed ?? 0),
  ) {}

  static async create(family: ModelFamily, network: DetectionNetwork, options: TrainStepOptions): Promise<TrainStep> {
    const sizes = stepSizes(options);
    const { graph, feeds } = await buildStepGraph(family, network, options, sizes);
    const host = new WorkerHost();
    try {
      const sessionOptions = {
        executionProviders: executionProviders(options.device),
        intraOpNumThreads: options.threads ?? Math.max(1, cpus().length),
        graphOptimizationLevel: options.optimizationLevel ?? 'all',
        memPattern: options.memPattern === true,
        ...(options.cpuArena === false ? { cpuArena: false } : {}),
        ...(options.profileFilePrefix ? { profileFilePrefix: options.profileFilePrefix } : {}),
      };
      const key = `${options.device.id}|${options.batch}x${sizes.map(([h, w]) => sizeKey(h, w)).join(',')}`;
      // Through the on-disk cache of optimised graphs: optimising is most of a train session's start.
      // Reordered like the graph as built: ORT's optimiser renumbers the nodes it fuses, and its
      // execution order follows the numbers (optimized-model-cache.ts createReordered).
      const { session, cache } = await createCachedSession(host, `train|${key}`, serializeModel(graph.graph), sessionOptions, graph.graph);
      let assign: AssignStage | null = null;
      if (graph.assign) {
        const assigner = trainingHooks(family).assigner!;
        // Its own profile file: the loss session's file stays the one profilers and auto-batch read.
        // No arena: a forward frees all it allocated by the end of its run, and an arena would keep
        // that peak reserved beside the loss session's for the whole training (RF-DETR-n b2/128:
        // 300 MB of 2.99 GB peak RSS; YOLOX-s and D-FINE-n unchanged, step times within 2%).
        const assignOptions = { ...sessionOptions, cpuArena: false, ...(options.profileFilePrefix ? { profileFilePrefix: `${options.profileFilePrefix}_assign` } : {}) };
        assign = { assigner, session: (await createCachedSession(host, `assign|${key}`, serializeModel(graph.assign.graph), assignOptions)).session };
      }
      return new TrainStep(network, graph, host, session, assign, feeds, cache, options);
    } catch (err) {
      await host.terminate();
      if (options.device.kind !== 'cpu') throw deviceUnavailable(options.device, err);
      throw err;
    }
  }

  /** The input sizes `[h, w]` this step's session serves. */
  get sizes(): Array<[number, number]> {
    return [...this.sizeFeeds.keys()].map((k) => k.split('x').map(Number) as [number, number]);
  }

  get parameterKeys(): readonly string[] {
    return this.graph.parameters;
  }

  get sessionInfo(): WorkerSession {
    return this.session;
  }

  /** Pads or truncates targets to `[B, maxTargets, 5]` (padding rows `[-1,0,0,0,0]`). */
  private fitTargets(t: HostTensor): HostTensor {
    const [b, m] = t.dims as [number, number, number];
    const M = this.options.maxTargets;
    if (m === M) return t;
    const out = new Float32Array(b * M * 5);
    const src = t.data as Float32Array;
    for (let i = 0; i < b; i++) {
      for (let r = 0; r < M; r++) {
        if (r < m) out.set(src.subarray((i * m + r) * 5, (i * m + r + 1) * 5), (i * M + r) * 5);
        else out[(i * M + r) * 5] = -1;
      }
    }
    return { dtype: 'float32', dims: [b, M, 5], data: out };
  }

  /** The batch's mask targets as the graph takes them: slots padded (empty) or cut to maxTargets. */
  private fitMasks(t: HostTensor | undefined): HostTensor {
    const want = this.graph.masks!;
    if (!t) throw new LibreYOLOError('config_unsupported', 'YOLO9 segmentation training requires polygon masks. Use YOLO segmentation labels or COCO segmentations.');
    const [b, m, h, w] = t.dims as [number, number, number, number];
    if (b !== want[0] || h !== want[2] || w !== want[3]) throw new Error(`train step expects masks [${want.join(',')}], got [${t.dims.join(',')}]`);
    const M = want[1]!;
    if (m === M) return t;
    const out = new Float32Array(b * M * h * w);
    const src = t.data as Float32Array, plane = h * w;
    for (let i = 0; i < b; i++) out.set(src.subarray(i * m * plane, (i * m + Math.min(m, M)) * plane), i * M * plane);
    return { dtype: 'float32', dims: want, data: out };
  }

  /**
   * The host assignment's feeds: the assignment graph's forward on the current weights (train-mode
   * BN, as the loss graph's), then the family's assigner on its outputs.
   */
  private async assignFeeds(images: HostTensor, targets: HostTensor, draws: Readonly<Record<string, HostTensor>>, shape: TrainShape, sized: SizeFeeds): Promise<Record<string, HostTensor>> {
    if (!this.assign) return {};
    const ag = this.graph.assign!;
    const weights = lentParameterFeeds(this.network, ag.inputs);
    const { outputs, runMs, startEpochMs } = await this.assign.session.run({ ...weights.feeds, images, ...draws, ...sized.assign }, false, weights.lend);
    recordSpan('train assignment forward (worker)', 'forward', startEpochMs, runMs);
    return this.assign.assigner.assign(outputs, targets, shape, this.network.nc, draws, this.network);
  }

  /** This step's host draws: the batch's own, else fresh ones from the step's generator. */
  private drawFeeds(batch: TrainBatch, targets: HostTensor, shape: TrainShape): Readonly<Record<string, HostTensor>> {
    const draws = this.assign?.assigner.draws;
    if (!draws) return {};
    return batch.draws ?? draws.make(targets, shape, this.network.nc, this.rand);
  }

  /** `switch.<name>` feeds: 1 for switches that are on, 0 otherwise. */
  private switchFeeds(switches: Readonly<Record<string, boolean>>): Record<string, HostTensor> {
    const unknown = Object.keys(switches).filter((k) => !this.graph.switches.includes(k));
    if (unknown.length) throw new Error(`unknown loss switch(es) ${unknown.join(', ')}; this family has ${this.graph.switches.join(', ') || 'none'}`);
    return Object.fromEntries(this.graph.switches.map((k) => [`switch.${k}`, { dtype: 'float32', dims: [], data: Float32Array.of(switches[k] ? 1 : 0) } as HostTensor]));
  }

  async run(batch: TrainBatch, switches: Readonly<Record<string, boolean>> = {}): Promise<StepResult> {
    const { images } = batch;
    const [b, c, h, w] = images.dims as [number, number, number, number];
    const sized = this.sizeFeeds.get(sizeKey(h, w));
    if (images.dims.length !== 4 || b !== this.options.batch || c !== 3 || !sized) {
      const sizes = this.sizes.map(([sh, sw]) => `[${this.options.batch},3,${sh},${sw}]`).join(' or ');
      throw new Error(`train step expects images ${sizes}, got [${images.dims.join(',')}]`);
    }
    const shape: TrainShape = { batch: b, height: h, width: w, maxTargets: this.options.maxTargets };
    const targets = this.fitTargets(batch.targets);
    const draws = this.drawFeeds(batch, targets, shape);
    const assigned = await this.assignFeeds(images, targets, draws, shape, sized);
    const weights = lentParameterFeeds(this.network, [...this.graph.parameters, ...this.graph.buffers]);
    const feeds: Record<string, HostTensor> = {
      ...weights.feeds,
      images,
      targets,
      ...(this.graph.masks ? { masks: this.fitMasks(batch.masks) } : {}),
      ...draws,
      ...assigned,
      ...this.switchFeeds(switches),
      ...sized.train,
    };
    if (this.scaler) feeds.loss_scale = { dtype: 'float32', dims: [], data: Float32Array.of(this.scaler.scale) };
    const { outputs, runMs, startEpochMs } = await this.session.run(feeds, false, weights.lend);
    recordSpan('train step (worker)', 'forward', startEpochMs, runMs);
    const scalar = (name: string): number => (outputs[name]!.data as Float32Array)[0]!;
    const gradients = new Map<string, Float32Array>();
    for (const key of this.graph.parameters) gradients.set(key, outputs[`grad.${key}`]!.data as Float32Array);
    const runningStats = new Map<string, Float32Array>();
    for (const key of this.graph.runningStats) runningStats.set(key, outputs[`running.${key}`]!.data as Float32Array);
    const overflow = this.scaler ? !this.scaler.unscale(gradients.values()) : false;
    const loss: StepResult['loss'] = { total: scalar('loss_total') };
    for (const k of this.graph.components) loss[k] = scalar(`loss_${k}`);
    return {
      loss,
      gradients,
      runningStats,
      numFg: scalar('num_fg'),
      ...(overflow ? { overflow } : {}),
    };
  }

  async endProfiling(): Promise<void> {
    await this.session.endProfiling();
    await this.assign?.session.endProfiling();
  }

  async close(): Promise<void> {
    try {
      await this.session.release();
      await this.assign?.session.release();
    } finally {
      await this.host.terminate();
    }
  }
}
