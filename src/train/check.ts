/**
 * The low-level check API: loss components and the gradient of every parameter (by state_dict key)
 * for one batch in train mode, leaving the model's weights and BN buffers untouched. Steps are
 * cached per (device, input shape) on the network.
 *
 * `precision: 'float64'` evaluates the same training graph with the float64 reference interpreter
 * instead of ONNX Runtime: exact arithmetic to ~1e-12, on a worker thread of the host CPU whatever
 * the device, and slow (about 20 s for yolo9t at batch 2, 320x320). It separates a real difference
 * from float32 rounding noise.
 */
import { LibreYOLOError } from '../errors.ts';
import { interpretInWorker } from '../graph/interpret/remote.ts';
import { trainingHooks, type DetectionNetwork, type ModelFamily } from '../models/registry.ts';
import type { HostTensor } from '../graph/tensor.ts';
import type { Device } from '../runtime/device.ts';
import { buildTrainGraph, parameterFeeds, switchNames, type TrainGraph } from './graph.ts';
import { TrainStep } from './step.ts';
import { mulberry32 } from '../util/random.ts';

export interface CheckOptions {
  /** 'float32' (default): the ORT training step. 'float64': the reference interpreter. */
  precision?: 'float32' | 'float64';
  /** ORT intra-op threads (float32 only; default: all cores). */
  threads?: number;
  /** The family's loss switches (YOLOX `use_l1`); unset ones are off. */
  switches?: Readonly<Record<string, boolean>>;
  /**
   * The host draws the family's forward reads (D-FINE's denoising queries, `HostAssigner.draws`),
   * e.g. a reference's recorded ones; absent: drawn with seed 0.
   */
  draws?: Readonly<Record<string, HostTensor>>;
}

export interface PlainTensor {
  data: Float32Array;
  dims: number[];
}

export interface LossAndGradients {
  /** `total` and the family's logged components (YOLOv9: box, dfl, cls). */
  loss: { total: number; [component: string]: number };
  gradients: Record<string, PlainTensor>;
  /** BN running statistics as they would be after this step (not written to the model). */
  runningStats: Record<string, PlainTensor>;
  numFg: number;
}

const steps = new WeakMap<DetectionNetwork, Map<string, Promise<TrainStep>>>();
const exactGraphs = new WeakMap<DetectionNetwork, Map<string, Promise<TrainGraph>>>();

function checkTensor(name: string, t: PlainTensor | undefined, rank: number, last?: number): asserts t is PlainTensor {
  if (!t || !(t.data instanceof Float32Array) || !Array.isArray(t.dims) || t.dims.length !== rank || (last !== undefined && t.dims[rank - 1] !== last)) {
    throw new LibreYOLOError('config_type_error', `${name} must be { data: Float32Array, dims: [${rank === 4 ? 'B, 3, H, W' : 'B, M, 5'}] }`);
  }
  if (t.data.length !== t.dims.reduce((a, b) => a * b, 1)) throw new LibreYOLOError('config_type_error', `${name}.data has ${t.data.length} values but dims [${t.dims.join(', ')}] need ${t.dims.reduce((a, b) => a * b, 1)}`);
}

/**
 * Targets are `[B, M, 5]` rows `[cls, x1, y1, x2, y2]` with corners normalised to 0..1; rows of class -1
 * or all zeros are padding. Pixel coordinates would pass the graph unnoticed and give a zero box loss
 * (no anchor centre falls inside a box that big in normalised space), so they are refused here.
 */
function checkTargets(targets: PlainTensor, nc: number): void {
  const [b, m] = targets.dims as [number, number];
  const d = targets.data;
  for (let i = 0; i < b; i++) {
    for (let j = 0; j < m; j++) {
      const o = (i * m + j) * 5;
      const [cls, x1, y1, x2, y2] = [d[o]!, d[o + 1]!, d[o + 2]!, d[o + 3]!, d[o + 4]!];
      if (cls === -1 || (cls === 0 && x1 === 0 && y1 === 0 && x2 === 0 && y2 === 0)) continue;
      const where = `targets row [${i}, ${j}] = [${[cls, x1, y1, x2, y2].map((v) => +v.toPrecision(6)).join(', ')}]`;
      if (!Number.isInteger(cls) || cls < 0 || cls >= nc) {
        throw new LibreYOLOError('config_range_error', `${where}: class ${cls} is not an integer in 0..${nc - 1} (or -1 for a padding row)`);
      }
      if (![x1, y1, x2, y2].every((v) => v >= 0 && v <= 1)) {
        throw new LibreYOLOError('config_range_error', `${where}: box corners must be normalised to [0, 1] (x / image width, y / image height), not pixels`);
      }
      if (x2 < x1 || y2 < y1) {
        throw new LibreYOLOError('config_range_error', `${where}: the box must be [x1, y1, x2, y2] with x1 <= x2 and y1 <= y2`);
      }
    }
  }
}

