/** YOLOv9 as a registered family: checkpoint recognition, size/nc detection, loading both key layouts. */
import type { KeyLayout } from '../../graph/module.ts';
import { asFloat32, type DType, type HostTensor } from '../../graph/tensor.ts';
import { LibreYOLOError } from '../../errors.ts';
import { DEFAULT_CAPABILITIES, LETTERBOX_RGB_UNIT, type ModelFamily, type StateDict } from '../registry.ts';
import { defaultClassWidth, YOLO9_SIZES, type Yolo9Size } from './config.ts';
import { DEFAULT_MASK_HEAD, Yolo9Network, type MaskHeadOptions } from './network.ts';
import { yolo9Segment } from './segment.ts';
import { initializeFresh } from './init.ts';
import { yolo9TrainingHooks } from './train.ts';

function tensorDims(sd: StateDict, ...keys: string[]): number[] | undefined {
  for (const k of keys) {
    const t = sd.get(k);
    if (t) return t.dims;
  }
  return undefined;
}

/** The key spelling a state dict uses (June-2026 `cv`/`m`/`head.cv2`, or newer `conv`/`bottleneck`/`head.anchor_convs`). */
export function detectKeyLayout(sd: StateDict): KeyLayout {
  for (const k of sd.keys()) {
    if (k.startsWith('head.anchor_convs.') || k.startsWith('head.class_convs.') || k.includes('.bottleneck.')) return 'current';
    if (k.startsWith('head.cv2.') || k.startsWith('head.cv3.') || k.includes('.m.0.')) return 'legacy';
  }
  return 'legacy';
}

export function loadYolo9StateDict(net: Yolo9Network, sd: StateDict): void {
  const layout = detectKeyLayout(sd);
  const missing: string[] = [];
  for (const [key, p] of net.namedTensors(layout)) {
    const t = sd.get(key);
    if (!t) {
      missing.push(key);
      continue;
    }
    const want = p.dims.join(',');
    if (t.dims.join(',') !== want) {
      throw new LibreYOLOError('model_load_failed', `Shape mismatch for ${key}: checkpoint has [${t.dims.join(', ')}], the yolo9-${net.options.size} network expects [${want}].`);
    }
    p.value = t.dtype === p.value.dtype ? t : convertTensor(t, p.value.dtype);
  }
  // Like the original (strict=False), missing buffers are tolerated; missing weights are not.
  const missingWeights = missing.filter((k) => !/running_|num_batches_tracked/.test(k));
  if (missingWeights.length) {
    throw new LibreYOLOError('model_load_failed', `Checkpoint is missing ${missingWeights.length} yolo9-${net.options.size} weights, e.g. ${missingWeights.slice(0, 3).join(', ')}.`);
  }
}

/** Half/double checkpoints are computed in float32; counters stay int64. */
function convertTensor(t: HostTensor, dtype: DType): HostTensor {
  if (dtype === 'int64') {
    const src = t.data instanceof BigInt64Array ? t.data : BigInt64Array.from(Array.from(t.data as ArrayLike<number>, (v) => BigInt(Math.trunc(v))));
    return { dtype, dims: t.dims, data: src };
  }
  return { dtype: 'float32', dims: t.dims, data: asFloat32(t) };
}

/** The mask head's sizes from a segment checkpoint (prototype count and hidden width). */
function maskHeadOf(sd: StateDict): MaskHeadOptions {
  const hidden = tensorDims(sd, 'head.proto.cv1.conv.weight')?.[0];
  const numMasks = tensorDims(sd, 'head.proto.cv3.conv.weight')?.[0];
  if (hidden === undefined || numMasks === undefined) {
    throw new LibreYOLOError('model_load_failed', 'Checkpoint has no yolo9 segment head (head.proto.* keys are missing): it is a detection checkpoint; load it with task detect.');
  }
  return { numMasks, protoChannels: hidden };
}

/** Anchor count of the stride-8/16/32 head on an `h x w` input. */
const anchorsFor = (h: number, w: number): number => [8, 16, 32].reduce((a, s) => a + Math.ceil(h / s) * Math.ceil(w / s), 0);

