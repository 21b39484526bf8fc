/**
 * The D-FINE network: HGNetv2 -> HybridEncoder -> DFINETransformer decoder, state_dict
 * paths `backbone.*`, `encoder.*`, `decoder.*` as the original. The eval graph is tied to 640x640
 * (position embedding, anchors and valid mask are baked for it, as in the original).
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { Module } from '../../graph/module.ts';
import { LibreYOLOError } from '../../errors.ts';
import { DFINE_COMMON as C, DFINE_CONFIGS, VARIANT_NETWORK, type DfineConfig, type DfineSize, type DfineVariant } from './config.ts';
import { DfineDecoder } from './decoder.ts';
import { HybridEncoder } from './encoder.ts';
import { HGNetv2 } from './hgnetv2.ts';

export interface DfineOptions {
  size: DfineSize;
  nc: number;
  /** D-FINE (default) or DEIM: the decoder's activations and the frozen stem differ (dfine.md 1.4). */
  variant?: DfineVariant;
}

export interface DfineEmitOptions {
  batch: number | string;
  height?: number;
  width?: number;
  /** Also output the intermediate taps (backbone_out*, encoder_out*, enc_token_maxlogit, enc_topk_token_index). */
  taps?: boolean;
  /** Take the proposal indices from an int64 input `enc_topk_index [B, 300]` instead of TopK (parity debugging). */
  injectTopk?: boolean;
}

export class DfineNetwork extends Module {
  readonly cfg: DfineConfig;
  readonly backbone: HGNetv2;
  readonly encoder: HybridEncoder;
  readonly decoder: DfineDecoder;
  readonly strides: number[];
  readonly variant: DfineVariant;
  constructor(readonly options: DfineOptions) {
    super();
    this.cfg = DFINE_CONFIGS[options.size];
    this.variant = options.variant ?? 'dfine';
    this.backbone = this.addModule('backbone', new HGNetv2(this.cfg));
    this.encoder = this.addModule('encoder', new HybridEncoder(this.cfg, this.backbone.outChannels()));
    this.strides = this.cfg.returnIdx.map((k) => 2 ** (k + 2));
    const shapes = this.strides.map((s) => [C.inputSize / s, C.inputSize / s] as const);
    this.decoder = this.addModule('decoder', new DfineDecoder(this.cfg, options.nc, shapes, VARIANT_NETWORK[this.variant].decoderAct));
    this.assignPaths();
    const tensors = new Map(this.namedTensors());
    for (const key of this.frozenParameterKeys()) tensors.get(key)!.requiresGrad = false;
  }

  /**
   * The parameters the original trains with requires_grad=False: the backbone stem (freeze_at 0 with
   * freeze_stem_only: every D-FINE size, DEIM l and x) and the FDR constants decoder.up /
   * decoder.reg_scale. Their BatchNorms still run on batch statistics in train mode.
   */
  frozenParameterKeys(): string[] {
    const stem = VARIANT_NETWORK[this.variant].frozenStemSizes.includes(this.options.size);
    return [...this.namedTensors()]
      .filter(([key, p]) => p.kind === 'parameter' && ((stem && key.startsWith('backbone.stem.')) || key === 'decoder.up' || key === 'decoder.reg_scale'))
      .map(([key]) => key);
  }

  /** Refuses an input size the eval graph cannot run (its baked constants are for 640x640). */
  static checkSize(height: number, width: number): void {
    if (height !== C.inputSize || width !== C.inputSize) {
      throw new LibreYOLOError('invalid_imgsz', `D-FINE runs only at ${C.inputSize}x${C.inputSize} (its anchors and position embedding are fixed for that size), got ${height}x${width}. Use imgsz=${C.inputSize}.`);
    }
  }

  /**
   * The eval forward of `images` [B, 3, 640, 640] (RGB, /255): raw class logits [B, 300, nc] and
   * boxes [B, 300, 4] (cx, cy, w, h normalised), with the maps and proposals for taps.
   */
  forward(b: GraphBuilder, images: string, injected: string | null): { logits: string; boxes: string; feats: string[]; enc: string[]; maxLogit: string; topk: string } {
    const feats = this.backbone.emit(b, images);
    const enc = this.encoder.emit(b, feats, this.levelSizes());
    const out = this.decoder.emit(b, enc, injected);
    return { logits: out.logits, boxes: out.boxes, feats, enc, maxLogit: out.maxLogit, topk: out.topk };
  }

  /** [H, W] of each level's map at 640, finest first. */
  levelSizes(): Array<[number, number]> {
    return this.strides.map((s) => [C.inputSize / s, C.inputSize / s]);
  }

  /** Emits the eval graph: input `images` [B, 3, 640, 640] (RGB, /255) -> `pred_logits`, `pred_boxes`. */
  emitGraph(b: GraphBuilder, opts: DfineEmitOptions): void {
    const height = opts.height ?? C.inputSize;
    const width = opts.width ?? C.inputSize;
    DfineNetwork.checkSize(height, width);
    const batch = opts.batch;
    const k = C.numQueries;
    const x = b.input('images', 'float32', [batch, 3, height, width]);
    const injected = opts.injectTopk ? b.input('enc_topk_index', 'int64', [batch, k]) : null;
    const out = this.forward(b, x, injected);
    b.output('pred_logits', out.logits, 'float32', [batch, k, this.options.nc]);
    b.output('pred_boxes', out.boxes, 'float32', [batch, k, 4]);
    if (!opts.taps) return;
    const sizes = this.levelSizes();
    const tokens = sizes.reduce((a, [h, w]) => a + h * w, 0);
    out.feats.forEach((f, l) => b.output(`backbone_out${l}`, f, 'float32', [batch, this.backbone.outChannels()[l]!, sizes[l]![0], sizes[l]![1]]));
    out.enc.forEach((f, l) => b.output(`encoder_out${l}`, f, 'float32', [batch, this.cfg.encHidden, sizes[l]![0], sizes[l]![1]]));
    b.output('enc_token_maxlogit', out.maxLogit, 'float32', [batch, tokens]);
    if (!injected) b.output('enc_topk_token_index', out.topk, 'int64', [batch, k]);
  }
}
