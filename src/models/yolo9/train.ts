/**
 * YOLOv9's training hooks: the in-graph task-aligned assigner and loss (loss.ts), the original's
 * class-layer rebuild for a new class count, and the seeded fresh initialisation.
 */
import { LibreYOLOError } from '../../errors.ts';
import type { HostTensor } from '../../graph/tensor.ts';
import { BASE_RECIPE } from '../../data/recipe.ts';
import type { DetectionNetwork, StateDict, TrainingHooks } from '../registry.ts';
import { YOLO9_STRIDES } from './config.ts';
import { initializeFresh, seededRandom } from './init.ts';
import { emitYolo9Loss } from './loss.ts';
import { emitYolo9MaskLoss, MASK_RATIO } from './seg-loss.ts';
import { Yolo9Network } from './network.ts';

function asYolo9(network: DetectionNetwork): Yolo9Network {
  if (!(network instanceof Yolo9Network)) throw new Error('yolo9 training hooks got a network of another family');
  return network;
}

/**
 * A network whose class layers fit `nc`: only each `head.cv3.<i>.2` conv is replaced (hidden width
 * kept, weights U(+-1/sqrt(fan_in)), bias at the class prior), as the original's
 * `_rebuild_for_new_classes`. `create` turns the state dict into the network.
 */
export function yolo9ForClasses(sd: StateDict, nc: number, seed: number, create: (sd: StateDict) => DetectionNetwork): DetectionNetwork {
  const out = new Map<string, HostTensor>(sd);
  const rand = seededRandom(seed + 7919);
  for (let level = 0; level < 3; level++) {
    const wKey = `head.cv3.${level}.2.weight`;
    const old = sd.get(wKey);
    if (!old) throw new LibreYOLOError('model_load_failed', `Cannot adapt the head to ${nc} classes: ${wKey} is missing.`);
    if (old.dims[0] === nc) continue;
    const width = old.dims[1]!;
    const bound = 1 / Math.sqrt(width);
    const w = new Float32Array(nc * width).map(() => (rand() * 2 - 1) * bound);
    const prior = Math.log(5 / nc / (640 / YOLO9_STRIDES[level]!) ** 2);
    out.set(wKey, { dtype: 'float32', dims: [nc, width, 1, 1], data: w });
    out.set(`head.cv3.${level}.2.bias`, { dtype: 'float32', dims: [nc], data: new Float32Array(nc).fill(prior) });
  }
  return create(out);
}

export function yolo9TrainingHooks(create: (size: string, sd: StateDict) => DetectionNetwork): TrainingHooks {
  return {
    lossNames: ['box', 'dfl', 'cls'],
    lossNamesFor: (network) => (asYolo9(network).head.proto ? ['box', 'dfl', 'cls', 'seg'] : ['box', 'dfl', 'cls']),
    maskRatio: (network) => (asYolo9(network).head.proto ? MASK_RATIO : null),
    emitLoss(b, network, inputs, shape) {
      const net = asYolo9(network);
      const feats = net.features(b, inputs.images);
      const levels = net.head.emit(b, feats);
      const l = b.scope('loss', () => emitYolo9Loss(b, levels, inputs.targets, { ...shape, nc: net.nc }));
      const components: Record<string, string> = { box: l.box, dfl: l.dfl, cls: l.cls };
      if (!net.head.proto) return { total: l.total, components, numFg: l.numFg };
      if (!inputs.masks) throw new LibreYOLOError('config_unsupported', 'YOLO9 segmentation training requires polygon masks. Use YOLO segmentation labels or COCO segmentations.');
      const { proto, coeffs } = b.scope('head', () => net.head.maskOutputs(b, feats));
      const seg = b.scope('loss', () => b.scope('seg', () => emitYolo9MaskLoss(b, { ...l.assigned, gtMasks: inputs.masks!, proto, coeffs }, {
        batch: shape.batch, height: shape.height, width: shape.width, maxTargets: shape.maxTargets, anchors: l.assigned.anchors, numMasks: net.head.proto!.numMasks,
      })));
      components.seg = seg;
      return { total: b.op('Add', [l.total, seg], {}, { name: 'loss_total_seg' }), components, numFg: l.numFg };
    },
    // The core's TRAIN_DEFAULTS and augmentation recipe are YOLOv9's.
    defaults: {},
    augment: BASE_RECIPE,
    adaptClasses: (sd, size, nc, seed) => yolo9ForClasses(sd, nc, seed, (s) => create(size, s)),
    initialize: (network, seed) => initializeFresh(asYolo9(network), seed),
  };
}