export const yolo9Family: ModelFamily = {
  name: 'yolo9',
  displayName: 'YOLOv9',
  filenamePrefix: 'LibreYOLO9',
  weightTaskSuffixes: ['', '-pose', '-seg', '-sem', '-cls', '-obb'],
  sizes: YOLO9_SIZES,
  defaultImgsz: 640,
  imgszStride: 32,
  capabilities: { ...DEFAULT_CAPABILITIES, SUPPORTS_BATCHED_PREDICT: true, SUPPORTS_CUDA_GRAPH: true },
  tasks: ['detect', 'segment'],
  // head.cv4 alone is no sign: pose and OBB heads have one too.
  taskFromKeys: (keys) => (keys.some((k) => k.startsWith('head.proto')) ? 'segment' : null),
  segment: yolo9Segment,
  input: LETTERBOX_RGB_UNIT,
  postprocess: { kind: 'nms', agnostic: false },
  quantize: { keepFloat: [] },
  // A state dict with the mask head keeps it (the trained network is the one the file had).
  train: yolo9TrainingHooks((size, stateDict) => yolo9Family.create({ size, stateDict, ...([...stateDict.keys()].some((k) => k.startsWith('head.proto')) ? { task: 'segment' } : {}) })),
  // The export is the predict graph: [B, 4+nc, anchors] (xyxy input pixels, class scores).
  onnx: {
    classCount: (dims, [h, w]) => (dims.length === 3 && dims[2] === anchorsFor(h, w) && dims[1]! > 4 ? dims[1]! - 4 : null),
    layout: (batch, [h, w]) => `[${batch},4+nc,${anchorsFor(h, w)}]`,
  },

  canLoad(keys) {
    if (keys.some((k) => k.includes('one2one_cv2') || k.includes('one2one_cv3') || k.includes('one_to_one_'))) return false;
    return keys.some((k) => {
      const l = k.toLowerCase();
      return l.includes('repncspelan') || l.includes('adown') || l.includes('sppelan') || k.startsWith('backbone.elan') || k.startsWith('neck.elan');
    });
  },

  detectSize(sd) {
    const c0 = tensorDims(sd, 'backbone.conv0.conv.weight')?.[0];
    if (c0 === 16) return 't';
    if (c0 === 64) return 'c';
    if (c0 === 32) {
      const e = tensorDims(sd, 'backbone.elan1.cv1.conv.weight', 'backbone.elan1.conv1.conv.weight')?.[0];
      if (e === 64) return 's';
      if (e === 128) return 'm';
    }
    return null;
  },

  create({ size, nc, stateDict, task }) {
    if (!(YOLO9_SIZES as readonly string[]).includes(size)) {
      throw new LibreYOLOError('model_load_failed', `Unknown yolo9 size '${size}'. Sizes: ${YOLO9_SIZES.join(', ')}.`);
    }
    const s = size as Yolo9Size;
    if (!stateDict) {
      const classes = nc ?? 80;
      const net = new Yolo9Network({ size: s, nc: classes, classWidth: defaultClassWidth(s, classes), ...(task === 'segment' ? { masks: DEFAULT_MASK_HEAD } : {}) });
      initializeFresh(net);
      return net;
    }
    // Class count and class-tower width come from the checkpoint (the width is sticky across fine-tunes).
    const cls = tensorDims(stateDict, 'head.cv3.0.2.weight', 'head.class_convs.0.2.weight');
    const width = tensorDims(stateDict, 'head.cv3.0.0.conv.weight', 'head.class_convs.0.0.conv.weight');
    if (!cls || !width) throw new LibreYOLOError('model_load_failed', 'Checkpoint has no yolo9 detection head (head.cv3.* / head.class_convs.* keys are missing).');
    const masks = task === 'segment' ? maskHeadOf(stateDict) : undefined;
    const net = new Yolo9Network({ size: s, nc: cls[0]!, classWidth: width[0]!, ...(masks ? { masks } : {}) });
    loadYolo9StateDict(net, stateDict);
    return net;
  },
};
