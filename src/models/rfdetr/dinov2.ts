/**
 * The windowed DINOv2 backbone (keys `backbone.0.encoder.encoder.*`): patch embedding (16x16 for
 * detection, 12x12 for segmentation), position embedding resized to the input grid, 12 pre-norm ViT
 * layers with LayerScale (layers 3, 6, 9 attend over the whole image, the others inside each of the
 * nw x nw windows; one window makes every layer global), and the shared final LayerNorm on the four
 * stage taps, returned un-windowed as `[B, 384, H/patch, W/patch]`.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { LayerNorm, Linear, ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { asFloat32 } from '../../graph/tensor.ts';
import { concat, conv2d, erfGelu, float32, int64, matmul, reshape, residualLayerNorm, slice, transpose } from '../../graph/nn.ts';
import { biasGelu, packedSelfAttention } from '../../graph/contrib.ts';
import { dotProductAttention } from '../detr/attention.ts';
import { antialiasBicubicWeights } from './antialias-bicubic.ts';
import { RFDETR_COMMON as C, rfdetrInputDivisor, type RfdetrSizeConfig } from './config.ts';
import { LibreYOLOError } from '../../errors.ts';

/** Input grid of one session shape. */
export interface TokenGrid {
  hp: number;
  wp: number;
}

/** The backbone's geometry: patch side and windows per side. */
export type BackboneGeometry = Pick<RfdetrSizeConfig, 'patchSize' | 'numWindows'>;

export function tokenGrid(height: number, width: number, cfg: BackboneGeometry): TokenGrid {
  const divisor = rfdetrInputDivisor(cfg);
  if (height % divisor || width % divisor || height <= 0 || width <= 0) {
    throw new LibreYOLOError('invalid_imgsz',
      `Input spatial dimensions must be divisible by patch_size * num_windows (${cfg.patchSize} * ${cfg.numWindows} = ${divisor}), but got height=${height}, width=${width}`);
  }
  return { hp: height / cfg.patchSize, wp: width / cfg.patchSize };
}

class Embeddings extends Module {
  constructor(readonly peGrid: number, readonly geometry: BackboneGeometry) {
    super();
    const d = C.vitDim;
    this.addParameter('cls_token', [1, 1, d]);
    this.addParameter('mask_token', [1, d]);
    this.addParameter('position_embeddings', [1, peGrid * peGrid + 1, d]);
    this.addParameter('patch_embeddings.projection.weight', [d, 3, geometry.patchSize, geometry.patchSize]);
    this.addParameter('patch_embeddings.projection.bias', [d]);
  }

  /**
   * Position embedding of the patch rows as `[1, C, Hp, Wp]` and the cls row `[1, 1, C]`. The stored
   * grid is used as is when the input is square at the native grid; otherwise it is resized by two
   * constant weight matrices (antialiased bicubic), which ORT folds once per session shape.
   */
  positionEmbedding(b: GraphBuilder, grid: TokenGrid): { patches: string; cls: string } {
    return b.scope('position', () => {
      const p = this.peGrid;
      const d = C.vitDim;
      const table = this.use(b, 'position_embeddings');
      const cls = slice(b, table, 1, 0, 1);
      let rows = reshape(b, slice(b, table, 1, 1, p * p + 1), [p, p * d]); // [y, x*C]
      // A graph for any size resizes at the native grid too (the weights are then 0/1: exact).
      if (b.anySize || grid.hp * grid.wp !== p * p || grid.hp !== grid.wp) {
        const wh = b.constant('resize_h', float32(antialiasBicubicWeights(p, grid.hp), [grid.hp, p]));
        const ww = b.constant('resize_w', float32(antialiasBicubicWeights(p, grid.wp), [grid.wp, p]));
        const byRow = reshape(b, matmul(b, wh, rows), [grid.hp, p, d]); // [Hp, x, C]
        rows = matmul(b, ww, byRow); // [Hp, Wp, C]
      }
      const patches = b.op('Unsqueeze', [transpose(b, reshape(b, rows, [grid.hp, grid.wp, d]), [2, 0, 1]), b.constant('axes', int64([0]))]);
      return { patches, cls };
    });
  }