export async function lossAndGradients(family: ModelFamily, network: DetectionNetwork, device: Device, images: PlainTensor, targets: PlainTensor, options: CheckOptions = {}): Promise<LossAndGradients> {
  trainingHooks(family); // a clear error for families that cannot train
  const known = switchNames(family);
  const unknown = Object.keys(options.switches ?? {}).filter((k) => !known.includes(k));
  if (unknown.length) throw new LibreYOLOError('config_unknown_key', `Unknown loss switch(es) ${unknown.join(', ')}: ${family.name} has ${known.join(', ') || 'none'}.`);
  checkTensor('images', images, 4);
  checkTensor('targets', targets, 3, 5);
  const [b, c, h, w] = images.dims as [number, number, number, number];
  if (c !== 3 || h % 32 || w % 32) throw new LibreYOLOError('invalid_imgsz', `images must be [B, 3, H, W] with H and W multiples of 32, got [${images.dims.join(', ')}]`);
  if (targets.dims[0] !== b) throw new LibreYOLOError('config_type_error', `targets batch ${targets.dims[0]} does not match images batch ${b}`);
  checkTargets(targets, network.nc);
  const precision = options.precision ?? 'float32';
  if (precision !== 'float32' && precision !== 'float64') throw new LibreYOLOError('config_type_error', `precision must be 'float32' or 'float64', got ${JSON.stringify(precision)}`);
  const dimsOf = new Map([...network.namedTensors()].map(([k, p]) => [k, p.dims]));
  const pack = (m: Map<string, Float32Array>): Record<string, PlainTensor> =>
    Object.fromEntries([...m].map(([k, data]) => [k, { data, dims: [...dimsOf.get(k)!] }]));
  const draws = hostDraws(family, network, targets, [b, h, w], options.draws);
  if (precision === 'float64') {
    const r = await exactStep(family, network, [b, h, w], images, targets, options.switches ?? {}, draws);
    return { loss: r.loss, gradients: pack(r.gradients), runningStats: pack(r.runningStats), numFg: r.numFg };
  }
  const threads = options.threads;
  const key = `${device.id}|${images.dims.join('x')}|${targets.dims[1]}`;
  let cache = steps.get(network);
  if (!cache) steps.set(network, (cache = new Map()));
  let step = cache.get(key);
  if (!step) {
    // A check runs a few batches: the graph as built starts 10-17 s sooner than an optimised one
    // and a step costs 1-12% more (trainOptimizationLevel).
    step = TrainStep.create(family, network, { device, batch: b, imgsz: [h, w], maxTargets: targets.dims[1]!, preciseStats: true, optimizationLevel: 'disabled', ...(threads ? { threads } : {}) });
    cache.set(key, step);
    step.catch(() => cache.delete(key));
  }
  const result = await (await step).run({
    images: { dtype: 'float32', dims: images.dims, data: images.data },
    targets: { dtype: 'float32', dims: targets.dims, data: targets.data },
    draws,
  }, options.switches ?? {});
  return { loss: result.loss, gradients: pack(result.gradients), runningStats: pack(result.runningStats), numFg: result.numFg };
}

