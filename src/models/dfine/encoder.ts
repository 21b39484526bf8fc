/**
 * The D-FINE HybridEncoder (keys `encoder.*`): 1x1 input projections, one post-norm
 * AIFI transformer layer on the coarsest map with a precomputed 2D sin-cos position embedding,
 * then a top-down FPN and a bottom-up PAN of RepNCSPELAN4 blocks (SCDown to go down).
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { LayerNorm, Linear, ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { concat, erfGelu, float32, reshape, silu, split, transpose, upsample2x } from '../../graph/nn.ts';
import { MultiheadAttention } from '../detr/multihead-attention.ts';
import { DFINE_COMMON as C, roundHalfEven, type DfineConfig } from './config.ts';
import { ConvNorm } from './conv.ts';

const cna = (cin: number, cout: number, k: number, act: 'silu' | null = 'silu', stride = 1, groups = 1): ConvNorm =>
  new ConvNorm({ cin, cout, k, stride, groups, act, norm: 'norm' });

/** `build_2d_sincos_position_embedding(w, h, dim, T)` in float32 steps: [sin(a w), cos(a w), sin(b w), cos(b w)], a = t div h, b = t mod h. */
export function sincosPositionEmbedding(w: number, h: number, dim: number, temperature = C.temperature): Float32Array {
  const d = dim / 4;
  const omega = Array.from({ length: d }, (_, k) => Math.fround(1 / Math.fround(temperature ** Math.fround(k / d))));
  const out = new Float32Array(w * h * dim);
  for (let t = 0; t < w * h; t++) {
    const a = Math.floor(t / h);
    const bb = t % h;
    for (let k = 0; k < d; k++) {
      const x = Math.fround(a * omega[k]!);
      const y = Math.fround(bb * omega[k]!);
      out[t * dim + k] = Math.sin(x);
      out[t * dim + d + k] = Math.cos(x);
      out[t * dim + 2 * d + k] = Math.sin(y);
      out[t * dim + 3 * d + k] = Math.cos(y);
    }
  }
  return out;
}

/** VGGBlock (the CSP bottleneck): SiLU(BN(conv3x3 x) + BN(conv1x1 x)). */
class VGGBlock extends Module {
  readonly conv1: ConvNorm;
  readonly conv2: ConvNorm;
  constructor(c: number) {
    super();
    this.conv1 = this.addModule('conv1', cna(c, c, 3, null));
    this.conv2 = this.addModule('conv2', cna(c, c, 1, null));
  }
  forward(b: GraphBuilder, x: string): string {
    const y = b.op('Add', [this.conv1.emit(b, x), this.conv2.emit(b, x)]);
    return silu(b, y);
  }
}

/** CSPLayer (expansion 1): bottlenecks(conv1 x) + conv2 x. */
class CSPLayer extends Module {
  readonly conv1: ConvNorm;
  readonly conv2: ConvNorm;
  readonly bottlenecks: ModuleList<VGGBlock>;
  constructor(cin: number, cout: number, n: number) {
    super();
    this.conv1 = this.addModule('conv1', cna(cin, cout, 1));
    this.conv2 = this.addModule('conv2', cna(cin, cout, 1));
    this.bottlenecks = this.addModule('bottlenecks', new ModuleList(Array.from({ length: n }, () => new VGGBlock(cout))));
  }
  forward(b: GraphBuilder, x: string): string {
    let y = this.conv1.emit(b, x);
    b.scope('bottlenecks', () => { for (const m of this.bottlenecks.items) y = m.emit(b, y); });
    return b.op('Add', [y, this.conv2.emit(b, x)]);
  }
}

/** [CSPLayer, 3x3 conv] as the original's nn.Sequential (children 0, 1). */
class CspConv extends Module {
  readonly csp: CSPLayer;
  readonly conv: ConvNorm;
  constructor(cin: number, cout: number, n: number) {
    super();
    this.csp = this.addModule('0', new CSPLayer(cin, cout, n));
    this.conv = this.addModule('1', cna(cout, cout, 3));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.conv.emit(b, this.csp.emit(b, x));
  }
}

class RepNCSPELAN4 extends Module {
  readonly cv1: ConvNorm;
  readonly cv2: CspConv;
  readonly cv3: CspConv;
  readonly cv4: ConvNorm;
  constructor(c1: number, c2: number, c3: number, c4: number, n: number) {
    super();
    this.cv1 = this.addModule('cv1', cna(c1, c3, 1));
    this.cv2 = this.addModule('cv2', new CspConv(c3 / 2, c4, n));
    this.cv3 = this.addModule('cv3', new CspConv(c4, c4, n));
    this.cv4 = this.addModule('cv4', cna(c3 + 2 * c4, c2, 1));
  }
  forward(b: GraphBuilder, x: string): string {
    const y = this.cv1.emit(b, x);
    const half = this.cv1.spec.cout / 2;
    const [y0, y1] = split(b, y, [half, half], 1) as [string, string];
    const y2 = this.cv2.emit(b, y1);
    const y3 = this.cv3.emit(b, y2);
    return this.cv4.emit(b, concat(b, [y0, y1, y2, y3], 1));
  }
}

/** SCDown: 1x1 conv + BN, then depthwise 3x3 stride-2 conv + BN (no activations). */
class SCDown extends Module {
  readonly cv1: ConvNorm;
  readonly cv2: ConvNorm;
  constructor(c: number) {
    super();
    this.cv1 = this.addModule('cv1', cna(c, c, 1, null));
    this.cv2 = this.addModule('cv2', cna(c, c, 3, null, 2, c));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.cv2.emit(b, this.cv1.emit(b, x));
  }
}

