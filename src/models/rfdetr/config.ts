/**
 * RF-DETR sizes per task and the hyper-parameters they share. Detection (n/s/m/l) uses patch 16
 * and 2x2 windows at 384-704; segmentation (n/s/m/l/x/xx) uses patch 12, one window for n and 2x2
 * otherwise, at 312-768, with fewer queries (100/200/300) and a mask head at a quarter of the input.
 */

export const RFDETR_SIZES = ['n', 's', 'm', 'l'] as const;
export type RfdetrSize = (typeof RFDETR_SIZES)[number];
export const RFDETR_SEG_SIZES = ['n', 's', 'm', 'l', 'x', 'xx'] as const;
export type RfdetrSegSize = (typeof RFDETR_SEG_SIZES)[number];
export type RfdetrTask = 'detect' | 'segment';

export interface RfdetrSizeConfig {
  /** Native square input (the training resolution). */
  resolution: number;
  /** Side of the stored position-embedding grid (its table has side^2 + 1 rows). */
  peGrid: number;
  decLayers: number;
  patchSize: number;
  /** Windows per side: nw x nw windows per image (1: every layer attends over the whole image). */
  numWindows: number;
  /** Decoder queries per group, also the top-k of the postprocess (`num_select`). */
  numQueries: number;
}

const DETECT = { patchSize: 16, numWindows: 2, numQueries: 300 } as const;

export const RFDETR_CONFIGS: Record<RfdetrSize, RfdetrSizeConfig> = {
  n: { ...DETECT, resolution: 384, peGrid: 24, decLayers: 2 },
  s: { ...DETECT, resolution: 512, peGrid: 32, decLayers: 3 },
  m: { ...DETECT, resolution: 576, peGrid: 36, decLayers: 4 },
  l: { ...DETECT, resolution: 704, peGrid: 44, decLayers: 4 },
};

/** The original's RFDETR_SEG_CONFIGS (segmentation.md 3.1). */
export const RFDETR_SEG_CONFIGS: Record<RfdetrSegSize, RfdetrSizeConfig> = {
  n: { patchSize: 12, numWindows: 1, resolution: 312, peGrid: 26, decLayers: 4, numQueries: 100 },
  s: { patchSize: 12, numWindows: 2, resolution: 384, peGrid: 32, decLayers: 4, numQueries: 100 },
  m: { patchSize: 12, numWindows: 2, resolution: 432, peGrid: 36, decLayers: 5, numQueries: 200 },
  l: { patchSize: 12, numWindows: 2, resolution: 504, peGrid: 42, decLayers: 5, numQueries: 200 },
  x: { patchSize: 12, numWindows: 2, resolution: 624, peGrid: 52, decLayers: 6, numQueries: 300 },
  xx: { patchSize: 12, numWindows: 2, resolution: 768, peGrid: 64, decLayers: 6, numQueries: 300 },
};

/** Mask logits come out at input / this (`mask_downsample_ratio`). */
export const RFDETR_MASK_DOWNSAMPLE = 4;

/** The sizes of a task. */
export function rfdetrSizes(task: string): readonly string[] {
  return task === 'segment' ? RFDETR_SEG_SIZES : RFDETR_SIZES;
}

/** The configuration of `size` for `task`, or null when the task has no such size. */
export function rfdetrConfig(size: string, task: string): RfdetrSizeConfig | null {
  const table: Record<string, RfdetrSizeConfig> = task === 'segment' ? RFDETR_SEG_CONFIGS : RFDETR_CONFIGS;
  return Object.hasOwn(table, size) ? table[size]! : null;
}

/** H and W must be multiples of patch * windows (32 for detection, 12 or 24 for segmentation). */
export function rfdetrInputDivisor(cfg: Pick<RfdetrSizeConfig, 'patchSize' | 'numWindows'>): number {
  return cfg.patchSize * cfg.numWindows;
}

/** Shared by every size: DINOv2-small backbone (windowed, no registers) and the LW-DETR decoder. */
export const RFDETR_COMMON = {
  vitDim: 384,
  vitHeads: 6,
  vitMlp: 1536,
  vitLayers: 12,
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
  groupDetr: 13,
  /** Proposal size at level 0 (0.05 * 2^level). */
  proposalWh: 0.05,
} as const;
