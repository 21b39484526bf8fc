/**
 * D-FINE and DEIM as registered families (one network, DEIM with SiLU decoder MLPs): checkpoints
 * recognised by the `decoder.pre_bbox_head.` keys, told apart (same keys) only by metadata or file name,
 * the size from shapes and nc from the score head; the Pillow-exact 640 stretch, /255, no mean/std;
 * the NMS-free top-k over queries x classes with unclipped boxes; 640x640 only; the original's
 * export layout (`images` -> `pred_logits`, `pred_boxes`, opset 17) read back by LibreYOLO().
 */
import { LibreYOLOError } from '../../errors.ts';
import { SKIP_LAYER_NORM_FUSION_OFF } from '../../graph/contrib.ts';
import { DEFAULT_CAPABILITIES, type ModelFamily } from '../registry.ts';
import { DFINE_COMMON as C, DFINE_SIZES, type DfineSize, type DfineVariant } from './config.ts';
import { DfineDetector } from './detector.ts';
import { dfineExportClassCount, dfineExportToPredict } from './export-layout.ts';
import { checkDfineSource, dfineSizeFromShapes, looksLikeDfineOrDeim } from './recognize.ts';
import { loadDfineStateDict } from './state-dict.ts';
import { initializeDfine } from './init.ts';
import { dfineTrainingHooks } from './train.ts';

const SCORE_BIAS_KEY = 'decoder.dec_score_head.0.bias';

const NAMES: Record<DfineVariant, { displayName: string; filenamePrefix: string }> = {
  dfine: { displayName: 'D-FINE', filenamePrefix: 'LibreDFINE' },
  deim: { displayName: 'DEIM', filenamePrefix: 'LibreDEIM' },
};

/** The family of one variant, with its training hooks. */
const variantFamily = (variant: DfineVariant): ModelFamily => {
  const family: ModelFamily = {
    name: variant,
    ...NAMES[variant],
    sizes: DFINE_SIZES,
    defaultImgsz: C.inputSize,
    // Every size runs at 640 (the checkpoint's imgsz is not read): the eval graph bakes its constants for it.
    inputSizes: Object.fromEntries(DFINE_SIZES.map((s) => [s, C.inputSize])),
    imgszStride: 32,
    fixedImgsz: [C.inputSize],
    // The original's flags: the base class's batched predict and TTA, TTA_FIXED_SIZE (flip only).
    capabilities: { ...DEFAULT_CAPABILITIES, SUPPORTS_BATCHED_PREDICT: true, TTA_FIXED_SIZE: true },
    // Pillow BILINEAR stretch to 640x640, float32(u8) / 255, RGB.
    input: { resize: 'stretch', filter: 'pil', pad: 0, channels: 'rgb', scale: 1 / 255 },
    // The original's DFINEValPreprocessor: the validation dataset first fits the image into 640 with
    // OpenCV INTER_LINEAR (aspect kept), then OpenCV stretches that to 640x640; RGB, /255.
    valInput: { resize: 'stretch', filter: 'linear', pad: 0, channels: 'rgb', scale: 1 / 255, preResize: true },
    // Top min(max_det, Q * nc) of the sigmoid scores, boxes not clipped.
    postprocess: { kind: 'topk', k: C.numQueries, clip: false },
    // The residual Add + LayerNormalization of the attention blocks stays unfused (graph/contrib.ts).
    sessionConfig: SKIP_LAYER_NORM_FUSION_OFF,
    // Opset 17 (LayerNormalization), dynamic batch only.
    exportOpset: 17,
    staticExportSize: true,
    // Measured one part at a time in float16, the rest float32 (bench/dfine-half-parts.ts, stored
    // input): the proposal selection (enc_output, score/box heads, ReduceMax, TopK, gathers) re-ranks
    // its near-tied tokens (100 of 300 rows move) and the box arithmetic (distance2bbox,
    // inverse_sigmoid, the pixel decode) loses 0.2 px in half; attention, FFN, heads and the FDR
    // integral stay within 1e-2 px / 1e-3 of float32. The listed parts are small and stay float32.
    quantize: { keepFloat: ['/decoder/enc_', '/decoder/ReduceMax', '/decoder/TopK', '/decoder/Gather', 'distance2bbox', 'inverse_sigmoid', '/decode/'] },
    onnx: {
      classCount: (_dims, _hw, outputs) => dfineExportClassCount(outputs),
      layout: (batch) => `pred_logits [${batch},${C.numQueries},nc] + pred_boxes [${batch},${C.numQueries},4]`,
      toPredictLayout: dfineExportToPredict,
    },

    train: dfineTrainingHooks(variant, (size, nc, stateDict) => family.create({ size, nc, ...(stateDict ? { stateDict } : {}) })),

    canLoad: (keys) => looksLikeDfineOrDeim(keys),

    checkSource: ({ path, modelFamily }) => checkDfineSource(variant, modelFamily, path),

    detectSize: (stateDict) => dfineSizeFromShapes(stateDict),

    create({ size, nc, stateDict }) {
      if (!(DFINE_SIZES as readonly string[]).includes(size)) {
        throw new LibreYOLOError('model_load_failed', `Unknown ${variant} size '${size}'. Sizes: ${DFINE_SIZES.join(', ')}.`);
      }
      if (!stateDict) {
        const fresh = new DfineDetector({ size: size as DfineSize, nc: nc ?? 80, variant });
        initializeDfine(fresh, 0); // seed 0, as fresh models of the other families; training re-seeds
        return fresh;
      }
      const bias = stateDict.get(SCORE_BIAS_KEY) ?? stateDict.get(`module.${SCORE_BIAS_KEY}`);
      if (!bias || bias.dims.length !== 1 || bias.dims[0]! < 1) {
        throw new LibreYOLOError('model_load_failed', `Checkpoint has no ${NAMES[variant].displayName} score head (${SCORE_BIAS_KEY} is missing).`);
      }
      // nc is the score head's width; the checkpoint wins over any requested nc.
      const net = new DfineDetector({ size: size as DfineSize, nc: bias.dims[0]!, variant });
      loadDfineStateDict(net, stateDict);
      return net;
    },
  };
  return family;
};

export const dfineFamily = variantFamily('dfine');
export const deimFamily = variantFamily('deim');
