/** RF-DETR detection sizes and the hyper-parameters they share. */

export const RFDETR_SIZES = ['n', 's', 'm', 'l'] as const;
export type RfdetrSize = (typeof RFDETR_SIZES)[number];

export interface RfdetrSizeConfig {
  /** Native square input (the training resolution). */
  resolution: number;
  /** Side of the stored position-embedding grid (its table has side^2 + 1 rows). */
  peGrid: number;
  decLayers: number;
}

export const RFDETR_CONFIGS: Record<RfdetrSize, RfdetrSizeConfig> = {
  n: { resolution: 384, peGrid: 24, decLayers: 2 },
  s: { resolution: 512, peGrid: 32, decLayers: 3 },
  m: { resolution: 576, peGrid: 36, decLayers: 4 },
  l: { resolution: 704, peGrid: 44, decLayers: 4 },
};

/** Shared by every detection size: DINOv2-small backbone (windowed, no registers) and the LW-DETR decoder. */
export const RFDETR_COMMON = {
  vitDim: 384,
  vitHeads: 6,
  vitMlp: 1536,
  vitLayers: 12,
  patchSize: 16,
  numWindows: 2,
  /** Stage taps: hidden states after layers 2, 5, 8, 11 (HF stage numbering 3/6/9/12). */
  outFeatureIndexes: [3, 6, 9, 12],
  /** Layers with full-image attention; every other layer attends inside its window. */
  globalLayers: [3, 6, 9],
  vitEps: 1e-6,
  hiddenDim: 256,
  saHeads: 8,
  caHeads: 16,
  decPoints: 2,
  dimFeedforward: 2048,
  decEps: 1e-5,
  numQueries: 300,
  groupDetr: 13,
  /** Proposal size at level 0 (0.05 * 2^level). */
  proposalWh: 0.05,
} as const;

/** H and W must be multiples of patch * windows (32). */
export const RFDETR_INPUT_DIVISOR = RFDETR_COMMON.patchSize * RFDETR_COMMON.numWindows;
