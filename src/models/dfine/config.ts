/** D-FINE per-size configuration: HGNetv2 variant, encoder and decoder widths; DEIM's differences in the network. */

export type DfineSize = 'n' | 's' | 'm' | 'l' | 'x';
export const DFINE_SIZES: readonly DfineSize[] = ['n', 's', 'm', 'l', 'x'];

/** One HGNetv2 stage: in, mid, out, blocks, downsample, light blocks, kernel, layers per block. */
export interface StageSpec {
  cin: number;
  mid: number;
  cout: number;
  blocks: number;
  downsample: boolean;
  light: boolean;
  kernel: number;
  layers: number;
}

export interface HgnetSpec {
  stem: readonly [number, number, number];
  stages: readonly StageSpec[];
}

const st = (cin: number, mid: number, cout: number, blocks: number, downsample: boolean, light: boolean, kernel: number, layers: number): StageSpec =>
  ({ cin, mid, cout, blocks, downsample, light, kernel, layers });

export const HGNET: Record<'B0' | 'B2' | 'B4' | 'B5', HgnetSpec> = {
  B0: { stem: [3, 16, 16], stages: [st(16, 16, 64, 1, false, false, 3, 3), st(64, 32, 256, 1, true, false, 3, 3), st(256, 64, 512, 2, true, true, 5, 3), st(512, 128, 1024, 1, true, true, 5, 3)] },
  B2: { stem: [3, 24, 32], stages: [st(32, 32, 96, 1, false, false, 3, 4), st(96, 64, 384, 1, true, false, 3, 4), st(384, 128, 768, 3, true, true, 5, 4), st(768, 256, 1536, 1, true, true, 5, 4)] },
  B4: { stem: [3, 32, 48], stages: [st(48, 48, 128, 1, false, false, 3, 6), st(128, 96, 512, 1, true, false, 3, 6), st(512, 192, 1024, 3, true, true, 5, 6), st(1024, 384, 2048, 1, true, true, 5, 6)] },
  B5: { stem: [3, 32, 64], stages: [st(64, 64, 128, 1, false, false, 3, 6), st(128, 128, 512, 2, true, false, 3, 6), st(512, 256, 1024, 5, true, true, 5, 6), st(1024, 512, 2048, 2, true, true, 5, 6)] },
};

export interface DfineConfig {
  backbone: keyof typeof HGNET;
  useLab: boolean;
  /** Backbone BatchNorms are FrozenBatchNorm2d (buffers only). */
  freezeNorm: boolean;
  returnIdx: readonly number[];
  encHidden: number;
  encFfn: number;
  expansion: number;
  depthMult: number;
  decHidden: number;
  decFfn: number;
  decLayers: number;
  points: readonly number[];
  regScale: number;
}

export const DFINE_CONFIGS: Record<DfineSize, DfineConfig> = {
  n: { backbone: 'B0', useLab: true, freezeNorm: false, returnIdx: [2, 3], encHidden: 128, encFfn: 512, expansion: 0.34, depthMult: 0.5, decHidden: 128, decFfn: 512, decLayers: 3, points: [6, 6], regScale: 4 },
  s: { backbone: 'B0', useLab: true, freezeNorm: false, returnIdx: [1, 2, 3], encHidden: 256, encFfn: 1024, expansion: 0.5, depthMult: 0.34, decHidden: 256, decFfn: 1024, decLayers: 3, points: [3, 6, 3], regScale: 4 },
  m: { backbone: 'B2', useLab: true, freezeNorm: false, returnIdx: [1, 2, 3], encHidden: 256, encFfn: 1024, expansion: 1.0, depthMult: 0.67, decHidden: 256, decFfn: 1024, decLayers: 4, points: [3, 6, 3], regScale: 4 },
  l: { backbone: 'B4', useLab: false, freezeNorm: true, returnIdx: [1, 2, 3], encHidden: 256, encFfn: 1024, expansion: 1.0, depthMult: 1.0, decHidden: 256, decFfn: 1024, decLayers: 6, points: [3, 6, 3], regScale: 4 },
  x: { backbone: 'B5', useLab: false, freezeNorm: true, returnIdx: [1, 2, 3], encHidden: 384, encFfn: 2048, expansion: 1.0, depthMult: 1.0, decHidden: 256, decFfn: 1024, decLayers: 6, points: [3, 6, 3], regScale: 8 },
};

/** D-FINE, or DEIM: the same network and keys trained with another objective (dfine.md 1.4). */
export type DfineVariant = 'dfine' | 'deim';

/** What a variant changes in the network (dfine.md 1.4; the rest is identical). */
export interface VariantNetwork {
  /** Activation of the decoder FFNs, the LQE MLPs and the query_pos / enc_bbox / pre_bbox / dec_bbox MLPs. */
  decoderAct: 'relu' | 'silu';
  /** Sizes whose backbone stem is trained with requires_grad=False. */
  frozenStemSizes: readonly DfineSize[];
}

export const VARIANT_NETWORK: Record<DfineVariant, VariantNetwork> = {
  dfine: { decoderAct: 'relu', frozenStemSizes: DFINE_SIZES },
  deim: { decoderAct: 'silu', frozenStemSizes: ['l', 'x'] },
};

/** Constants shared by every size. */
export const DFINE_COMMON = {
  inputSize: 640,
  numQueries: 300,
  heads: 8,
  regMax: 32,
  up: 0.5,
  bnEps: 1e-5,
  /** BatchNorm2d's default running-stat momentum (train mode). */
  bnMomentum: 0.1,
  lnEps: 1e-5,
  anchorEps: 0.01,
  temperature: 10000,
} as const;

/** Python's round() (half to even), for the CSP bottleneck count round(3 * depth_mult). */
export function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (Math.abs(d - 0.5) > 1e-12) return Math.round(v);
  return f % 2 === 0 ? f : f + 1;
}
