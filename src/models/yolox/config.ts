/**
 * Per-size YOLOX configuration: depth and width multipliers, depthwise convs for
 * nano only, and the per-size input size the original predicts, validates and exports at.
 */

export type YoloxSize = 'n' | 't' | 's' | 'm' | 'l' | 'x';
export const YOLOX_SIZES: readonly YoloxSize[] = ['n', 't', 's', 'm', 'l', 'x'];

export interface YoloxConfig {
  depth: number;
  width: number;
  depthwise: boolean;
  /** Square input side (not read from checkpoints: the original always uses this one). */
  inputSize: number;
}

export const YOLOX_CONFIGS: Record<YoloxSize, YoloxConfig> = {
  n: { depth: 0.33, width: 0.25, depthwise: true, inputSize: 416 },
  t: { depth: 0.33, width: 0.375, depthwise: false, inputSize: 416 },
  s: { depth: 0.33, width: 0.5, depthwise: false, inputSize: 640 },
  m: { depth: 0.67, width: 0.75, depthwise: false, inputSize: 640 },
  l: { depth: 1.0, width: 1.0, depthwise: false, inputSize: 640 },
  x: { depth: 1.33, width: 1.25, depthwise: false, inputSize: 640 },
};

export const YOLOX_STRIDES = [8, 16, 32] as const;

/** Channel counts and repeats derived as the original does (int() truncation, Python round). */
export interface YoloxDims {
  /** Stem width `int(64 * width)`; pyramid widths are 4c, 8c, 16c. */
  c: number;
  /** Backbone CSP repeat unit `max(round(3 * depth), 1)` (dark2..5 use d, 3d, 3d, d). */
  d: number;
  /** Neck CSP repeats `round(3 * depth)`. */
  neck: number;
  /** Head hidden width `int(256 * width)`. */
  hidden: number;
  /** P3, P4, P5 widths `int(256w)`, `int(512w)`, `int(1024w)`. */
  levels: [number, number, number];
}

export function yoloxDims(size: YoloxSize): YoloxDims {
  const { depth, width } = YOLOX_CONFIGS[size];
  // No .5 cases occur for these multipliers, so Math.round equals Python's banker's rounding here.
  const r = Math.round(3 * depth);
  return {
    c: Math.trunc(64 * width),
    d: Math.max(r, 1),
    neck: r,
    hidden: Math.trunc(256 * width),
    levels: [Math.trunc(256 * width), Math.trunc(512 * width), Math.trunc(1024 * width)],
  };
}
