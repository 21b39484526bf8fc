/**
 * RF-DETR's training hooks: the train-mode forward (train-forward.ts) run once forward-only for
 * the host assignment (the grouped Hungarian matchings and the criterion's detached factors,
 * loss-targets.ts), then forward + criterion as graph ops (loss.ts) over those feeds, the
 * forward reusing the assignment forward's proposal order.
 *
 * The recipe is recipe.ts's: the original's defaults, AdamW groups with the DINOv2 layer decay
 * (each group starting at its own LR), the step schedule with lr_drop, the flip / crop-resize /
 * stretch pipeline; a new class count tiles or truncates the class heads' rows (head-reinit.ts).
 */
import { i } from '../../graph/builder.ts';
import { imageTargets } from '../detr/matching.ts';
import type { DetectionNetwork, HostAssigner, MultiScale, StateDict, TrainShape, TrainingHooks } from '../registry.ts';
import { RFDETR_COMMON as C } from './config.ts';
import { resizeClassHeads } from './head-reinit.ts';
import { initializeRfdetr } from './init.ts';
import { emitRfdetrLoss } from './loss.ts';
import { rfdetrLossInputs, rfdetrLossInputSpecs, type RfdetrLossContext } from './loss-targets.ts';
import { RFDETR_LOSS_NAMES } from './loss-terms.ts';
import { RfdetrNetwork } from './network.ts';
import { RFDETR_AUGMENT, RFDETR_TRAIN_DEFAULTS, rfdetrMultiScales, rfdetrParamGroups, rfdetrSchedule, rfdetrStepScale } from './recipe.ts';
import { emitRfdetrTrainForward } from './train-forward.ts';
import { RFDETR_TOPK_INDEX, rfdetrTrainOutputRecord } from './train-outputs.ts';

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

/**
 * RF-DETR's multi-scale: the 11 sides around the network's native resolution (not imgsz: the
 * original's scales follow the model's resolution, so n draws 224..544 whatever imgsz is), one per
 * optimizer step by random.Random(step).choice, every micro-batch of the step sharing it; every epoch.
 */
export const RFDETR_MULTI_SCALE: MultiScale = {
  sizes: (_imgsz, network) => rfdetrMultiScales(asRfdetr(network).config.resolution),
  per: 'step',
  stepSide: (step, network) => rfdetrStepScale(step, asRfdetr(network).config.resolution),
  resize: 'bilinear',
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
    defaults: RFDETR_TRAIN_DEFAULTS,
    // The original keeps every tensor and tiles or truncates the class rows to nc + 1.
    adaptClasses: (sd, size, nc) => create(size, nc, resizeClassHeads(sd, nc)),
    initialize: (network, seed) => initializeRfdetr(asRfdetr(network), seed),
    paramGroups: (trainable, cfg) => rfdetrParamGroups(trainable, cfg),
    firstLrScaled: true,
    schedule: rfdetrSchedule,
    scheduleTakesLrDrop: true,
    augment: RFDETR_AUGMENT,
    multiScale: RFDETR_MULTI_SCALE,
  };
}
