/**
 * RF-DETR's training hooks: the train-mode forward (train-forward.ts) run once forward-only for
 * the host assignment (the grouped Hungarian matchings and the criterion's detached factors,
 * loss-targets.ts), then forward + criterion as graph ops (loss.ts) over those feeds, the
 * forward reusing the assignment forward's proposal order.
 *
 * The recipe (parameter groups with the DINOv2 layer decay, the step schedule, the original's
 * defaults, augmentation, head re-initialisation) belongs in recipe.ts; until it lands, the
 * RECIPE_PLACEHOLDER values below stand in: the original's defaults table, the core's parameter
 * groups, schedule and augmentation, and a D-FINE-style rebuild for a new class count.
 */
import { i } from '../../graph/builder.ts';
import type { HostTensor } from '../../graph/tensor.ts';
import { imageTargets } from '../detr/matching.ts';
import type { DetectionNetwork, HostAssigner, StateDict, TrainShape, TrainingHooks } from '../registry.ts';
import { RFDETR_COMMON as C } from './config.ts';
import { initializeRfdetr } from './init.ts';
import { emitRfdetrLoss } from './loss.ts';
import { rfdetrLossInputs, rfdetrLossInputSpecs, type RfdetrLossContext } from './loss-targets.ts';
import { RFDETR_LOSS_NAMES } from './loss-terms.ts';
import { RfdetrNetwork } from './network.ts';
import { emitRfdetrTrainForward } from './train-forward.ts';
import { RFDETR_TOPK_INDEX, rfdetrTrainOutputRecord } from './train-outputs.ts';

/** RFDETRConfig's defaults where they differ from the core's (a placeholder until recipe.ts). */
export const RECIPE_PLACEHOLDER_DEFAULTS: Readonly<Record<string, unknown>> = {
  epochs: 100, batch: 4, nbs: 16, lr0: 1e-4, optimizer: 'adamw', weight_decay: 1e-4, scheduler: 'step', warmup_epochs: 0,
  clip_max_norm: 0.1, ema: true, ema_decay: 0.993, amp: true, multi_scale: true, flip_prob: 0.5, workers: 0,
  mosaic_prob: 0, mixup_prob: 0, hsv_prob: 0, degrees: 0, translate: 0, shear: 0, name: 'rfdetr_exp',
};

function asRfdetr(network: DetectionNetwork): RfdetrNetwork {
  if (!(network instanceof RfdetrNetwork)) throw new Error('rfdetr training hooks got a network of another family');
  return network;
}

function lossContext(net: RfdetrNetwork, shape: TrainShape): RfdetrLossContext {
  const q = net.config.numQueries;
  const tokens = (shape.height / net.config.patchSize) * (shape.width / net.config.patchSize);
  return { batch: shape.batch, classes: net.nc + 1, layers: net.config.decLayers, groups: C.groupDetr, queries: q, k: Math.min(q, tokens) };
}

export const rfdetrAssigner: HostAssigner = {
  emitPredictions(b, network, images, shape) {
    const rec = emitRfdetrTrainForward(b, asRfdetr(network), images, shape.batch, { height: shape.height, width: shape.width });
    const out = rfdetrTrainOutputRecord(rec);
    // Predictions come back as float32: the proposal order travels cast, its indices exact.
    out[RFDETR_TOPK_INDEX] = { value: b.op('Cast', [rec.topk!], { to: i(1) }), dims: [shape.batch, rec.groups * rec.k] };
    return out;
  },
  inputs: (shape, _nc, network) => rfdetrLossInputSpecs(lossContext(asRfdetr(network), shape)),
  assign: (predictions, targets, shape, _nc, _draws, network) => rfdetrLossInputs(predictions, imageTargets(targets), lossContext(asRfdetr(network), shape)).inputs,
};

/** The training hooks of RF-DETR detection. */
export function rfdetrTrainingHooks(create: (size: string, nc: number, sd: StateDict | null) => DetectionNetwork): TrainingHooks {
  return {
    lossNames: RFDETR_LOSS_NAMES,
    emitLoss(b, network, inputs, shape) {
      const net = asRfdetr(network);
      const topk = inputs.assigned[RFDETR_TOPK_INDEX];
      if (!topk) throw new Error(`RF-DETR loss: missing input ${RFDETR_TOPK_INDEX}`);
      const out = emitRfdetrTrainForward(b, net, inputs.images, shape.batch, { height: shape.height, width: shape.width, topkIndex: topk });
      return b.scope('loss', () => emitRfdetrLoss(b, out, inputs.assigned));
    },
    assigner: rfdetrAssigner,
    defaults: RECIPE_PLACEHOLDER_DEFAULTS,
    adaptClasses(sd, size, nc) {
      // Placeholder: rebuild at nc, keeping every tensor whose shape still matches.
      const fresh = create(size, nc, null);
      const keep = new Map<string, HostTensor>();
      for (const [k, p] of fresh.namedTensors()) {
        const t = sd.get(k);
        keep.set(k, t && t.dims.join(',') === p.dims.join(',') ? t : p.value);
      }
      return create(size, nc, keep);
    },
    initialize: (network, seed) => initializeRfdetr(asRfdetr(network), seed),
  };
}
