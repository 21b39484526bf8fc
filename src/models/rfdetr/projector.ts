/**
 * The multi-scale projector at its single P4 level (keys
 * `backbone.0.projector.stages.0.*`): the four stage maps concatenated (1536 channels), a C2f of
 * ConvX blocks (conv, channels-first LayerNorm named `bn`, SiLU) and a final channels-first LayerNorm.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { concat, conv2d, layerNorm, silu, split, transpose } from '../../graph/nn.ts';
import { RFDETR_COMMON as C } from './config.ts';

/** LayerNorm over the channels of an NCHW map: per pixel, via NHWC (as the original's export). */
function channelsFirstLayerNorm(b: GraphBuilder, x: string, scale: string, bias: string, eps: number): string {
  return transpose(b, layerNorm(b, transpose(b, x, [0, 2, 3, 1]), scale, bias, eps), [0, 3, 1, 2]);
}

class ConvX extends Module {
  constructor(readonly cin: number, readonly cout: number, readonly k: number) {
    super();
    this.addParameter('conv.weight', [cout, cin, k, k]);
    this.addParameter('bn.weight', [cout]);
    this.addParameter('bn.bias', [cout]);
  }
  forward(b: GraphBuilder, x: string): string {
    const y = conv2d(b, x, this.use(b, 'conv.weight'), null, { kernel: this.k }, 'conv/Conv');
    const n = b.scope('bn', () => channelsFirstLayerNorm(b, y, this.use(b, 'bn.weight'), this.use(b, 'bn.bias'), C.vitEps));
    return b.scope('act', () => silu(b, n));
  }
}

/** Two 3x3 ConvX without a residual (`shortcut=False`). */
class Bottleneck extends Module {
  readonly cv1: ConvX;
  readonly cv2: ConvX;
  constructor(c: number) {
    super();
    this.cv1 = this.addModule('cv1', new ConvX(c, c, 3));
    this.cv2 = this.addModule('cv2', new ConvX(c, c, 3));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.cv2.emit(b, this.cv1.emit(b, x));
  }
}

class C2f extends Module {
  readonly cv1: ConvX;
  readonly cv2: ConvX;
  readonly m: ModuleList<Bottleneck>;
  constructor(cin: number, cout: number, n: number) {
    super();
    const hidden = cout / 2;
    this.cv1 = this.addModule('cv1', new ConvX(cin, 2 * hidden, 1));
    this.m = this.addModule('m', new ModuleList(Array.from({ length: n }, () => new Bottleneck(hidden))));
    this.cv2 = this.addModule('cv2', new ConvX((2 + n) * hidden, cout, 1));
  }
  forward(b: GraphBuilder, x: string): string {
    const hidden = this.cv1.cout / 2;
    const ys = split(b, this.cv1.emit(b, x), [hidden, hidden], 1);
    b.scope('m', () => this.m.items.forEach((blk) => ys.push(blk.emit(b, ys[ys.length - 1]!))));
    return this.cv2.emit(b, concat(b, ys, 1));
  }
}

class OutputNorm extends Module {
  constructor(readonly channels: number) {
    super();
    this.addParameter('weight', [channels]);
    this.addParameter('bias', [channels]);
  }
  forward(b: GraphBuilder, x: string): string {
    return channelsFirstLayerNorm(b, x, this.use(b, 'weight'), this.use(b, 'bias'), C.vitEps);
  }
}

class P4Stage extends Module {
  readonly c2f: C2f;
  readonly norm: OutputNorm;
  constructor(cin: number, cout: number) {
    super();
    this.c2f = this.addModule('0', new C2f(cin, cout, 3));
    this.norm = this.addModule('1', new OutputNorm(cout));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.norm.emit(b, this.c2f.emit(b, x));
  }
}

export class MultiScaleProjector extends Module {
  readonly stages: ModuleList<P4Stage>;
  constructor() {
    super();
    this.stages = this.addModule('stages', new ModuleList([new P4Stage(C.vitDim * C.outFeatureIndexes.length, C.hiddenDim)]));
  }
  /** The four stage maps -> the single `[B, 256, Hp, Wp]` feature level. */
  forward(b: GraphBuilder, stages: string[]): string {
    return b.scope('stages', () => this.stages.at(0).emit(b, concat(b, stages, 1)));
  }
}
