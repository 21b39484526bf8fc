/**
 * The gradient graph of the original's D-FINE-n or DEIM-n train step (dfinen_ref_train /
 * deimn_ref_train.safetensors), as test/model/dfine-train-gradients.test.ts and
 * deim-train.test.ts check it and bench/dfine-grad-kinks.ts perturbs it: the train-mode forward on
 * the stored input (denoising draws injected), the host matchings on its outputs, then forward
 * (same proposal order: injectTopk) + loss + backward in one lowered graph.
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
import type { DfineVariant } from '../../src/models/dfine/config.ts';
import { emitDfineLoss } from '../../src/models/dfine/loss.ts';
import { dfineLossInputs, dfineLossInputSpecs, type DfineLossContext } from '../../src/models/dfine/loss-targets.ts';
import { CLASS_LOSS } from '../../src/models/dfine/loss-terms.ts';
import { DfineNetwork } from '../../src/models/dfine/network.ts';
import { loadDfineStateDict } from '../../src/models/dfine/state-dict.ts';
import { emitDfineTrainForward } from '../../src/models/dfine/train-forward.ts';
import { DFINE_DN_INPUTS, DFINE_TOPK_INDEX, dfineTrainOutputRecord } from '../../src/models/dfine/train-outputs.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fixtureTargets } from './dfine-targets.ts';
import { fixture } from './fixtures.ts';

export function toOrt(t: HostTensor): ort.Tensor {
  return new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
}

export interface DfineTrainGraph {
  train: Map<string, HostTensor>;
  net: DfineNetwork;
  /** Lowered: loss_total, grad.<parameter> for every trainable parameter, and the extra outputs asked for. */
  graph: Graph;
  feeds: Record<string, HostTensor>;
  wrt: string[];
}

export interface DfineTrainGraphOptions {
  /** Whose fixture (dfinen_ref / deimn_ref) and objective; default D-FINE. */
  variant?: DfineVariant;
  /** Changes the stored image (float32, /255) before both forwards. */
  tweakImage?: (pixels: Float32Array) => void;
  /** Differentiates loss * lossScale (only the backward's rounding changes); the gradients come out scaled. */
  lossScale?: number;
  /** Forward values (by name) whose gradients to output as `grad.<name>` too. */
  gradientOf?: string[];
  /** Forward only: outputs loss_total, every loss key as `loss.<key>` and the input of every ReLU as `relu_in.<node name>`. */
  forwardOnly?: boolean;
}

/** The train fixture and the network it was made with (`dfinen_ref*` or `deimn_ref*`). */
export async function trainFixture(variant: DfineVariant): Promise<{ train: Map<string, HostTensor>; net: DfineNetwork }> {
  const stem = variant === 'deim' ? 'deimn_ref' : 'dfinen_ref';
  const train = readSafetensors(new Uint8Array(readFileSync(fixture(`${stem}_train.safetensors`))), `${variant} train fixture`).tensors;
  const net = new DfineNetwork({ size: 'n', nc: 80, variant });
  loadDfineStateDict(net, (await loadCheckpointFile(fixture(`${stem}.pt`))).stateDict);
  return { train, net };
}

/** The stored matching context of the fixture step (n, batch 2, 33 denoising groups). */
export function fixtureLossContext(train: Map<string, HostTensor>, rec: { regMax: number; regScale: number; project: Float32Array }, variant: DfineVariant): DfineLossContext {
  return {
    batch: 2, nc: 80, layers: 3, queries: 300, regMax: rec.regMax, regScale: rec.regScale, project: rec.project,
    dn: { slots: 198, numDn: 198, numGroup: 33, positiveIdx: [0, 1].map((i) => Array.from(train.get(`dn.positive_idx.img${i}`)!.data as BigInt64Array, Number)) },
    cls: CLASS_LOSS[variant],
  };
}

const FIXTURE_SHAPE = { height: 640, width: 640, dnSlots: 198 };

/** The fixture step's assignment forward: the train output record (and proposal order) on ORT, denoising draws injected. */
export interface FixtureForward {
  train: Map<string, HostTensor>;
  net: DfineNetwork;
  images: HostTensor;
  /** The stored denoising draws, by input name. */
  dn: Record<string, HostTensor>;
  preds: Record<string, HostTensor>;
  ctx: DfineLossContext;
  /** The FDR constants of the forward. */
  up: number;
}

