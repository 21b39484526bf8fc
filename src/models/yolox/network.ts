/**
 * The YOLOX detection network: CSPDarknet backbone, PAFPN neck and the decoupled
 * head, emitting `images [B,3,H,W]` (BGR 0..255) -> `output [B,N,5+nc]` = cx, cy, w, h in input
 * pixels, objectness and class probabilities: the original's export layout, decoded in-graph.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { i, ints } from '../../graph/builder.ts';
import { Module } from '../../graph/module.ts';
import { concat, float32, int64, reshape, split, upsample2x } from '../../graph/nn.ts';
import type { DetectionNetwork, InferenceEmitOptions } from '../registry.ts';
import { BaseConv, conv3x3, CSPLayer, Focus, Sequential, SPPBottleneck, type Unary } from './blocks.ts';
import { YOLOX_CONFIGS, YOLOX_STRIDES, yoloxDims, type YoloxSize } from './config.ts';
import { Conv2d } from '../yolo9/blocks.ts';

class ModuleList extends Module {
  add<M extends Module>(name: string, m: M): M {
    return this.addModule(name, m);
  }
}

/** CSPDarknet: stem (Focus) and dark2..dark5; returns the stride 8, 16 and 32 maps. */
export class CSPDarknet extends Module {
  readonly stem: Focus;
  readonly dark: Sequential[];
  constructor(size: YoloxSize) {
    super();
    const { c, d } = yoloxDims(size);
    const dw = YOLOX_CONFIGS[size].depthwise;
    this.stem = this.addModule('stem', new Focus(3, c));
    const stage = (cin: number, n: number): Sequential => new Sequential(conv3x3(dw, cin, 2 * cin, 2), new CSPLayer(2 * cin, 2 * cin, n, true, dw));
    this.dark = [
      this.addModule('dark2', stage(c, d)),
      this.addModule('dark3', stage(2 * c, 3 * d)),
      this.addModule('dark4', stage(4 * c, 3 * d)),
      this.addModule('dark5', new Sequential(conv3x3(dw, 8 * c, 16 * c, 2), new SPPBottleneck(16 * c, 16 * c), new CSPLayer(16 * c, 16 * c, d, false, dw))),
    ];
  }
  forward(b: GraphBuilder, x: string): [string, string, string] {
    const y2 = this.dark[0]!.emit(b, this.stem.emit(b, x));
    const x2 = this.dark[1]!.emit(b, y2);
    const x1 = this.dark[2]!.emit(b, x2);
    return [x2, x1, this.dark[3]!.emit(b, x1)];
  }
}

/** PAFPN over CSPDarknet (the original's `backbone` module); returns pan_out2, pan_out1, pan_out0. */
export class YOLOPAFPN extends Module {
  readonly backbone: CSPDarknet;
  readonly lateralConv0: BaseConv;
  readonly c3P4: CSPLayer;
  readonly reduceConv1: BaseConv;
  readonly c3P3: CSPLayer;
  readonly buConv2: Unary;
  readonly c3N3: CSPLayer;
  readonly buConv1: Unary;
  readonly c3N4: CSPLayer;
  constructor(size: YoloxSize) {
    super();
    const { c, neck: n } = yoloxDims(size);
    const dw = YOLOX_CONFIGS[size].depthwise;
    this.backbone = this.addModule('backbone', new CSPDarknet(size));
    // Registration order is the original's state_dict order.
    this.lateralConv0 = this.addModule('lateral_conv0', new BaseConv(16 * c, 8 * c, 1));
    this.c3P4 = this.addModule('C3_p4', new CSPLayer(16 * c, 8 * c, n, false, dw));
    this.reduceConv1 = this.addModule('reduce_conv1', new BaseConv(8 * c, 4 * c, 1));
    this.c3P3 = this.addModule('C3_p3', new CSPLayer(8 * c, 4 * c, n, false, dw));
    this.buConv2 = this.addModule('bu_conv2', conv3x3(dw, 4 * c, 4 * c, 2));
    this.c3N3 = this.addModule('C3_n3', new CSPLayer(8 * c, 8 * c, n, false, dw));
    this.buConv1 = this.addModule('bu_conv1', conv3x3(dw, 8 * c, 8 * c, 2));
    this.c3N4 = this.addModule('C3_n4', new CSPLayer(16 * c, 16 * c, n, false, dw));
  }
  forward(b: GraphBuilder, x: string): [string, string, string] {
    const [x2, x1, x0] = this.backbone.emit(b, x);
    const fpnOut0 = this.lateralConv0.emit(b, x0);
    const fOut0 = this.c3P4.emit(b, concat(b, [b.scope('upsample0', () => upsample2x(b, fpnOut0)), x1], 1));
    const fpnOut1 = this.reduceConv1.emit(b, fOut0);
    const panOut2 = this.c3P3.emit(b, concat(b, [b.scope('upsample1', () => upsample2x(b, fpnOut1)), x2], 1));
    // The bottom-up path joins the lateral 1x1 outputs, not the top-down CSP outputs.
    const panOut1 = this.c3N3.emit(b, concat(b, [this.buConv2.emit(b, panOut2), fpnOut1], 1));
    const panOut0 = this.c3N4.emit(b, concat(b, [this.buConv1.emit(b, panOut1), fpnOut0], 1));
    return [panOut2, panOut1, panOut0];
  }
}

