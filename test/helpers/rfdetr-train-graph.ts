/**
 * The original's RF-DETR-n train step (rfdetrn_ref_train.safetensors) as the train tests build it:
 * the train-mode forward on ORT (the assignment forward: every layer's and the encoder's outputs,
 * the proposal order), the host matchings and loss inputs on its outputs, and forward (the same
 * proposal order) + loss (+ backward) in one lowered graph.
 */
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { appendGradients } from '../../src/graph/autodiff/autodiff.ts';
import { probeShapes } from '../../src/graph/autodiff/shapes.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import type { Graph } from '../../src/graph/ir.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { lowerComposites } from '../../src/graph/passes/lower-composites.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { ImageTargets, Match } from '../../src/models/detr/matching.ts';
import { emitRfdetrLoss } from '../../src/models/rfdetr/loss.ts';
import { rfdetrLossInputs, rfdetrLossInputSpecs, type RfdetrLossContext } from '../../src/models/rfdetr/loss-targets.ts';
import { RfdetrNetwork } from '../../src/models/rfdetr/network.ts';
import { loadRfdetrStateDict } from '../../src/models/rfdetr/state-dict.ts';
import { emitRfdetrTrainForward } from '../../src/models/rfdetr/train-forward.ts';
import { RFDETR_TOPK_INDEX, rfdetrTrainOutputRecord } from '../../src/models/rfdetr/train-outputs.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fixtureTargets } from './dfine-targets.ts';
import { fixture } from './fixtures.ts';
import { normalizeU8 } from './rfdetr-fixture.ts';

/** The fixture step's input side and batch. */
export const SIZE = 384;
const BATCH = 2;

export function toOrt(t: HostTensor): ort.Tensor {
  return new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
}

function fromOrt(out: ort.InferenceSession.OnnxValueMapType): Record<string, HostTensor> {
  const r: Record<string, HostTensor> = {};
  for (const [k, t] of Object.entries(out)) r[k] = { dtype: t.type as 'float32', dims: [...t.dims], data: t.data as Float32Array };
  return r;
}

export async function runGraph(graph: Graph, feeds: Record<string, HostTensor>): Promise<Record<string, HostTensor>> {
  return (await runGraphOn(graph, [feeds]))[0]!;
}

/** One session, run once per feed set. */
export async function runGraphOn(graph: Graph, feedSets: ReadonlyArray<Record<string, HostTensor>>): Promise<Array<Record<string, HostTensor>>> {
  const session = await ort.InferenceSession.create(serializeModel(graph), { intraOpNumThreads: 2 });
  try {
    const out: Array<Record<string, HostTensor>> = [];
    for (const feeds of feedSets) out.push(fromOrt(await session.run(Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, toOrt(t)])))));
    return out;
  } finally {
    await session.release();
  }
}

/** Every value one float32 ulp up (its bit pattern + 1). */
export function ulpUp(t: HostTensor): HostTensor {
  const data = Float32Array.from(t.data as Float32Array);
  const bits = new Uint32Array(data.buffer);
  for (let k = 0; k < bits.length; k++) bits[k]! += 1;
  return { ...t, data };
}

export interface RfdetrFixtureStep {
  train: Map<string, HostTensor>;
  /** Input side and batch of this step (the fixture's 384 and 2 unless asked smaller). */
  size: number;
  batch: number;
  net: RfdetrNetwork;
  images: HostTensor;
  targets: ImageTargets[];
  /** The assignment forward's outputs (train output record + RFDETR_TOPK_INDEX). */
  preds: Record<string, HostTensor>;
  ctx: RfdetrLossContext;
  lossHost: Record<string, HostTensor>;
  matches: Record<string, Match[]>;
}

/** The first `batch` images of `u8` [B, 3, S, S], every (S / size)-th pixel of each row and column. */
function subsampleU8(u8: HostTensor, batch: number, size: number): HostTensor {
  const s = u8.dims[2]!;
  const step = s / size;
  if (!Number.isInteger(step)) throw new RangeError(`${size} does not divide the fixture's ${s}`);
  const src = u8.data as Uint8Array;
  const out = new Uint8Array(batch * 3 * size * size);
  for (let p = 0; p < batch * 3; p++) for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) out[(p * size + y) * size + x] = src[(p * s + y * step) * s + x * step]!;
  return { dtype: 'uint8', dims: [batch, 3, size, size], data: out };
}