export async function fixtureForward(opts: Pick<DfineTrainGraphOptions, 'variant' | 'tweakImage'> = {}): Promise<FixtureForward> {
  const variant = opts.variant ?? 'dfine';
  const { train, net } = await trainFixture(variant);
  const u8 = train.get('input_u8_2x3x640x640')!;
  const pixels = Float32Array.from(u8.data as Uint8Array, (v) => Math.fround(v / 255));
  opts.tweakImage?.(pixels);
  const images: HostTensor = { dtype: 'float32', dims: u8.dims, data: pixels };
  const dn = Object.fromEntries(Object.values(DFINE_DN_INPUTS).map((n) => [n, train.get(n)!]));
  const fb = new GraphBuilder('dfine_assign_forward');
  fb.training = true;
  const rec = emitDfineTrainForward(fb, net, fb.input('images', 'float32', [2, 3, 640, 640]), 2, FIXTURE_SHAPE);
  for (const [name, { value, dims }] of Object.entries(dfineTrainOutputRecord(rec))) fb.output(name, value, 'float32', dims);
  fb.output(DFINE_TOPK_INDEX, rec.topk!, 'int64', [2, 300]);
  lowerComposites(fb.graph);
  const session = await ort.InferenceSession.create(serializeModel(fb.graph), { intraOpNumThreads: 2 });
  const fwd = await session.run({ images: toOrt(images), ...Object.fromEntries(Object.entries(dn).map(([k, t]) => [k, toOrt(t)])) });
  await session.release();
  const preds: Record<string, HostTensor> = {};
  for (const [k, t] of Object.entries(fwd)) preds[k] = { dtype: t.type as 'float32', dims: [...t.dims], data: t.data as Float32Array };
  return { train, net, images, dn, preds, ctx: fixtureLossContext(train, rec, variant), up: rec.up };
}

export async function dfineTrainGraph(opts: DfineTrainGraphOptions = {}): Promise<DfineTrainGraph> {
  const { train, net, images, dn, preds, ctx } = await fixtureForward(opts);
  const shape = FIXTURE_SHAPE;
  const { inputs: lossHost } = dfineLossInputs(preds, fixtureTargets(train.get('targets_2x4x5')!), ctx);

  // Forward (same proposal order) + loss + backward.
  const b = new GraphBuilder('dfine_train_gradients');
  b.training = true;
  const rec2 = emitDfineTrainForward(b, net, b.input('images', 'float32', [2, 3, 640, 640]), 2, { ...shape, injectTopk: true });
  const lossFeeds: Record<string, string> = {};
  for (const [name, spec] of Object.entries(dfineLossInputSpecs(ctx))) lossFeeds[name] = b.input(name, 'float32', spec.dims);
  const loss = emitDfineLoss(b, rec2, lossFeeds, ctx.cls);
  b.output('loss_total', loss.total, 'float32', []);
  const feeds: Record<string, HostTensor> = { images, ...dn, ...lossHost, [DFINE_TOPK_INDEX]: preds[DFINE_TOPK_INDEX]! };
  const wrt = [...net.namedTensors()].filter(([k, p]) => p.kind === 'parameter' && p.requiresGrad && b.graph.initializers.has(k)).map(([k]) => k);
  const lowered = b.graph.clone();
  lowerComposites(lowered);
  const shapes = await probeShapes(lowered, feeds);
  if (opts.forwardOnly) {
    for (const n of [...b.graph.nodes]) if (n.op === 'Relu') b.output(`relu_in.${n.name}`, n.inputs[0]!, 'float32', shapes.get(n.inputs[0]!)!.dims);
    for (const [k, v] of Object.entries(loss.keys)) b.output(`loss.${k}`, v, 'float32', []);
  } else {
    let target = loss.total;
    if (opts.lossScale !== undefined) {
      const scale = b.scalar(opts.lossScale, 'loss_scale');
      target = b.op('Mul', [loss.total, scale]);
      shapes.set(scale, { dtype: 'float32', dims: [] });
      shapes.set(target, { dtype: 'float32', dims: [] });
    }
    const extra = opts.gradientOf ?? [];
    const grads = appendGradients(b.graph, { loss: target, wrt: [...wrt, ...extra], shapes });
    for (const k of [...wrt, ...extra]) b.output(`grad.${k}`, grads.get(k)!, 'float32', shapes.get(k)!.dims);
  }
  lowerComposites(b.graph);
  return { train, net, graph: b.graph, feeds, wrt };
}

/** Runs the graph on ONNX Runtime (2 intra-op threads). */
export async function runOnOrt(g: DfineTrainGraph): Promise<ort.InferenceSession.OnnxValueMapType> {
  const session = await ort.InferenceSession.create(serializeModel(g.graph), { intraOpNumThreads: 2 });
  try {
    return await session.run(Object.fromEntries(Object.entries(g.feeds).map(([k, t]) => [k, toOrt(t)])));
  } finally {
    await session.release();
  }
}