/** Raw head outputs of one level: box regression `[B,4,h,w]`, objectness and class logits. */
export interface LevelLogits {
  reg: string;
  obj: string;
  cls: string;
}

/** Decoupled head: per level a 1x1 stem, then a class branch and a box branch (reg + objectness). */
export class YOLOXHead extends Module {
  readonly stems: BaseConv[] = [];
  readonly clsConvs: Sequential[] = [];
  readonly regConvs: Sequential[] = [];
  readonly clsPreds: Conv2d[] = [];
  readonly regPreds: Conv2d[] = [];
  readonly objPreds: Conv2d[] = [];
  constructor(readonly nc: number, inputs: readonly number[], hidden: number, depthwise: boolean) {
    super();
    const lists = ['cls_convs', 'reg_convs', 'cls_preds', 'reg_preds', 'obj_preds', 'stems'].map((name) => [name, new ModuleList()] as const);
    const list = Object.fromEntries(lists);
    inputs.forEach((cin, k) => {
      const key = String(k);
      this.clsConvs.push(list.cls_convs!.add(key, new Sequential(conv3x3(depthwise, hidden, hidden), conv3x3(depthwise, hidden, hidden))));
      this.regConvs.push(list.reg_convs!.add(key, new Sequential(conv3x3(depthwise, hidden, hidden), conv3x3(depthwise, hidden, hidden))));
      this.clsPreds.push(list.cls_preds!.add(key, new Conv2d(hidden, nc, 1)));
      this.regPreds.push(list.reg_preds!.add(key, new Conv2d(hidden, 4, 1)));
      this.objPreds.push(list.obj_preds!.add(key, new Conv2d(hidden, 1, 1)));
      this.stems.push(list.stems!.add(key, new BaseConv(cin, hidden, 1)));
    });
    // Children in the original's registration order (stems last), so saved state_dicts match it key for key.
    for (const [name, m] of lists) this.addModule(name, m);
  }

  /** Per level, the raw regression, objectness and class logits (training consumes these). */
  logits(b: GraphBuilder, feats: readonly string[]): LevelLogits[] {
    return feats.map((x, k) => b.scope(`level${k}`, () => {
      const s = this.stems[k]!.emit(b, x);
      const clsFeat = this.clsConvs[k]!.emit(b, s);
      const regFeat = this.regConvs[k]!.emit(b, s);
      return { reg: this.regPreds[k]!.emit(b, regFeat), obj: this.objPreds[k]!.emit(b, regFeat), cls: this.clsPreds[k]!.emit(b, clsFeat) };
    }));
  }

  /** Eval-mode level maps `[B, 5+nc, h, w]` = cat[reg (raw), sigmoid(obj), sigmoid(cls)]. */
  forward(b: GraphBuilder, feats: readonly string[]): string[] {
    return this.logits(b, feats).map((l, k) => b.scope(`level${k}`, () =>
      concat(b, [l.reg, b.op('Sigmoid', [l.obj]), b.op('Sigmoid', [l.cls])], 1)));
  }
}

export interface YoloxOptions {
  size: YoloxSize;
  nc: number;
}

export class YoloxNetwork extends Module implements DetectionNetwork {
  readonly backbone: YOLOPAFPN;
  readonly head: YOLOXHead;
  training?: boolean;
  constructor(readonly options: YoloxOptions) {
    super();
    const { levels, hidden } = yoloxDims(options.size);
    this.backbone = this.addModule('backbone', new YOLOPAFPN(options.size));
    this.head = this.addModule('head', new YOLOXHead(options.nc, levels, hidden, YOLOX_CONFIGS[options.size].depthwise));
    this.assignPaths();
  }