  /** Windowed tokens `[B*nw^2, 1 + N/nw^2, C]` (cls copy first in every window) and the resized embedding. */
  forward(b: GraphBuilder, x: string, grid: TokenGrid): { tokens: string; posEmbed: string } {
    const d = C.vitDim;
    const nw = this.geometry.numWindows;
    const patch = this.geometry.patchSize;
    const pe = this.positionEmbedding(b, grid);
    const patches = conv2d(b, x, this.use(b, 'patch_embeddings.projection.weight'), this.use(b, 'patch_embeddings.projection.bias'),
      { kernel: patch, stride: patch, pad: 0 }, 'patch_embeddings/projection/Conv');
    const embedded = b.op('Add', [patches, pe.patches]);
    const hh = grid.hp / nw;
    const ww = grid.wp / nw;
    // [B, C, hp, wp] -> channels last -> windows [B*nw*nw, hh*ww, C] (row-major over wy, wx, y, x).
    // Two transposes ORT has fast paths for (a 2-D one per image, then whole rows of ww*C values)
    // instead of one 6-D permutation, which ORT moved element by element (0.83 ms against ~0.2).
    const windows = b.scope('windows', () => {
      const channelsLast = transpose(b, reshape(b, embedded, [-1, d, grid.hp * grid.wp]), [0, 2, 1]);
      return reshape(b, transpose(b, reshape(b, channelsLast, [-1, hh, nw, ww * d]), [0, 2, 1, 3]), [-1, hh * ww, d]);
    });
    const cls = b.op('Add', [this.use(b, 'cls_token'), pe.cls]);
    // One cls copy per window. The train graph broadcasts it against a window slice (Where on a
    // false constant picks cls exactly, whatever the slice holds), so ORT's shape inference knows
    // every dim without a probe run; an eval graph expands to the batch it is run at.
    const clsCopies = b.training
      ? b.op('Where', [b.constant('pick_cls', { dtype: 'bool', dims: [1, 1, 1], data: Uint8Array.of(0) }), slice(b, windows, 1, 0, 1), cls])
      : b.op('Expand', [cls, concat(b, [slice(b, b.op('Shape', [windows]), 0, 0, 1), b.constant('cls_dims', int64([1, d]))], 0)]);
    const tokens = concat(b, [clsCopies, windows], 1);
    const posEmbed = concat(b, [pe.cls, reshape(b, transpose(b, pe.patches, [0, 2, 3, 1]), [1, grid.hp * grid.wp, d])], 1);
    return { tokens, posEmbed };
  }
}

class ViTLayer extends Module {
  readonly norm1: LayerNorm;
  readonly query: Linear;
  readonly key: Linear;
  readonly value: Linear;
  readonly dense: Linear;
  readonly norm2: LayerNorm;
  readonly fc1: Linear;
  readonly fc2: Linear;
  /** `windows`: windows per image (nw^2); a global layer joins them. */
  constructor(readonly global: boolean, readonly windows: number) {
    super();
    const d = C.vitDim;
    this.norm1 = this.addModule('norm1', new LayerNorm(d, C.vitEps));
    this.query = this.addModule('attention.attention.query', new Linear(d, d));
    this.key = this.addModule('attention.attention.key', new Linear(d, d));
    this.value = this.addModule('attention.attention.value', new Linear(d, d));
    this.dense = this.addModule('attention.output.dense', new Linear(d, d));
    this.addParameter('layer_scale1.lambda1', [d]);
    this.norm2 = this.addModule('norm2', new LayerNorm(d, C.vitEps));
    this.fc1 = this.addModule('mlp.fc1', new Linear(d, C.vitMlp));
    this.fc2 = this.addModule('mlp.fc2', new Linear(C.vitMlp, d));
    this.addParameter('layer_scale2.lambda1', [d]);
  }