/** nn.Sequential(SCDown): the key path `downsample_convs.{i}.0.*`. */
class DownsampleConv extends Module {
  readonly down: SCDown;
  constructor(c: number) {
    super();
    this.down = this.addModule('0', new SCDown(c));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.down.emit(b, x);
  }
}

/** One post-norm transformer encoder layer (GELU FFN). */
class AifiLayer extends Module {
  readonly selfAttn: MultiheadAttention;
  readonly linear1: Linear;
  readonly linear2: Linear;
  readonly norm1: LayerNorm;
  readonly norm2: LayerNorm;
  constructor(dim: number, ffn: number) {
    super();
    this.selfAttn = this.addModule('self_attn', new MultiheadAttention(dim, C.heads));
    this.linear1 = this.addModule('linear1', new Linear(dim, ffn));
    this.linear2 = this.addModule('linear2', new Linear(ffn, dim));
    this.norm1 = this.addModule('norm1', new LayerNorm(dim, C.lnEps));
    this.norm2 = this.addModule('norm2', new LayerNorm(dim, C.lnEps));
  }
  forward(b: GraphBuilder, x: string, pos: string): string {
    const t = this.norm1.emit(b, b.op('Add', [x, this.selfAttn.emit(b, b.op('Add', [x, pos]), x)]));
    const ffn = b.scope('ffn', () => this.linear2.emit(b, erfGelu(b, this.linear1.emit(b, t))));
    return this.norm2.emit(b, b.op('Add', [t, ffn]));
  }
}

/** `encoder.{0}.layers.{0}`: the TransformerEncoder wrapper paths. */
class AifiEncoder extends Module {
  readonly layers: ModuleList<AifiLayer>;
  constructor(dim: number, ffn: number) {
    super();
    this.layers = this.addModule('layers', new ModuleList([new AifiLayer(dim, ffn)]));
  }
  forward(b: GraphBuilder, x: string, pos: string): string {
    return b.scope('layers', () => this.layers.at(0).emit(b, x, pos));
  }
}

export class HybridEncoder extends Module {
  readonly inputProj: ModuleList<ConvNorm>;
  readonly encoder: ModuleList<AifiEncoder>;
  readonly lateralConvs: ModuleList<ConvNorm>;
  readonly fpnBlocks: ModuleList<RepNCSPELAN4>;
  readonly downsampleConvs: ModuleList<DownsampleConv>;
  readonly panBlocks: ModuleList<RepNCSPELAN4>;
  constructor(readonly cfg: DfineConfig, inChannels: number[]) {
    super();
    const h = cfg.encHidden;
    const levels = inChannels.length;
    const c4 = Math.floor((cfg.expansion * h) / 2);
    const n = roundHalfEven(3 * cfg.depthMult);
    const elan = (): RepNCSPELAN4 => new RepNCSPELAN4(2 * h, h, 2 * h, c4, n);
    this.inputProj = this.addModule('input_proj', new ModuleList(inChannels.map((c) => cna(c, h, 1, null))));
    this.encoder = this.addModule('encoder', new ModuleList([new AifiEncoder(h, cfg.encFfn)]));
    this.lateralConvs = this.addModule('lateral_convs', new ModuleList(Array.from({ length: levels - 1 }, () => cna(h, h, 1, null))));
    this.fpnBlocks = this.addModule('fpn_blocks', new ModuleList(Array.from({ length: levels - 1 }, elan)));
    this.downsampleConvs = this.addModule('downsample_convs', new ModuleList(Array.from({ length: levels - 1 }, () => new DownsampleConv(h))));
    this.panBlocks = this.addModule('pan_blocks', new ModuleList(Array.from({ length: levels - 1 }, elan)));
  }

  /** feats: backbone maps finest first; `sizes` their [H, W] at the eval size. */
  forward(b: GraphBuilder, feats: string[], sizes: Array<[number, number]>): string[] {
    const h = this.cfg.encHidden;
    const L = feats.length;
    const proj = b.scope('input_proj', () => feats.map((f, l) => this.inputProj.at(l).emit(b, f)));
    // AIFI on the coarsest level: flatten row-major, attend, back to NCHW.
    const [th, tw] = sizes[L - 1]!;
    proj[L - 1] = b.scope('encoder', () => b.scope('0', () => {
      const pos = b.constant('pos_embed', float32(sincosPositionEmbedding(tw, th, h), [1, th * tw, h]));
      const seq = transpose(b, reshape(b, proj[L - 1]!, [0, h, th * tw]), [0, 2, 1]);
      const out = this.encoder.at(0).emit(b, seq, pos);
      return reshape(b, transpose(b, out, [0, 2, 1]), [0, h, th, tw]);
    }));
    // Top-down: inner[0] is the running top; lateral outputs replace it before the upsample.
    const inner = [proj[L - 1]!];
    for (let idx = L - 1; idx > 0; idx--) {
      const j = L - 1 - idx;
      const lat = b.scope('lateral_convs', () => this.lateralConvs.at(j).emit(b, inner[0]!));
      inner[0] = lat;
      const up = upsample2x(b, lat);
      inner.unshift(b.scope('fpn_blocks', () => this.fpnBlocks.at(j).emit(b, concat(b, [up, proj[idx - 1]!], 1))));
    }
    const outs = [inner[0]!];
    for (let idx = 0; idx < L - 1; idx++) {
      const down = b.scope('downsample_convs', () => this.downsampleConvs.at(idx).emit(b, outs[outs.length - 1]!));
      outs.push(b.scope('pan_blocks', () => this.panBlocks.at(idx).emit(b, concat(b, [down, inner[idx + 1]!], 1))));
    }
    return outs;
  }
}
