/**
 * The training graph: the network in training mode (BatchNorm on batch statistics), the family's
 * loss and, from the autodiff pass, the gradient of the total loss for every parameter. Parameters
 * and BN buffers are graph inputs named by their state_dict keys, so one session serves every step.
 *
 * Inputs: `images`, `targets`, `masks` (segment heads: mask targets), the host assignment's inputs (families with a `HostAssigner`), the
 * host draws the forward declares itself (`HostAssigner.draws`), `switch.<name>` float32 scalars
 * (the family's loss switches), parameters and buffers.
 * Outputs: loss_total, `loss_<component>` per logged component, num_fg, `grad.<key>` per parameter
 * and `running.<key>` per BN running statistic.
 *
 * A family with a host assigner also gets an assignment graph: the same train-mode forward, its
 * outputs the predictions the assigner reads (see step.ts for how the two run).
 */
import { GraphBuilder } from '../graph/builder.ts';
import type { Graph } from '../graph/ir.ts';
import { appendGradients } from '../graph/autodiff/autodiff.ts';
import { probeShapes } from '../graph/autodiff/shapes.ts';
import { recomputeCheapValues } from '../graph/autodiff/recompute.ts';
import { lowerComposites } from '../graph/passes/lower-composites.ts';
import { hidePerImageShapes } from '../graph/passes/hide-shapes.ts';
import { foldStaticSizes, pruneDeadNodes } from '../graph/passes/fold-sizes.ts';
import { eliminateIdentities } from '../graph/passes/eliminate-identities.ts';
import { zeros, type HostTensor } from '../graph/tensor.ts';
import { ownsBuffer, type Lending } from '../runtime/worker-session.ts';
import { trainingHooks, type DetectionNetwork, type ModelFamily, type TrainShape } from '../models/registry.ts';
import { autocastTrainGraph } from './amp.ts';

export interface TrainGraphConfig {
  batch: number;
  height: number;
  width: number;
  maxTargets: number;
  /**
   * Accumulate BatchNorm statistics in float64, as PyTorch's CPU kernel does (default true: the
   * parity setting). False keeps them in float32, which is faster and plenty for training.
   */
  preciseStats?: boolean;
  /**
   * Mixed precision (GPU providers): the network and its gradient in float16, loss and BN in float32,
   * and a float32 input `loss_scale` multiplying the loss before the backward pass (gradient
   * outputs are scaled by it; see amp.ts).
   */
  amp?: boolean;
  /**
   * Recompute cheap forward values (BatchNorm outputs, sigmoids, SiLU outputs, their concatenations)
   * in the backward pass instead of keeping them from the forward (default true; bit-identical
   * results, about 40% of the per-image memory; see graph/autodiff/recompute.ts). False keeps every
   * forward value the backward reads, as before: the comparison for tests and benchmarks.
   */
  recomputeCheap?: boolean;
  /**
   * Build for one graph at several input sizes (GraphBuilder.anySize; TrainStepOptions.sizes): the
   * same nodes at every size, fed its size-dependent constants as inputs. Default false.
   */
  anySize?: boolean;
  /**
   * Declare the per-image inputs without shapes and open the Reshape targets below them, so ONNX
   * Runtime's allocation planner cannot hold a dead activation's buffer for a later value of the
   * same shape (graph/passes/hide-shapes.ts; default true). Exact: the same kernels on the same
   * data. False keeps every static shape: the comparison for benchmarks.
   */
  hideShapes?: boolean;
}

export interface TrainGraph {
  graph: Graph;
  /** Parameter keys in input order (their gradients are `grad.<key>`). */
  parameters: string[];
  /** Buffer keys fed as inputs (BN running stats and counters, and frozen parameters). */
  buffers: string[];
  /** BN running-stat keys with an updated value output `running.<key>`. */
  runningStats: string[];
  /** Logged loss components (outputs `loss_<name>`). */
  components: readonly string[];
  /** Loss switches (inputs `switch.<name>`). */
  switches: readonly string[];
  /** Host-assignment inputs of the loss graph. */
  assigned: readonly string[];
  /** `[B, M, H / r, W / r]` of the `masks` input (segment heads), else null. */
  masks: number[] | null;
  /** The assignment graph, for families with a host assigner. */
  assign: AssignGraph | null;
}

