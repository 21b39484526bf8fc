/**
 * The training graph: the network in training mode (BatchNorm on batch statistics), the YOLOv9 loss
 * and, from the autodiff pass, the gradient of the total loss for every parameter. Parameters and
 * BN buffers are graph inputs named by their state_dict keys, so one session serves every step.
 *
 * Outputs: loss_total, loss_box, loss_dfl, loss_cls, num_fg, `grad.<key>` per parameter and
 * `running.<key>` per BN running statistic.
 */
import { GraphBuilder } from '../graph/builder.ts';
import type { Graph } from '../graph/ir.ts';
import { appendGradients } from '../graph/autodiff/autodiff.ts';
import { probeShapes } from '../graph/autodiff/shapes.ts';
import { lowerComposites } from '../graph/passes/lower-composites.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { emitYolo9Loss } from '../models/yolo9/loss.ts';
import { autocastTrainGraph } from './amp.ts';
import type { Yolo9Network } from '../models/yolo9/network.ts';

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
}

export interface TrainGraph {
  graph: Graph;
  /** Parameter keys in input order (their gradients are `grad.<key>`). */
  parameters: string[];
  /** Buffer keys fed as inputs (BN running stats and counters). */
  buffers: string[];
  /** BN running-stat keys with an updated value output `running.<key>`. */
  runningStats: string[];
}

export const LOSS_OUTPUTS = ['loss_total', 'loss_box', 'loss_dfl', 'loss_cls', 'num_fg'] as const;

/** Feeds for the current parameter and buffer values of `network`. */
export function parameterFeeds(network: Yolo9Network, keys: Iterable<string>): Record<string, HostTensor> {
  const byKey = new Map([...network.namedTensors()].map(([k, p]) => [k, p.value]));
  const feeds: Record<string, HostTensor> = {};
  for (const k of keys) feeds[k] = byKey.get(k)!;
  return feeds;
}

export async function buildTrainGraph(network: Yolo9Network, cfg: TrainGraphConfig): Promise<TrainGraph> {
  const b = new GraphBuilder('libreyolo_train');
  b.training = true;
  b.preciseStats = cfg.preciseStats !== false;
  const images = b.input('images', 'float32', [cfg.batch, 3, cfg.height, cfg.width]);
  const targets = b.input('targets', 'float32', [cfg.batch, cfg.maxTargets, 5]);
  const levels = network.forward(b, images);
  const loss = b.scope('loss', () => emitYolo9Loss(b, levels, targets, { ...cfg, nc: network.nc }));

  // Parameters and buffers become inputs, so the session is reused as the weights change.
  const tensors = [...network.namedTensors()];
  const parameters: string[] = [];
  const buffers: string[] = [];
  for (const [key, p] of tensors) {
    if (!b.graph.initializers.has(key)) continue;
    b.graph.initializers.delete(key);
    b.graph.inputs.push({ name: key, dtype: p.value.dtype, shape: [...p.dims] });
    (p.kind === 'parameter' ? parameters : buffers).push(key);
  }
  for (const [name, value] of Object.entries(loss)) {
    const out = name === 'numFg' ? 'num_fg' : `loss_${name}`;
    b.output(out, value, 'float32', []);
  }
  const runningStats = [...b.runningStatOutputs.keys()];
  for (const [key, value] of b.runningStatOutputs) b.output(`running.${key}`, value, 'float32', [...tensors.find(([k]) => k === key)![1].dims]);

  const feeds: Record<string, HostTensor> = {
    ...parameterFeeds(network, [...parameters, ...buffers]),
    images: { dtype: 'float32', dims: [cfg.batch, 3, cfg.height, cfg.width], data: new Float32Array(cfg.batch * 3 * cfg.height * cfg.width) },
    targets: { dtype: 'float32', dims: [cfg.batch, cfg.maxTargets, 5], data: new Float32Array(cfg.batch * cfg.maxTargets * 5) },
  };
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
  const grads = appendGradients(b.graph, { loss: seed, wrt: parameters, shapes });
  for (const key of parameters) b.output(`grad.${key}`, grads.get(key)!, 'float32', shapes.get(key)!.dims);
  lowerComposites(b.graph);
  if (cfg.amp) autocastTrainGraph(b.graph);
  return { graph: b.graph, parameters, buffers, runningStats };
}
