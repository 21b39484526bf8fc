/**
 * RF-DETR as a registered family: checkpoint recognition (LibreYOLO v1.0 wrappers,
 * upstream state dicts with their `module.`/`model.`/`_orig_mod.` prefixes), size from the
 * position-embedding table, nc from the class head (nc + 1 columns), Pillow-stretch + ImageNet
 * preprocessing, the NMS-free top-k over queries x (nc + 1) columns with unclipped boxes, the
 * original's export layout (`input` -> `dets`, `labels`, and `masks` for segment) and its quantize
 * keep-float list. Task segment (RF-DETR-seg n..xx): recognised by `segmentation_head.*` keys, its own
 * size table (segmentation.md 3.1), masks from the shared top-k's queries (rfdetr/masks.ts).
 */
import { COCO91_TO_COCO80, COCO_NAMES } from '../../data/coco.ts';
import { LibreYOLOError } from '../../errors.ts';
import { SKIP_LAYER_NORM_FUSION_OFF } from '../../graph/contrib.ts';
import type { HostTensor } from '../../graph/tensor.ts';
import { queriesToPredictLayout } from '../detr/query-layout.ts';
import { DEFAULT_CAPABILITIES, type ModelFamily } from '../registry.ts';
import { RFDETR_CONFIGS, RFDETR_SEG_CONFIGS, RFDETR_SEG_SIZES, RFDETR_SIZES, rfdetrInputDivisor, rfdetrSizes, type RfdetrSizeConfig, type RfdetrTask } from './config.ts';
import { rfdetrSegment } from './masks.ts';
import { initializeRfdetr } from './init.ts';
import { RfdetrNetwork } from './network.ts';
import { loadRfdetrStateDict, normalizeStateDict, stripPrefixes } from './state-dict.ts';
import { rfdetrTrainingHooks } from './train.ts';

const PE_KEY = 'backbone.0.encoder.encoder.embeddings.position_embeddings';
const CLASS_BIAS_KEY = 'class_embed.bias';
const DETECT_QUERIES = RFDETR_CONFIGS.n.numQueries;
const byPeRows = (table: Record<string, RfdetrSizeConfig>): Record<number, string> => Object.fromEntries(Object.entries(table).map(([s, c]) => [c.peGrid ** 2 + 1, s]));
/** Size by position-table rows; a segment checkpoint (mask head keys) reads the segment table. */
const SIZE_BY_PE_ROWS = { detect: byPeRows(RFDETR_CONFIGS), segment: byPeRows(RFDETR_SEG_CONFIGS) };
const SEG_KEY = /^segmentation_head\./;
const isSegmentKeys = (keys: Iterable<string>): boolean => { for (const k of keys) if (SEG_KEY.test(stripPrefixes(k))) return true; return false; };
const taskTable = (table: Record<string, RfdetrSizeConfig>) => ({
  sizes: Object.keys(table),
  inputSizes: Object.fromEntries(Object.entries(table).map(([s, c]) => [s, c.resolution])),
  imgszStride: Object.fromEntries(Object.entries(table).map(([s, c]) => [s, rfdetrInputDivisor(c)])),
});

/** Heads of the RF-DETR tasks not run here: recognised so they are refused clearly. */
const OTHER_TASK_KEYS: Array<[RegExp, string]> = [
  [/^keypoint_head\./, 'pose'], [/^angle_embed\./, 'OBB'],
];

/**
 * The export layout back to the predict layout: `dets [B,Q,4]` (cx, cy, w, h normalised) and
 * `labels [B,Q,K]` (logits) -> `[B, 4+K, Q]` (xyxy input pixels, sigmoid scores), as the graph's
 * own decode. The boxes output is the one whose last dim is 4 (the original's rule).
 */
export function rfdetrExportToPredict(output: HostTensor, context: { extra: Record<string, HostTensor>; inputDims: readonly number[] }): HostTensor {
  const all = [output, ...Object.values(context.extra)];
  const dets = all.find((t) => t.dims.length === 3 && t.dims[2] === 4);
  const logits = all.find((t) => t !== dets && t.dims.length === 3);
  if (!dets || !logits) throw new LibreYOLOError('model_load_failed', `An RF-DETR export has a boxes output [B, Q, 4] and a logits output [B, Q, nc+1]; got ${all.map((t) => `[${t.dims.join(', ')}]`).join(', ')}.`);
  return queriesToPredictLayout(dets, logits, context.inputDims, { clampSize: false });
}

/** nc of an export whose outputs are `dets [B,Q,4]` and `labels [B,Q,nc+1]` (Q the query count), else null. */
export function rfdetrExportClassCount(outputs: Readonly<Record<string, readonly number[]>>): number | null {
  const { dets, labels } = outputs;
  if (!dets || !labels || dets.length !== 3 || labels.length !== 3) return null;
  if (dets[0] !== labels[0] || dets[1] !== DETECT_QUERIES || labels[1] !== DETECT_QUERIES || dets[2] !== 4) return null;
  return labels[2]! >= 2 ? labels[2]! - 1 : null;
}