  get nc(): number {
    return this.options.nc;
  }

  /** PAFPN outputs for strides 8, 16, 32. */
  features(b: GraphBuilder, images: string): [string, string, string] {
    return this.backbone.emit(b, images);
  }

  /** Builds the inference graph (BatchNorm still explicit: the session path folds it). */
  emitInference(b: GraphBuilder, opts: InferenceEmitOptions): void {
    const nc = this.nc;
    const batch = opts.batch ?? 'batch';
    const images = b.input('images', 'float32', [batch, 3, opts.height ?? 'height', opts.width ?? 'width']);
    const levels = this.head.emit(b, this.features(b, images));
    const out = b.scope('head', () => b.scope('decode', () => decodeLevels(b, levels, nc, opts)));
    const anchors = opts.height && opts.width ? YOLOX_STRIDES.reduce((a, s) => a + (opts.height! / s) * (opts.width! / s), 0) : 'anchors';
    b.output('output', out, 'float32', [batch, anchors, 5 + nc]);
    if (opts.rawOutputs) {
      levels.forEach((v, k) => {
        const s = YOLOX_STRIDES[k]!;
        b.output(`raw_level${k}`, v, 'float32', [batch, 5 + nc, opts.height ? opts.height / s : `h${k}`, opts.width ? opts.width / s : `w${k}`]);
      });
    }
  }
}

/**
 * Integer cell indices `[1,N,2]` (x, y; no 0.5 offset) and strides `[1,N,1]` of the anchors, level by
 * level, row-major: constants for a static input, shape arithmetic for free spatial dims.
 */
function anchorGrid(b: GraphBuilder, levels: readonly string[], opts: InferenceEmitOptions): { grid: string; strides: string } {
  if (opts.height && opts.width) {
    const xy: number[] = [];
    const st: number[] = [];
    for (const s of YOLOX_STRIDES) {
      const h = opts.height / s;
      const w = opts.width / s;
      for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
        xy.push(x, y);
        st.push(s);
      }
    }
    return { grid: b.constant('grid', float32(xy, [1, st.length, 2])), strides: b.constant('strides', float32(st, [1, st.length, 1])) };
  }
  const grids: string[] = [];
  const strides: string[] = [];
  levels.forEach((lv, k) => b.scope(`grid${k}`, () => {
    const shape = b.op('Shape', [lv]);
    const dim = (axis: number): string => b.op('Gather', [shape, b.constant('idx', int64([axis], []))], { axis: i(0) });
    const [h, w] = [dim(2), dim(3)];
    const range = (n: string): string => b.op('Range', [b.scalar(0, 'zero'), b.op('Cast', [n], { to: i(1) }), b.scalar(1, 'one')]);
    const unsq = (v: string, axis: number): string => b.op('Unsqueeze', [v, b.constant('axes', int64([axis]))]);
    const hw = concat(b, [unsq(h, 0), unsq(w, 0)], 0);
    const gx = b.op('Expand', [unsq(range(w), 0), hw]);
    const gy = b.op('Expand', [unsq(range(h), 1), hw]);
    const g = reshape(b, concat(b, [unsq(gx, 2), unsq(gy, 2)], 2), [1, -1, 2]);
    grids.push(g);
    strides.push(b.op('Expand', [b.constant('stride', float32([YOLOX_STRIDES[k]!], [1, 1, 1])), b.op('Shape', [reshape(b, gx, [1, -1, 1])])]));
  }));
  return { grid: concat(b, grids, 1), strides: concat(b, strides, 1) };
}

/** `[B,N,5+nc]`: levels flattened row-major and joined by stride; xy = (reg + cell) * s, wh = exp(reg) * s. */
export function decodeLevels(b: GraphBuilder, levels: readonly string[], nc: number, opts: InferenceEmitOptions): string {
  const flat = concat(b, levels.map((lv) => b.op('Transpose', [reshape(b, lv, [0, 5 + nc, -1])], { perm: ints([0, 2, 1]) })), 1);
  const [xy, wh, scores] = split(b, flat, [2, 2, 1 + nc], 2) as [string, string, string];
  const { grid, strides } = anchorGrid(b, levels, opts);
  const centres = b.op('Mul', [b.op('Add', [xy, grid]), strides]);
  const sizes = b.op('Mul', [b.op('Exp', [wh]), strides]);
  return concat(b, [centres, sizes, scores], 2);
}
