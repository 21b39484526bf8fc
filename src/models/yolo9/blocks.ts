/**
 * YOLOv9 building blocks as emitting modules. Child names are the June-2026
 * state_dict names; the second argument of addModule is the newer upstream spelling.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { Module } from '../../graph/module.ts';
import { avgPool, batchNorm, batchNormTrain, concat, conv2d, maxPool, silu, split } from '../../graph/nn.ts';

export const BN_EPS = 1e-3;
/** PyTorch convention: running = (1 - m) * running + m * batch. */
export const BN_MOMENTUM = 0.03;

/** Conv2d (no bias) + BatchNorm + optional SiLU: keys `conv.weight`, `bn.*`. */
export class ConvBN extends Module {
  constructor(readonly cin: number, readonly cout: number, readonly k: number, readonly stride = 1, readonly groups = 1, readonly act = true, readonly pad = (k - 1) >> 1) {
    super();
    this.addParameter('conv.weight', [cout, cin / groups, k, k]);
    this.addParameter('bn.weight', [cout]);
    this.addParameter('bn.bias', [cout]);
    this.addBuffer('bn.running_mean', [cout]);
    this.addBuffer('bn.running_var', [cout]);
    this.addBuffer('bn.num_batches_tracked', [], 'int64');
  }
  forward(b: GraphBuilder, x: string): string {
    const y = conv2d(b, x, this.use(b, 'conv.weight'), null, { kernel: this.k, stride: this.stride, pad: this.pad, groups: this.groups }, 'conv/Conv');
    const n = b.training ? this.trainNorm(b, y) : batchNorm(b, y, this.use(b, 'bn.weight'), this.use(b, 'bn.bias'), this.use(b, 'bn.running_mean'), this.use(b, 'bn.running_var'), BN_EPS, 'bn/BatchNormalization');
    return this.act ? b.scope('act', () => silu(b, n)) : n;
  }

  /** Batch statistics; the updated running stats become graph outputs named by their state_dict keys. */
  private trainNorm(b: GraphBuilder, y: string): string {
    const out = batchNormTrain(b, y, this.use(b, 'bn.weight'), this.use(b, 'bn.bias'), this.use(b, 'bn.running_mean'), this.use(b, 'bn.running_var'),
      { eps: BN_EPS, momentum: BN_MOMENTUM, channels: this.cout, preciseStats: b.preciseStats });
    b.runningStatOutputs.set(this.tensorPath('bn.running_mean'), out.mean);
    b.runningStatOutputs.set(this.tensorPath('bn.running_var'), out.variance);
    return out.y;
  }
}

/** Plain biased Conv2d (the last layer of each head tower). */
export class Conv2d extends Module {
  constructor(readonly cin: number, readonly cout: number, readonly k: number, readonly groups = 1) {
    super();
    this.addParameter('weight', [cout, cin / groups, k, k]);
    this.addParameter('bias', [cout]);
  }
  forward(b: GraphBuilder, x: string): string {
    return conv2d(b, x, this.use(b, 'weight'), this.use(b, 'bias'), { kernel: this.k, groups: this.groups });
  }
}

/** Children named '0', '1', ... applied in order. */
export class Sequential extends Module {
  readonly layers: Array<Module & { forward(b: GraphBuilder, x: string): string }>;
  constructor(...layers: Array<Module & { forward(b: GraphBuilder, x: string): string }>) {
    super();
    this.layers = layers;
    layers.forEach((m, k) => this.addModule(String(k), m));
  }
  forward(b: GraphBuilder, x: string): string {
    let y = x;
    for (const m of this.layers) y = m.emit(b, y);
    return y;
  }
}

/** SiLU(conv3x3(x) + conv1x1(x)), both BN'd, no identity branch. */
export class RepConvN extends Module {
  readonly conv1: ConvBN;
  readonly conv2: ConvBN;
  constructor(c1: number, c2: number) {
    super();
    this.conv1 = this.addModule('conv1', new ConvBN(c1, c2, 3, 1, 1, false));
    this.conv2 = this.addModule('conv2', new ConvBN(c1, c2, 1, 1, 1, false, 0));
  }
  forward(b: GraphBuilder, x: string): string {
    const sum = b.op('Add', [this.conv1.emit(b, x), this.conv2.emit(b, x)]);
    return b.scope('act', () => silu(b, sum));
  }
}

export class RepNBottleneck extends Module {
  readonly cv1: RepConvN;
  readonly cv2: ConvBN;
  constructor(c: number) {
    super();
    this.cv1 = this.addModule('cv1', new RepConvN(c, c), 'conv1');
    this.cv2 = this.addModule('cv2', new ConvBN(c, c, 3), 'conv2');
  }
  forward(b: GraphBuilder, x: string): string {
    return b.op('Add', [x, this.cv2.emit(b, this.cv1.emit(b, x))]);
  }
}