  /** h `[B*nw^2, T, C]`; a global layer attends over `[B, nw^2 T, C]` (the windows of an image joined). */
  forward(b: GraphBuilder, h: string, tokensPerWindow: number): string {
    const d = C.vitDim;
    let x = this.norm1.emit(b, h);
    if (this.global) x = reshape(b, x, [-1, this.windows * tokensPerWindow, d]);
    let a = b.scope('attention', () => {
      const q = this.query.emit(b, x);
      const k = this.key.emit(b, x);
      const v = this.value.emit(b, x);
      return this.dense.emit(b, dotProductAttention(b, q, k, v, { heads: C.vitHeads, headDim: d / C.vitHeads, scaleOn: 'scores' }));
    });
    if (this.global) a = reshape(b, a, [-1, tokensPerWindow, d]);
    const h1 = b.op('Add', [h, b.op('Mul', [a, this.use(b, 'layer_scale1.lambda1')], {}, { name: 'layer_scale1' })]);
    const m = b.scope('mlp', () => this.fc2.emit(b, b.scope('act', () => erfGelu(b, this.fc1.emit(b, this.norm2.emit(b, h1))))));
    return b.op('Add', [h1, b.op('Mul', [m, this.use(b, 'layer_scale2.lambda1')], {}, { name: 'layer_scale2' })]);
  }

  /**
   * The same layer on ORT's fused kernels, given h and LN1(h): packed-QKV `Attention`, LayerScale
   * folded into `dense`/`fc2` (W' = W diag(lambda), b' = lambda b), residual + LayerNorm as `Add` +
   * `LayerNormalization` (graph/contrib.ts says why not `SkipLayerNormalization`), `BiasGelu`.
   * Returns h' and `next`(h') (the next layer's LN1, or the final LayerNorm after the last layer).
   */
  forwardFused(b: GraphBuilder, h: string, ln1: string, tokensPerWindow: number, next: LayerNorm): { h: string; normed: string } {
    const d = C.vitDim;
    // Folded on the host (this graph is for inference): a half-precision session could not fold the Muls itself.
    const scaled = (lin: Linear, lambda: string): { weight: string; bias: string } => {
      const w = asFloat32(lin.weightTensor());
      const bias = asFloat32(lin.biasTensor()!);
      const l = asFloat32(this.ownTensor(lambda).value);
      const [out, inp] = [lin.outFeatures, lin.inFeatures];
      const wt = new Float32Array(inp * out);
      for (let o = 0; o < out; o++) for (let k = 0; k < inp; k++) wt[k * out + o] = Math.fround(w[o * inp + k]! * l[o]!);
      return {
        weight: b.constant('weight_scaled', float32(wt, [inp, out])),
        bias: b.constant('bias_scaled', float32(Float32Array.from(bias, (v, o) => v * l[o]!), [out])),
      };
    };
    const x = this.global ? reshape(b, ln1, [-1, this.windows * tokensPerWindow, d]) : ln1;
    let a = b.scope('attention', () => {
      const parts = [this.query, this.key, this.value].map((l) => l.tensors(b));
      const w = concat(b, parts.map((p) => transpose(b, p.weight, [1, 0])), 1);
      const bias = concat(b, parts.map((p) => p.bias!), 0);
      return packedSelfAttention(b, x, w, bias, C.vitHeads);
    });
    if (this.global) a = reshape(b, a, [-1, tokensPerWindow, d]);
    const dense = scaled(this.dense, 'layer_scale1.lambda1');
    const n2 = this.norm2.tensors(b);
    const first = residualLayerNorm(b, matmul(b, a, dense.weight), h, n2.weight, n2.bias, dense.bias, C.vitEps);
    const m = b.scope('mlp', () => {
      const fc1 = this.fc1.tensors(b);
      const act = biasGelu(b, matmul(b, first.normed, transpose(b, fc1.weight, [1, 0])), fc1.bias!);
      const fc2 = scaled(this.fc2, 'layer_scale2.lambda1');
      return { out: matmul(b, act, fc2.weight), bias: fc2.bias };
    });
    const nn = next.tensors(b);
    const second = residualLayerNorm(b, m.out, first.sum, nn.weight, nn.bias, m.bias, next.eps);
    return { h: second.sum, normed: second.normed };
  }
}