export const rfdetrFamily: ModelFamily = {
  name: 'rfdetr',
  displayName: 'RF-DETR',
  filenamePrefix: 'LibreRFDETR',
  weightTaskSuffixes: ['', '-seg'],
  // Every size of any task; detection builds n/s/m/l, segment n..xx (taskSizes).
  sizes: RFDETR_SEG_SIZES,
  tasks: ['detect', 'segment'],
  taskFromKeys: (keys) => (isSegmentKeys(keys) ? 'segment' : null),
  segment: rfdetrSegment,
  // The original's RF-DETR constructor refuses it before loading, in these words.
  taskMismatchMessage: (declared, requested) => `RF-DETR checkpoint appears to be task='${declared}', but task='${requested}' was requested.`,
  taskSizes: { detect: taskTable(RFDETR_CONFIGS), segment: taskTable(RFDETR_SEG_CONFIGS) },
  defaultImgsz: RFDETR_CONFIGS.n.resolution,
  inputSizes: Object.fromEntries(RFDETR_SIZES.map((s) => [s, RFDETR_CONFIGS[s].resolution])),
  // Detection: H and W multiples of patch (16) x windows (2); any such size runs (the position table
  // is resized). Segment sizes have their own (12 for n, 24 otherwise: taskSizes).
  imgszStride: 32,
  // The original's flags: batched predict (the base default) and flip-only TTA (fixed-square resize).
  capabilities: { ...DEFAULT_CAPABILITIES, SUPPORTS_BATCHED_PREDICT: true, TTA_FIXED_SIZE: true },
  // Pillow BILINEAR stretch to the input size, /255, ImageNet mean/std.
  input: { resize: 'stretch', filter: 'pil', pad: 0, channels: 'rgb', scale: 1 / 255, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] },
  // An upstream COCO head scores the 91 COCO category ids: read as the 80 classes, the unused ids'
  // pairs dropped after the conf threshold (the original's _COCO91_TO_COCO80).
  postprocess: { kind: 'topk', k: DETECT_QUERIES, clip: false, columnClasses: (columns, nc) => (columns === 91 && nc === 80 ? COCO91_TO_COCO80 : null) },
  defaultNames: (networkNc) => (networkNc === 90 ? COCO_NAMES : null),
  // The backbone's and decoder's residual Add + LayerNormalization stay unfused (graph/contrib.ts).
  sessionConfig: SKIP_LAYER_NORM_FUSION_OFF,
  // The original's export: opset 17 (LayerNormalization), dynamic batch only, H and W static.
  exportOpset: 17,
  exportOwnTaskOnly: true,
  staticExportSize: true,
  // Heads, the patch embedding and the ref-point MLP stay float (substring match).
  quantize: { keepFloat: ['class_embed', 'bbox_embed', 'angle_embed', 'keypoint_head', 'segmentation_head', 'embeddings', 'ref_point', 'dfl'] },
  onnx: {
    // A file without metadata is told by its output pair, under the original's export names (D-FINE
    // exports pred_logits/pred_boxes of the same shapes, with nc columns instead of nc + 1).
    classCount: (_dims, _hw, outputs) => rfdetrExportClassCount(outputs),
    layout: (batch) => `dets [${batch},${DETECT_QUERIES},4] + labels [${batch},${DETECT_QUERIES},nc+1]`,
    toPredictLayout: rfdetrExportToPredict,
  },

  canLoad(keys) {
    return keys.some((raw) => {
      const k = raw.replace(/^(module\.)?(model\.)?(_orig_mod\.)?/, '');
      return k.startsWith('backbone.0.encoder.encoder.') || k.startsWith('transformer.enc_out_class_embed.') || k === 'refpoint_embed.weight';
    });
  },

  detectSize(stateDict) {
    const sd = normalizeStateDict(stateDict);
    const rows = sd.get(PE_KEY)?.dims[1];
    return rows === undefined ? null : SIZE_BY_PE_ROWS[isSegmentKeys(sd.keys()) ? 'segment' : 'detect'][rows] ?? null;
  },

  // Detection trains (the segment task's mask losses are not built: segment training is refused).
  train: rfdetrTrainingHooks((size, nc, stateDict) => rfdetrFamily.create({ size, nc, ...(stateDict ? { stateDict } : {}) })),

  create({ size, nc, stateDict, task }) {
    const t: RfdetrTask = task === 'segment' ? 'segment' : 'detect';
    const sizes = rfdetrSizes(t);
    if (!sizes.includes(size)) {
      throw new LibreYOLOError('model_load_failed', `Unknown rfdetr ${t === 'segment' ? 'segment ' : ''}size '${size}'. Sizes: ${sizes.join(', ')}.`);
    }
    if (!stateDict) {
      const net = new RfdetrNetwork({ size, nc: nc ?? 80, task: t });
      initializeRfdetr(net);
      return net;
    }
    const sd = normalizeStateDict(stateDict);
    for (const key of sd.keys()) {
      if (key.includes('lora_')) throw new LibreYOLOError('model_load_failed', `RF-DETR LoRA adapter checkpoints are not supported (key ${key}); merge the adapter into the weights first.`);
      for (const [re, task] of OTHER_TASK_KEYS) {
        if (re.test(key)) throw new LibreYOLOError('model_task_unsupported', `This is an RF-DETR ${task} checkpoint (key ${key}); only RF-DETR detection is supported.`);
      }
    }
    const k = sd.get(CLASS_BIAS_KEY)?.dims[0];
    if (!k || k < 2) throw new LibreYOLOError('model_load_failed', `Checkpoint has no RF-DETR class head (${CLASS_BIAS_KEY} is missing).`);
    // The head has nc + 1 columns; the checkpoint's width wins over any requested nc.
    const net = new RfdetrNetwork({ size, nc: k - 1, task: t });
    loadRfdetrStateDict(net, sd, { peGrid: net.config.peGrid });
    return net;
  },
};