export class RepNCSP extends Module {
  readonly cv1: ConvBN;
  readonly cv2: ConvBN;
  readonly cv3: ConvBN;
  readonly m: Sequential;
  constructor(c1: number, c2: number, n: number) {
    super();
    const h = Math.trunc(c2 * 0.5);
    this.cv1 = this.addModule('cv1', new ConvBN(c1, h, 1), 'conv1');
    this.cv2 = this.addModule('cv2', new ConvBN(c1, h, 1), 'conv2');
    this.cv3 = this.addModule('cv3', new ConvBN(2 * h, c2, 1), 'conv3');
    this.m = this.addModule('m', new Sequential(...Array.from({ length: n }, () => new RepNBottleneck(h))), 'bottleneck');
  }
  forward(b: GraphBuilder, x: string): string {
    const a = this.m.emit(b, this.cv1.emit(b, x));
    return this.cv3.emit(b, concat(b, [a, this.cv2.emit(b, x)], 1));
  }
}

type Unary = Module & { forward(b: GraphBuilder, x: string): string };

/** ELAN skeleton shared by ELAN (t/s first block) and RepNCSPELAN. */
abstract class ElanBase extends Module {
  abstract readonly cv1: ConvBN;
  abstract readonly cv2: Unary;
  abstract readonly cv3: Unary;
  abstract readonly cv4: ConvBN;
  constructor(protected readonly part: number) {
    super();
  }
  forward(b: GraphBuilder, x: string): string {
    const [y1, y2] = split(b, this.cv1.emit(b, x), [this.part / 2, this.part / 2], 1) as [string, string];
    const y3 = this.cv2.emit(b, y2);
    const y4 = this.cv3.emit(b, y3);
    return this.cv4.emit(b, concat(b, [y1, y2, y3, y4], 1));
  }
}

export class ELAN extends ElanBase {
  readonly cv1: ConvBN;
  readonly cv2: ConvBN;
  readonly cv3: ConvBN;
  readonly cv4: ConvBN;
  constructor(c1: number, part: number, proc: number, out: number) {
    super(part);
    this.cv1 = this.addModule('cv1', new ConvBN(c1, part, 1), 'conv1');
    this.cv2 = this.addModule('cv2', new ConvBN(part / 2, proc, 3), 'conv2');
    this.cv3 = this.addModule('cv3', new ConvBN(proc, proc, 3), 'conv3');
    this.cv4 = this.addModule('cv4', new ConvBN(part + 2 * proc, out, 1), 'conv4');
  }
}

export class RepNCSPELAN extends ElanBase {
  readonly cv1: ConvBN;
  readonly cv2: Sequential;
  readonly cv3: Sequential;
  readonly cv4: ConvBN;
  constructor(c1: number, part: number, proc: number, out: number, n: number) {
    super(part);
    this.cv1 = this.addModule('cv1', new ConvBN(c1, part, 1), 'conv1');
    this.cv2 = this.addModule('cv2', new Sequential(new RepNCSP(part / 2, proc, n), new ConvBN(proc, proc, 3)), 'conv2');
    this.cv3 = this.addModule('cv3', new Sequential(new RepNCSP(proc, proc, n), new ConvBN(proc, proc, 3)), 'conv3');
    this.cv4 = this.addModule('cv4', new ConvBN(part + 2 * proc, out, 1), 'conv4');
  }
}

/** avg_pool(2, s1) then a 3x3 stride-2 Conv. */
export class AConv extends Module {
  readonly cv: ConvBN;
  constructor(c1: number, c2: number) {
    super();
    this.cv = this.addModule('cv', new ConvBN(c1, c2, 3, 2), 'conv');
  }
  forward(b: GraphBuilder, x: string): string {
    return this.cv.emit(b, avgPool(b, x, 2, 1, 0));
  }
}

/** avg_pool(2, s1), split halves: 3x3 s2 conv | maxpool(3, s2, p1) + 1x1 conv. */
export class ADown extends Module {
  readonly cv1: ConvBN;
  readonly cv2: ConvBN;
  constructor(readonly c1: number, c2: number) {
    super();
    this.cv1 = this.addModule('cv1', new ConvBN(c1 / 2, c2 / 2, 3, 2), 'conv1');
    this.cv2 = this.addModule('cv2', new ConvBN(c1 / 2, c2 / 2, 1), 'conv2');
  }
  forward(b: GraphBuilder, x: string): string {
    const [x1, x2] = split(b, avgPool(b, x, 2, 1, 0), [this.c1 / 2, this.c1 / 2], 1) as [string, string];
    return concat(b, [this.cv1.emit(b, x1), this.cv2.emit(b, maxPool(b, x2, 3, 2, 1))], 1);
  }
}

export class SPPELAN extends Module {
  readonly cv1: ConvBN;
  readonly cv5: ConvBN;
  constructor(c1: number, hid: number, c3: number) {
    super();
    this.cv1 = this.addModule('cv1', new ConvBN(c1, hid, 1), 'conv1');
    this.cv5 = this.addModule('cv5', new ConvBN(4 * hid, c3, 1), 'conv5');
  }
  forward(b: GraphBuilder, x: string): string {
    const f0 = this.cv1.emit(b, x);
    const f1 = maxPool(b, f0, 5, 1, 2);
    const f2 = maxPool(b, f1, 5, 1, 2);
    const f3 = maxPool(b, f2, 5, 1, 2);
    return this.cv5.emit(b, concat(b, [f0, f1, f2, f3], 1));
  }
}