export interface AssignGraph {
  graph: Graph;
  /** Parameter and buffer keys it reads. */
  inputs: string[];
  /** Its outputs: the predictions the assigner reads. */
  predictions: string[];
}

/** Feeds for the current parameter and buffer values of `network`. */
export function parameterFeeds(network: DetectionNetwork, keys: Iterable<string>): Record<string, HostTensor> {
  const byKey = new Map([...network.namedTensors()].map(([k, p]) => [k, p.value]));
  const feeds: Record<string, HostTensor> = {};
  for (const k of keys) feeds[k] = byKey.get(k)!;
  return feeds;
}

/**
 * The network's tensors `keys` as feeds lent to a session run (WorkerSession.run): they move to the
 * worker and back without a copy (a clone of RF-DETR n's weights took ~0.1 s a step and held 120 MB
 * in the worker), and each comes back into its parameter. A tensor that is a view into a larger
 * buffer (a checkpoint's storage) first gets a buffer of its own, so that nothing else moves with it.
 */
export function lentParameterFeeds(network: DetectionNetwork, keys: readonly string[]): { feeds: Record<string, HostTensor>; lend: Lending } {
  const byKey = new Map(network.namedTensors());
  const feeds: Record<string, HostTensor> = {};
  for (const k of keys) {
    const p = byKey.get(k)!;
    const d = p.value.data;
    if (!ownsBuffer(d)) p.value = { ...p.value, data: d.slice() };
    feeds[k] = p.value;
  }
  return { feeds, lend: { names: keys, giveBack: (k, t) => { byKey.get(k)!.value = t; } } };
}

/**
 * Turns the network's initializers into graph inputs (so one session serves changing weights).
 * Frozen parameters (`requiresGrad` false) are fed like buffers: no gradient is derived for them.
 */
function weightsAsInputs(b: GraphBuilder, network: DetectionNetwork): { parameters: string[]; buffers: string[] } {
  const parameters: string[] = [];
  const buffers: string[] = [];
  for (const [key, p] of network.namedTensors()) {
    if (!b.graph.initializers.has(key)) continue;
    b.graph.initializers.delete(key);
    b.graph.inputs.push({ name: key, dtype: p.value.dtype, shape: [...p.dims] });
    (p.kind === 'parameter' && p.requiresGrad ? parameters : buffers).push(key);
  }
  return { parameters, buffers };
}

/** The family's loss switches, by name (their values come per step). */
export function switchNames(family: ModelFamily): string[] {
  return Object.keys(trainingHooks(family).switches?.(0, { epochs: 1, no_aug_epochs: 0 }) ?? {});
}

function buildAssignGraph(family: ModelFamily, network: DetectionNetwork, shape: TrainShape, cfg: TrainGraphConfig): AssignGraph | null {
  const assigner = trainingHooks(family).assigner;
  if (!assigner) return null;
  const b = new GraphBuilder('libreyolo_assign');
  b.training = true;
  b.preciseStats = cfg.preciseStats !== false;
  b.anySize = cfg.anySize === true;
  const images = b.input('images', 'float32', [shape.batch, 3, shape.height, shape.width]);
  const preds = assigner.emitPredictions(b, network, images, shape);
  for (const [name, { value, dims }] of Object.entries(preds)) b.output(name, value, 'float32', dims);
  const { parameters, buffers } = weightsAsInputs(b, network);
  lowerComposites(b.graph);
  return { graph: b.graph, inputs: [...parameters, ...buffers], predictions: Object.keys(preds) };
}

