/**
 * YOLOX as a registered family: checkpoint recognition, size and class count from the
 * tensors, loading the original's keys (Megvii's layout, so upstream `yolox_*.pth` state dicts load
 * as is) with the prefixes its loader strips, BGR 0..255 preprocessing and the candidate step.
 */
import { asFloat32, type DType, type HostTensor } from '../../graph/tensor.ts';
import { LibreYOLOError } from '../../errors.ts';
import { DEFAULT_CAPABILITIES, type ModelFamily, type StateDict } from '../registry.ts';
import { YOLOX_CONFIGS, YOLOX_SIZES, YOLOX_STRIDES, type YoloxSize } from './config.ts';
import { initializeYolox } from './init.ts';
import { YoloxNetwork } from './network.ts';
import { yoloxCandidates } from './postprocess.ts';
import { yoloxPreprocess } from './preprocess.ts';
import { yoloxTrainingHooks } from './train.ts';

const STEM_KEY = 'backbone.backbone.stem.conv.conv.weight';
const CLS_KEY = 'head.cls_preds.0.weight';
const SIZE_BY_STEM: Record<number, YoloxSize> = { 16: 'n', 24: 't', 32: 's', 48: 'm', 64: 'l', 80: 'x' };

/**
 * The original's key clean-ups: a `module.` (DataParallel) or `_orig_mod.` (torch.compile) prefix,
 * and a `model.model.` prefix carried by every key, are dropped.
 */
export function normalizeYoloxKeys(sd: StateDict): StateDict {
  let keys = [...sd.keys()];
  const strip = (prefix: string, all: boolean): void => {
    const has = all ? keys.length > 0 && keys.every((k) => k.startsWith(prefix)) : keys.some((k) => k.startsWith(prefix));
    if (has) keys = keys.map((k) => (k.startsWith(prefix) ? k.slice(prefix.length) : k));
  };
  const original = [...sd.keys()];
  strip('module.', false);
  strip('_orig_mod.', false);
  strip('model.model.', true);
  if (keys.every((k, j) => k === original[j])) return sd;
  return new Map(keys.map((k, j) => [k, sd.get(original[j]!)!]));
}

/** Half/double checkpoints are computed in float32; counters stay int64. */
function convertTensor(t: HostTensor, dtype: DType): HostTensor {
  if (dtype === 'int64') {
    const src = t.data instanceof BigInt64Array ? t.data : BigInt64Array.from(Array.from(t.data as ArrayLike<number>, (v) => BigInt(Math.trunc(v))));
    return { dtype, dims: t.dims, data: src };
  }
  return { dtype: 'float32', dims: t.dims, data: asFloat32(t) };
}

/**
 * Copies a state dict into the network by key. Shapes must match; missing running statistics keep
 * their fresh values (the original loads non-strictly), missing weights are refused.
 */
export function loadYoloxStateDict(net: YoloxNetwork, stateDict: StateDict): void {
  const sd = normalizeYoloxKeys(stateDict);
  const missing: string[] = [];
  for (const [key, p] of net.namedTensors()) {
    const t = sd.get(key);
    if (!t) {
      missing.push(key);
      continue;
    }
    if (t.dims.join(',') !== p.dims.join(',')) {
      throw new LibreYOLOError('model_load_failed', `Shape mismatch for ${key}: checkpoint has [${t.dims.join(', ')}], the yolox-${net.options.size} network expects [${p.dims.join(', ')}].`);
    }
    p.value = t.dtype === p.value.dtype ? t : convertTensor(t, p.value.dtype);
  }
  const missingWeights = missing.filter((k) => !/running_|num_batches_tracked/.test(k));
  if (missingWeights.length) {
    throw new LibreYOLOError('model_load_failed', `Checkpoint is missing ${missingWeights.length} yolox-${net.options.size} weights, e.g. ${missingWeights.slice(0, 3).join(', ')}.`);
  }
}

/** Anchors of the stride-8/16/32 head on an `h x w` input. */
const anchorCount = (h: number, w: number): number => YOLOX_STRIDES.reduce((a, s) => a + (h / s) * (w / s), 0);

export const yoloxFamily: ModelFamily = {
  name: 'yolox',
  displayName: 'YOLOX',
  filenamePrefix: 'LibreYOLOX',
  sizes: YOLOX_SIZES,
  defaultImgsz: 640,
  inputSizes: Object.fromEntries(YOLOX_SIZES.map((s) => [s, YOLOX_CONFIGS[s].inputSize])),
  imgszStride: 32,
  // One forward serves a stacked batch; graph capture stays off until replay is verified for YOLOX.
  capabilities: { ...DEFAULT_CAPABILITIES, SUPPORTS_BATCHED_PREDICT: true },
  // fp16/bf16 cast everything: keeping the head or the decode in float32 changed nothing measurable.
  quantize: { keepFloat: [] },

  canLoad(keys) {
    return keys.some((k) => k.includes('backbone.backbone') || k.includes('head.stems'));
  },

  detectSize(stateDict) {
    const c = normalizeYoloxKeys(stateDict).get(STEM_KEY)?.dims[0];
    return c === undefined ? null : SIZE_BY_STEM[c] ?? null;
  },

  // The network's input layout (BGR 0..255, top-left letterbox with 114): the trainer converts its
  // batches to it; predict resizes as the original does (PIL, yoloxPreprocess).
  input: { resize: 'letterbox', pad: 114, channels: 'bgr', scale: 1 },
  preprocess: yoloxPreprocess,
  // A metadata-less export: output [B, anchors, 5 + nc] (cx, cy, w, h, objectness, classes).
  onnx: {
    classCount: (dims, [h, w]) => (dims.length === 3 && dims[1] === anchorCount(h, w) && dims[2]! > 5 ? dims[2]! - 5 : null),
    layout: (batch, [h, w]) => `[${batch},${anchorCount(h, w)},5+nc]`,
  },
  candidates: yoloxCandidates,
  train: yoloxTrainingHooks((size, stateDict) => yoloxFamily.create({ size, stateDict })),

  create({ size, nc, stateDict }) {
    if (!(YOLOX_SIZES as readonly string[]).includes(size)) {
      throw new LibreYOLOError('model_load_failed', `Unknown yolox size '${size}'. Sizes: ${YOLOX_SIZES.join(', ')}.`);
    }
    const s = size as YoloxSize;
    if (!stateDict) {
      const net = new YoloxNetwork({ size: s, nc: nc ?? 80 });
      initializeYolox(net);
      return net;
    }
    const cls = normalizeYoloxKeys(stateDict).get(CLS_KEY)?.dims[0];
    if (!cls) throw new LibreYOLOError('model_load_failed', `Checkpoint has no yolox detection head (${CLS_KEY} is missing).`);
    const net = new YoloxNetwork({ size: s, nc: cls });
    loadYoloxStateDict(net, stateDict);
    return net;
  },
};
