/**
 * The RF-DETR-seg mask head (keys `segmentation_head.*`, segmentation.md 3.4), eval/export path:
 * the projector map bilinearly resized to a quarter of the input, refined by one depthwise block per
 * decoder layer (S + GELU(Linear(LN(dwconv3x3(S)))), channels-last LN eps 1e-6, exact GELU), then a
 * 1x1 projection; the last decoder layer's queries through the shared MLP (x + L2(GELU(L1(LN(x)))),
 * LN eps 1e-5) and projection; mask logits = their channel dot product + one scalar bias.
 */
import { s as str, type GraphBuilder } from '../../graph/builder.ts';
import { LayerNorm, Linear, ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { concat, conv2d, erfGelu, int64, matmul, reshape, slice, transpose } from '../../graph/nn.ts';
import { RFDETR_COMMON as C } from './config.ts';

class DepthwiseConvBlock extends Module {
  readonly norm: LayerNorm;
  readonly pwconv1: Linear;
  constructor(d: number) {
    super();
    this.addParameter('dwconv.weight', [d, 1, 3, 3]);
    this.addParameter('dwconv.bias', [d]);
    this.norm = this.addModule('norm', new LayerNorm(d, 1e-6));
    this.pwconv1 = this.addModule('pwconv1', new Linear(d, d));
  }

  /** `x` `[B, C, h, w]` -> the same shape. */
  forward(b: GraphBuilder, x: string): string {
    const y = conv2d(b, x, this.use(b, 'dwconv.weight'), this.use(b, 'dwconv.bias'), { kernel: 3, stride: 1, pad: 1, groups: C.hiddenDim }, 'dwconv/Conv');
    const z = erfGelu(b, this.pwconv1.emit(b, this.norm.emit(b, transpose(b, y, [0, 2, 3, 1]))));
    return b.op('Add', [x, transpose(b, z, [0, 3, 1, 2])]);
  }
}

/** torch `Sequential(Linear, GELU, Linear)`: children 0 and 2 hold the weights. */
class LinearGeluLinear extends Module {
  readonly first: Linear;
  readonly second: Linear;
  constructor(d: number, hidden: number) {
    super();
    this.first = this.addModule('0', new Linear(d, hidden));
    this.second = this.addModule('2', new Linear(hidden, d));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.second.emit(b, erfGelu(b, this.first.emit(b, x)));
  }
}

class MLPBlock extends Module {
  readonly normIn: LayerNorm;
  readonly layers: LinearGeluLinear;
  constructor(d: number) {
    super();
    this.normIn = this.addModule('norm_in', new LayerNorm(d, 1e-5));
    this.layers = this.addModule('layers', new LinearGeluLinear(d, 4 * d));
  }
  forward(b: GraphBuilder, x: string): string {
    return b.op('Add', [x, this.layers.emit(b, this.normIn.emit(b, x))]);
  }
}

export class SegmentationHead extends Module {
  readonly blocks: ModuleList<DepthwiseConvBlock>;
  readonly queryFeaturesBlock: MLPBlock;
  readonly queryFeaturesProj: Linear;
  constructor(decLayers: number) {
    super();
    const d = C.hiddenDim;
    this.addParameter('bias', [1]);
    this.blocks = this.addModule('blocks', new ModuleList(Array.from({ length: decLayers }, () => new DepthwiseConvBlock(d))));
    this.addParameter('spatial_features_proj.weight', [d, d, 1, 1]);
    this.addParameter('spatial_features_proj.bias', [d]);
    this.queryFeaturesBlock = this.addModule('query_features_block', new MLPBlock(d));
    this.queryFeaturesProj = this.addModule('query_features_proj', new Linear(d, d));
  }

  /**
   * Mask logits `[B, Q, H/4, W/4]` from the projector map `p4` `[B, 256, h, w]` and the last
   * decoder layer's normed queries `hs` `[B, Q, 256]`; also the projected query features.
   */
  forward(b: GraphBuilder, p4: string, hs: string, height: number, width: number, queries: number): { masks: string; queryFeatures: string } {
    const d = C.hiddenDim;
    const mh = Math.floor(height / 4), mw = Math.floor(width / 4);
    // PyTorch bilinear, align_corners=False, to a given size: ONNX linear with half-pixel centres.
    const sizes = concat(b, [slice(b, b.op('Shape', [p4]), 0, 0, 2), b.constant('hw', int64([mh, mw]))], 0);
    let s = b.op('Resize', [p4, '', '', sizes], { mode: str('linear'), coordinate_transformation_mode: str('half_pixel') }, { name: 'Resize' });
    b.scope('blocks', () => this.blocks.items.forEach((block, l) => { s = b.scope(String(l), () => block.forward(b, s)); }));
    const spatial = conv2d(b, s, this.use(b, 'spatial_features_proj.weight'), this.use(b, 'spatial_features_proj.bias'), { kernel: 1, stride: 1, pad: 0 }, 'spatial_features_proj/Conv');
    const q = this.queryFeaturesProj.emit(b, this.queryFeaturesBlock.emit(b, hs));
    // einsum('bchw,bqc->bqhw') as [B,Q,C] x [B,C,hw].
    const logits = matmul(b, q, reshape(b, spatial, [0, d, mh * mw]));
    const masks = b.op('Add', [reshape(b, logits, [0, queries, mh, mw]), this.use(b, 'bias')]);
    return { masks, queryFeatures: q };
  }
}