export async function buildTrainGraph(family: ModelFamily, network: DetectionNetwork, cfg: TrainGraphConfig): Promise<TrainGraph> {
  const hooks = trainingHooks(family);
  const shape: TrainShape = { batch: cfg.batch, height: cfg.height, width: cfg.width, maxTargets: cfg.maxTargets };
  const b = new GraphBuilder('libreyolo_train');
  b.training = true;
  b.preciseStats = cfg.preciseStats !== false;
  b.anySize = cfg.anySize === true;
  const images = b.input('images', 'float32', [cfg.batch, 3, cfg.height, cfg.width]);
  const targets = b.input('targets', 'float32', [cfg.batch, cfg.maxTargets, 5]);
  // Segment heads train on mask targets at 1 / ratio of the input.
  const maskRatio = hooks.maskRatio?.(network) ?? null;
  const maskDims = maskRatio ? [cfg.batch, cfg.maxTargets, cfg.height / maskRatio, cfg.width / maskRatio] : null;
  const masks = maskDims ? b.input('masks', 'float32', maskDims) : null;
  const assignedSpecs = hooks.assigner?.inputs(shape, network.nc, network) ?? {};
  const assigned: Record<string, string> = {};
  for (const [name, spec] of Object.entries(assignedSpecs)) assigned[name] = b.input(name, spec.dtype, spec.dims);
  const switchList = switchNames(family);
  const switches: Record<string, string> = {};
  for (const name of switchList) switches[name] = b.input(`switch.${name}`, 'float32', []);
  const loss = hooks.emitLoss(b, network, { images, targets, assigned, switches, ...(masks ? { masks } : {}) }, shape);

  // Parameters and buffers become inputs, so the session is reused as the weights change.
  const tensors = [...network.namedTensors()];
  const { parameters, buffers } = weightsAsInputs(b, network);
  b.output('loss_total', loss.total, 'float32', []);
  for (const [name, value] of Object.entries(loss.components)) b.output(`loss_${name}`, value, 'float32', []);
  b.output('num_fg', loss.numFg, 'float32', []);
  const runningStats = [...b.runningStatOutputs.keys()];
  for (const [key, value] of b.runningStatOutputs) b.output(`running.${key}`, value, 'float32', [...tensors.find(([k]) => k === key)![1].dims]);

  const feeds: Record<string, HostTensor> = {
    ...parameterFeeds(network, [...parameters, ...buffers]),
    images: zeros('float32', [cfg.batch, 3, cfg.height, cfg.width]),
    targets: zeros('float32', [cfg.batch, cfg.maxTargets, 5]),
    ...(maskDims ? { masks: zeros('float32', maskDims) } : {}),
  };
  for (const [name, spec] of Object.entries(assignedSpecs)) feeds[name] = zeros(spec.dtype, spec.dims);
  for (const [name, spec] of Object.entries(hooks.assigner?.draws?.specs(shape, network.nc) ?? {})) feeds[name] = zeros(spec.dtype, spec.dims);
  for (const name of switchList) feeds[`switch.${name}`] = zeros('float32', []);
  const lowered = b.graph.clone();
  lowerComposites(lowered);
  const shapes = await probeShapes(lowered, feeds);
  let seed = 'loss_total';
  if (cfg.amp) {
    b.graph.inputs.push({ name: 'loss_scale', dtype: 'float32', shape: [] });
    seed = b.scope('loss', () => b.op('Mul', ['loss_total', 'loss_scale'], {}, { name: 'ScaledLoss' }));
    shapes.set(seed, { dtype: 'float32', dims: [] });
    shapes.set('loss_scale', { dtype: 'float32', dims: [] });
  }
  const grads = appendGradients(b.graph, { loss: seed, wrt: parameters, shapes, anySize: cfg.anySize === true });
  for (const key of parameters) b.output(`grad.${key}`, grads.get(key)!, 'float32', shapes.get(key)!.dims);
  lowerComposites(b.graph);
  if (cfg.recomputeCheap !== false) recomputeCheapValues(b.graph, shapes);
  if (cfg.amp) autocastTrainGraph(b.graph);
  // A Size read keeps a whole activation alive until ORT gets to it; dead nodes run last.
  foldStaticSizes(b.graph, shapes);
  pruneDeadNodes(b.graph);
  eliminateIdentities(b.graph);
  if (cfg.hideShapes !== false) hidePerImageShapes(b.graph, ['images', 'targets', ...(masks ? [masks] : []), ...Object.values(assigned), ...Object.keys(hooks.assigner?.draws?.specs(shape, network.nc) ?? {})]);
  return {
    graph: b.graph, parameters, buffers, runningStats,
    components: Object.keys(loss.components), switches: switchList, assigned: Object.keys(assignedSpecs), masks: maskDims,
    assign: buildAssignGraph(family, network, shape, cfg),
  };
}