/** The step's host draws: the given ones (checked against the family's specs), else drawn with seed 0. */
function hostDraws(family: ModelFamily, network: DetectionNetwork, targets: PlainTensor, [b, h, w]: [number, number, number], given: CheckOptions['draws']): Readonly<Record<string, HostTensor>> {
  const draws = trainingHooks(family).assigner?.draws;
  const shape = { batch: b, height: h, width: w, maxTargets: targets.dims[1]! };
  if (!draws) {
    if (given && Object.keys(given).length) throw new LibreYOLOError('config_unknown_key', `${family.name} training has no host draws; got draws ${Object.keys(given).join(', ')}.`);
    return {};
  }
  const specs = draws.specs(shape, network.nc);
  if (!given) return draws.make({ dtype: 'float32', dims: targets.dims, data: targets.data }, shape, network.nc, mulberry32(0));
  for (const [name, spec] of Object.entries(specs)) {
    const t = given[name];
    if (!t || t.dtype !== spec.dtype || t.dims.join(',') !== spec.dims.join(',')) {
      throw new LibreYOLOError('config_type_error', `draws.${name} must be ${spec.dtype} [${spec.dims.join(', ')}] for this batch, got ${t ? `${t.dtype} [${t.dims.join(', ')}]` : 'nothing'}.`);
    }
  }
  const extra = Object.keys(given).filter((k) => !(k in specs));
  if (extra.length) throw new LibreYOLOError('config_unknown_key', `Unknown draws ${extra.join(', ')}: ${family.name} draws ${Object.keys(specs).join(', ')}.`);
  return given;
}

/** The training graph run by the float64 interpreter; results rounded to float32 like the ORT path's. */
async function exactStep(family: ModelFamily, network: DetectionNetwork, [b, h, w]: [number, number, number], images: PlainTensor, targets: PlainTensor, switches: Readonly<Record<string, boolean>>, draws: Readonly<Record<string, HostTensor>>) {
  const key = `${b}x${h}x${w}|${targets.dims[1]}`;
  let cache = exactGraphs.get(network);
  if (!cache) exactGraphs.set(network, (cache = new Map()));
  let graph = cache.get(key);
  if (!graph) {
    graph = buildTrainGraph(family, network, { batch: b, height: h, width: w, maxTargets: targets.dims[1]!, preciseStats: true });
    cache.set(key, graph);
    graph.catch(() => cache.delete(key));
  }
  const tg = await graph;
  const imagesT: HostTensor = { dtype: 'float32', dims: images.dims, data: images.data };
  const targetsT: HostTensor = { dtype: 'float32', dims: targets.dims, data: targets.data };
  // A host assigner reads the float64 forward's predictions (rounded to float32, as it gets them from ORT).
  let assigned: Record<string, HostTensor> = {};
  if (tg.assign) {
    const preds = await interpretInWorker(tg.assign.graph, { ...parameterFeeds(network, tg.assign.inputs), images: imagesT, ...draws });
    const asF32: Record<string, HostTensor> = {};
    for (const [k, v] of Object.entries(preds)) asF32[k] = { dtype: 'float32', dims: v.dims, data: Float32Array.from(v.data) };
    assigned = trainingHooks(family).assigner!.assign(asF32, targetsT, { batch: b, height: h, width: w, maxTargets: targets.dims[1]! }, network.nc, draws, network);
  }
  const switchFeeds: Record<string, HostTensor> = {};
  for (const k of tg.switches) switchFeeds[`switch.${k}`] = { dtype: 'float32', dims: [], data: Float32Array.of(switches[k] ? 1 : 0) };
  const out = await interpretInWorker(tg.graph, {
    ...parameterFeeds(network, [...tg.parameters, ...tg.buffers]),
    images: imagesT,
    targets: targetsT,
    ...draws,
    ...assigned,
    ...switchFeeds,
  });
  const scalar = (name: string): number => out[name]!.data[0]!;
  const loss: LossAndGradients['loss'] = { total: scalar('loss_total') };
  for (const k of tg.components) loss[k] = scalar(`loss_${k}`);
  return {
    loss,
    gradients: new Map(tg.parameters.map((k) => [k, Float32Array.from(out[`grad.${k}`]!.data)])),
    runningStats: new Map(tg.runningStats.map((k) => [k, Float32Array.from(out[`running.${k}`]!.data)])),
    numFg: scalar('num_fg'),
  };
}

/** Releases the cached train-step sessions of a network. */
export async function releaseCheckSessions(network: DetectionNetwork): Promise<void> {
  const cache = steps.get(network);
  if (!cache) return;
  steps.delete(network);
  for (const s of cache.values()) await (await s.catch(() => null))?.close();
}
