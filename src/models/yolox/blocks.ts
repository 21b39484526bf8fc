/**
 * YOLOX building blocks (yolox.md 2.1) as emitting modules; child names are the original's
 * state_dict names. BaseConv is the shared Conv(no bias) + BatchNorm(eps 1e-3) + SiLU module.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { Module } from '../../graph/module.ts';
import { concat, int64, maxPool } from '../../graph/nn.ts';
import { ConvBN as BaseConv, Sequential } from '../yolo9/blocks.ts';

export { BaseConv, Sequential };

export type Unary = Module & { forward(b: GraphBuilder, x: string): string };

/** Depthwise k x k conv (carrying the stride) then a pointwise 1x1 conv, both BN + SiLU. */
export class DWConv extends Module {
  readonly dconv: BaseConv;
  readonly pconv: BaseConv;
  constructor(cin: number, cout: number, k: number, stride = 1) {
    super();
    this.dconv = this.addModule('dconv', new BaseConv(cin, cin, k, stride, cin));
    this.pconv = this.addModule('pconv', new BaseConv(cin, cout, 1));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.pconv.emit(b, this.dconv.emit(b, x));
  }
}

/** The 3x3 "Conv" of a size: depthwise-separable for nano, a plain BaseConv otherwise. */
export function conv3x3(depthwise: boolean, cin: number, cout: number, stride = 1): Unary {
  return depthwise ? new DWConv(cin, cout, 3, stride) : new BaseConv(cin, cout, 3, stride);
}

/** 1x1 -> 3x3, plus the input when `shortcut` and the widths agree. */
export class Bottleneck extends Module {
  readonly conv1: BaseConv;
  readonly conv2: Unary;
  readonly residual: boolean;
  constructor(cin: number, cout: number, shortcut: boolean, depthwise: boolean) {
    super();
    this.conv1 = this.addModule('conv1', new BaseConv(cin, cout, 1));
    this.conv2 = this.addModule('conv2', conv3x3(depthwise, cout, cout));
    this.residual = shortcut && cin === cout;
  }
  forward(b: GraphBuilder, x: string): string {
    const y = this.conv2.emit(b, this.conv1.emit(b, x));
    return this.residual ? b.op('Add', [y, x]) : y;
  }
}

/** CSP: conv3(cat[m(conv1(x)), conv2(x)]) with hidden width int(cout / 2); bottleneck branch first. */
export class CSPLayer extends Module {
  readonly conv1: BaseConv;
  readonly conv2: BaseConv;
  readonly conv3: BaseConv;
  readonly m: Sequential;
  constructor(cin: number, cout: number, n: number, shortcut: boolean, depthwise: boolean) {
    super();
    const h = Math.trunc(cout * 0.5);
    this.conv1 = this.addModule('conv1', new BaseConv(cin, h, 1));
    this.conv2 = this.addModule('conv2', new BaseConv(cin, h, 1));
    this.conv3 = this.addModule('conv3', new BaseConv(2 * h, cout, 1));
    this.m = this.addModule('m', new Sequential(...Array.from({ length: n }, () => new Bottleneck(h, h, shortcut, depthwise))));
  }
  forward(b: GraphBuilder, x: string): string {
    const a = this.m.emit(b, this.conv1.emit(b, x));
    return this.conv3.emit(b, concat(b, [a, this.conv2.emit(b, x)], 1));
  }
}

/** SPP: 1x1 to cin/2, then max-pools 5, 9 and 13 side by side on the same map (not chained), 1x1 out. */
export class SPPBottleneck extends Module {
  readonly conv1: BaseConv;
  readonly conv2: BaseConv;
  constructor(cin: number, cout: number) {
    super();
    const h = Math.trunc(cin / 2);
    this.conv1 = this.addModule('conv1', new BaseConv(cin, h, 1));
    this.conv2 = this.addModule('conv2', new BaseConv(4 * h, cout, 1));
  }
  forward(b: GraphBuilder, x: string): string {
    const y = this.conv1.emit(b, x);
    const pools = [5, 9, 13].map((k, j) => b.scope(`m.${j}`, () => maxPool(b, y, k, 1, k >> 1)));
    return this.conv2.emit(b, concat(b, [y, ...pools], 1));
  }
}

/**
 * Focus: space-to-depth then a 3x3 BaseConv(12 -> c). The 12 channels are the (row, col) parity
 * blocks in the order (even, even), (odd, even), (even, odd), (odd, odd), each keeping B, G, R:
 * not ONNX SpaceToDepth's order, so the blocks are sliced explicitly.
 */
export class Focus extends Module {
  readonly conv: BaseConv;
  constructor(cin: number, cout: number) {
    super();
    this.conv = this.addModule('conv', new BaseConv(4 * cin, cout, 3));
  }
  forward(b: GraphBuilder, x: string): string {
    const big = 2 ** 62;
    const block = (row: number, col: number): string =>
      b.op('Slice', [x, b.constant('starts', int64([row, col])), b.constant('ends', int64([big, big])), b.constant('axes', int64([2, 3])), b.constant('steps', int64([2, 2]))]);
    return this.conv.emit(b, concat(b, [block(0, 0), block(1, 0), block(0, 1), block(1, 1)], 1));
  }
}