class ViTEncoder extends Module {
  readonly layer: ModuleList<ViTLayer>;
  constructor(windows: number) {
    super();
    const global = new Set<number>(C.globalLayers);
    this.layer = this.addModule('layer', new ModuleList(Array.from({ length: C.vitLayers }, (_, k) => new ViTLayer(global.has(k), windows))));
  }
}

/** `WindowedDinov2WithRegistersBackbone`: embeddings, encoder.layer.{i}, layernorm. */
class WindowedDinov2 extends Module {
  readonly embeddings: Embeddings;
  readonly encoder: ViTEncoder;
  readonly layernorm: LayerNorm;
  constructor(peGrid: number, readonly geometry: BackboneGeometry) {
    super();
    this.embeddings = this.addModule('embeddings', new Embeddings(peGrid, geometry));
    this.encoder = this.addModule('encoder', new ViTEncoder(geometry.numWindows ** 2));
    this.layernorm = this.addModule('layernorm', new LayerNorm(C.vitDim, C.vitEps));
  }

  forward(b: GraphBuilder, x: string, grid: TokenGrid, fused = false): { stages: string[]; posEmbed: string } {
    const { tokens, posEmbed } = this.embeddings.emit(b, x, grid);
    const nw = this.geometry.numWindows;
    const hh = grid.hp / nw;
    const ww = grid.wp / nw;
    const t = 1 + hh * ww;
    const taps = new Set<number>(C.outFeatureIndexes);
    const stages: string[] = [];
    // Windows back to [B, C, hp, wp]: the embedding's two transposes in reverse (see there).
    const unwindow = (normed: string): string => {
      const patches = slice(b, normed, 1, 1, t);
      const channelsLast = transpose(b, reshape(b, patches, [-1, nw, hh, ww * C.vitDim]), [0, 2, 1, 3]);
      return reshape(b, transpose(b, reshape(b, channelsLast, [-1, grid.hp * grid.wp, C.vitDim]), [0, 2, 1]), [-1, C.vitDim, grid.hp, grid.wp]);
    };
    const layers = this.encoder.layer.items;
    let h = tokens;
    let ln1 = fused ? b.scope('encoder', () => b.scope('layer', () => b.scope('0', () => layers[0]!.norm1.emit(b, tokens)))) : '';
    b.scope('encoder', () => b.scope('layer', () => layers.forEach((layer, k) => {
      const last = k === layers.length - 1;
      if (fused) {
        const out = b.scope(String(k), () => layer.forwardFused(b, h, ln1, t, last ? this.layernorm : layers[k + 1]!.norm1));
        h = out.h;
        ln1 = out.normed;
      } else {
        h = layer.emit(b, h, t);
      }
      if (taps.has(k + 1)) {
        // On the fused path the last layer's residual norm already applied the final LayerNorm.
        stages.push(b.scope(`stage${k + 1}`, () => unwindow(fused && last ? ln1 : this.layernorm.forward(b, h))));
      }
    })));
    return { stages, posEmbed };
  }
}

/** `backbone.0.encoder`: the DinoV2 wrapper whose `encoder` child is the windowed HF model. */
export class DinoV2 extends Module {
  readonly encoder: WindowedDinov2;
  constructor(peGrid: number, geometry: BackboneGeometry) {
    super();
    this.encoder = this.addModule('encoder', new WindowedDinov2(peGrid, geometry));
  }
  forward(b: GraphBuilder, x: string, grid: TokenGrid, fused = false): { stages: string[]; posEmbed: string } {
    return this.encoder.emit(b, x, grid, fused);
  }
}