export interface RfdetrStepOptions {
  /** Proposal groups other than 13, only to see a test fail. */
  groups?: number;
  /** A smaller step on the same weights and targets: the fixture's first `batch` images subsampled to `size` (a divisor of 384 and multiple of 32). */
  size?: number;
  batch?: number;
}

/** The fixture's step (or a smaller one on its images, `opts`) up to the loss inputs. */
export async function rfdetrFixtureStep(opts: RfdetrStepOptions = {}): Promise<RfdetrFixtureStep> {
  const train = readSafetensors(new Uint8Array(readFileSync(fixture('rfdetrn_ref_train.safetensors'))), 'rfdetr train fixture').tensors;
  const size = opts.size ?? SIZE;
  const batch = opts.batch ?? BATCH;
  const net = new RfdetrNetwork({ size: 'n', nc: 80, fused: false });
  loadRfdetrStateDict(net, (await loadCheckpointFile(fixture('rfdetrn_ref.pt'))).stateDict, { peGrid: 24 });
  const u8 = train.get('input_u8_2x3x384x384')!;
  const images = normalizeU8(size === SIZE && batch === BATCH ? u8 : subsampleU8(u8, batch, size));
  const targets = fixtureTargets(train.get('targets_2x4x5')!, SIZE).slice(0, batch);
  const fb = new GraphBuilder('rfdetr_assign_forward');
  fb.training = true;
  const rec = emitRfdetrTrainForward(fb, net, fb.input('images', 'float32', [batch, 3, size, size]), batch, { height: size, width: size, ...(opts.groups ? { groups: opts.groups } : {}) });
  for (const [name, { value, dims }] of Object.entries(rfdetrTrainOutputRecord(rec))) fb.output(name, value, 'float32', dims);
  fb.output(RFDETR_TOPK_INDEX, rec.topk!, 'int64', [batch, rec.groups * rec.k]);
  lowerComposites(fb.graph);
  const preds = await runGraph(fb.graph, { images });
  const ctx: RfdetrLossContext = { batch, classes: rec.classes, layers: rec.layers.length, groups: rec.groups, queries: rec.queries, k: rec.k };
  const { inputs: lossHost, matches } = rfdetrLossInputs(preds, targets, ctx);
  return { train, size, batch, net, images, targets, preds, ctx, lossHost, matches };
}

export interface RfdetrTrainGraph {
  graph: Graph;
  feeds: Record<string, HostTensor>;
  /** Trainable parameters differentiated (state_dict order). */
  wrt: string[];
  /** Every loss key (outputs `loss.<key>`). */
  keys: string[];
}

/**
 * Forward (the assignment forward's proposal order) + loss, outputs loss_total and `loss.<key>`;
 * with `gradients`, also `grad.<param>` for every trainable parameter. `detach: false` drops the
 * stop on the proposal boxes (only to see the gradient test fail).
 */
export async function rfdetrTrainGraph(step: RfdetrFixtureStep, opts: { gradients: boolean; groups?: number }): Promise<RfdetrTrainGraph> {
  const b = new GraphBuilder('rfdetr_train_loss');
  b.training = true;
  const { ctx, net, size, batch } = step;
  const specs = rfdetrLossInputSpecs(ctx);
  const assigned: Record<string, string> = {};
  for (const [name, spec] of Object.entries(specs)) assigned[name] = b.input(name, spec.dtype, spec.dims);
  const out = emitRfdetrTrainForward(b, net, b.input('images', 'float32', [batch, 3, size, size]), batch, {
    height: size, width: size, topkIndex: assigned[RFDETR_TOPK_INDEX]!, ...(opts.groups ? { groups: opts.groups } : {}),
  });
  const loss = emitRfdetrLoss(b, out, assigned);
  b.output('loss_total', loss.total, 'float32', []);
  for (const [k, v] of Object.entries(loss.keys)) b.output(`loss.${k}`, v, 'float32', []);
  const feeds: Record<string, HostTensor> = { images: step.images, ...step.lossHost };
  const wrt = [...net.namedTensors()].filter(([k, p]) => p.kind === 'parameter' && p.requiresGrad && b.graph.initializers.has(k)).map(([k]) => k);
  if (opts.gradients) {
    const lowered = b.graph.clone();
    lowerComposites(lowered);
    const shapes = await probeShapes(lowered, feeds);
    const grads = appendGradients(b.graph, { loss: loss.total, wrt, shapes });
    for (const k of wrt) b.output(`grad.${k}`, grads.get(k)!, 'float32', shapes.get(k)!.dims);
  }
  lowerComposites(b.graph);
  return { graph: b.graph, feeds, wrt, keys: Object.keys(loss.keys) };
}
