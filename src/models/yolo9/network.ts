/**
 * The YOLOv9 detection network: backbone, neck and DDetect head, emitting an
 * inference graph `images [B,3,H,W] -> output [B,4+nc,A]` with DFL, anchors and strides in-graph.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { i } from '../../graph/builder.ts';
import { Module } from '../../graph/module.ts';
import { concat, float32, int64, reshape, split, upsample2x } from '../../graph/nn.ts';
import { ADown, AConv, Conv2d, ConvBN, ELAN, RepNCSPELAN, SPPELAN, Sequential } from './blocks.ts';
import { REG_MAX, YOLO9_CONFIGS, YOLO9_STRIDES, type Yolo9Size } from './config.ts';

type Unary = Module & { forward(b: GraphBuilder, x: string): string };

function down(kind: 'aconv' | 'adown', c1: number, c2: number): Unary {
  return kind === 'aconv' ? new AConv(c1, c2) : new ADown(c1, c2);
}

class Backbone extends Module {
  readonly layers: Record<string, Unary> = {};
  constructor(size: Yolo9Size) {
    super();
    const c = YOLO9_CONFIGS[size];
    const add = (name: string, m: Unary): void => {
      this.layers[name] = this.addModule(name, m);
    };
    add('conv0', new ConvBN(3, c.stem[0], 3, 2));
    add('conv1', new ConvBN(c.stem[0], c.stem[1], 3, 2));
    const [e0, e1, e2, e3] = c.elan1.channels;
    add('elan1', c.elan1.kind === 'elan' ? new ELAN(e0, e1, e2, e3) : new RepNCSPELAN(e0, e1, e2, e3, c.repeats));
    c.stages.forEach((st, k) => {
      add(`down${k + 2}`, down(c.downKind, st.down[0], st.down[1]));
      add(`elan${k + 2}`, new RepNCSPELAN(...st.rne, c.repeats));
    });
    add('spp', new SPPELAN(...c.spp));
  }
  /** Returns [B3, B4, P5'] (after SPPELAN). */
  forward(b: GraphBuilder, x: string): [string, string, string] {
    const L = this.layers;
    let y = L.conv0!.emit(b, x);
    y = L.conv1!.emit(b, y);
    y = L.elan1!.emit(b, y);
    const b3 = L.elan2!.emit(b, L.down2!.emit(b, y));
    const b4 = L.elan3!.emit(b, L.down3!.emit(b, b3));
    const b5 = L.elan4!.emit(b, L.down4!.emit(b, b4));
    return [b3, b4, L.spp!.emit(b, b5)];
  }
}

class Neck extends Module {
  readonly elanUp1: RepNCSPELAN;
  readonly elanUp2: RepNCSPELAN;
  readonly down1: Unary;
  readonly elanDown1: RepNCSPELAN;
  readonly down2: Unary;
  readonly elanDown2: RepNCSPELAN;
  constructor(size: Yolo9Size) {
    super();
    const c = YOLO9_CONFIGS[size];
    const n = c.neck;
    this.elanUp1 = this.addModule('elan_up1', new RepNCSPELAN(...n.elanUp1, c.repeats));
    this.elanUp2 = this.addModule('elan_up2', new RepNCSPELAN(...n.elanUp2, c.repeats));
    this.down1 = this.addModule('down1', down(c.downKind, ...n.down1));
    this.elanDown1 = this.addModule('elan_down1', new RepNCSPELAN(...n.elanDown1, c.repeats));
    this.down2 = this.addModule('down2', down(c.downKind, ...n.down2));
    this.elanDown2 = this.addModule('elan_down2', new RepNCSPELAN(...n.elanDown2, c.repeats));
  }
  forward(b: GraphBuilder, b3: string, b4: string, p5: string): [string, string, string] {
    const n4 = this.elanUp1.emit(b, concat(b, [b.scope('up1', () => upsample2x(b, p5)), b4], 1));
    const p3 = this.elanUp2.emit(b, concat(b, [b.scope('up2', () => upsample2x(b, n4)), b3], 1));
    const p4 = this.elanDown1.emit(b, concat(b, [this.down1.emit(b, p3), n4], 1));
    const p5o = this.elanDown2.emit(b, concat(b, [this.down2.emit(b, p4), p5], 1));
    return [p3, p4, p5o];
  }
}

export class DDetect extends Module {
  readonly boxTowers: Sequential[] = [];
  readonly classTowers: Sequential[] = [];
  readonly boxTowersModule: Module;
  readonly classTowersModule: Module;
  readonly proto: MaskProto | null = null;
  readonly coeffTowers: Sequential[] = [];
  constructor(readonly channels: readonly number[], readonly nc: number, readonly classWidth: number, masks?: MaskHeadOptions) {
    super();
    const cb = Math.max(Math.ceil(Math.trunc(channels[0]! / 4) / 4) * 4, 4 * REG_MAX, REG_MAX);
    const boxes = new ModuleList();
    const classes = new ModuleList();
    channels.forEach((ch, k) => {
      this.boxTowers.push(boxes.add(String(k), new Sequential(new ConvBN(ch, cb, 3), new ConvBN(cb, cb, 3, 1, 4), new Conv2d(cb, 4 * REG_MAX, 1, 4))));
      this.classTowers.push(classes.add(String(k), new Sequential(new ConvBN(ch, classWidth, 3), new ConvBN(classWidth, classWidth, 3), new Conv2d(classWidth, nc, 1))));
    });
    this.boxTowersModule = this.addModule('cv2', boxes, 'anchor_convs');
    this.classTowersModule = this.addModule('cv3', classes, 'class_convs');
    if (masks) {
      // The segment head (DDetectSeg): prototypes from P3 and 32 mask coefficients per anchor.
      this.proto = this.addModule('proto', new MaskProto(channels[0]!, masks.protoChannels, masks.numMasks));
      const c4 = Math.max(Math.trunc(channels[0]! / 4), masks.numMasks);
      const towers = new ModuleList();
      channels.forEach((ch, k) => {
        this.coeffTowers.push(towers.add(String(k), new Sequential(new ConvBN(ch, c4, 3), new ConvBN(c4, c4, 3), new Conv2d(c4, masks.numMasks, 1))));
      });
      this.addModule('cv4', towers);
    }
  }

  /** `proto` `[B, nm, H/4, W/4]` and `mask_coeffs` `[B, nm, A]` (anchor order as the box output); segment heads only. */
  maskOutputs(b: GraphBuilder, feats: string[]): { proto: string; coeffs: string } {
    const proto = this.proto;
    if (!proto) throw new Error('maskOutputs: this head has no mask branch');
    return {
      proto: b.scope('proto', () => proto.emit(b, feats[0]!)),
      coeffs: b.scope('cv4', () => concat(b, feats.map((x, k) => reshape(b, this.coeffTowers[k]!.emit(b, x), [0, proto.numMasks, -1])), 2)),
    };
  }

  /** Per-level raw maps `[B, 64+nc, H, W]` (box distribution logits, then class logits). */
  forward(b: GraphBuilder, feats: string[]): string[] {
    return feats.map((x, k) =>
      b.scope(`level${k}`, () => concat(b, [
        b.scope('cv2', () => this.boxTowers[k]!.emit(b, x)),
        b.scope('cv3', () => this.classTowers[k]!.emit(b, x)),
      ], 1)),
    );
  }
}

/** Prototype masks from P3: conv 3x3, nearest x2, conv 3x3, conv 1x1 to `numMasks` (all Conv+BN+SiLU). */
class MaskProto extends Module {
  readonly cv1: ConvBN;
  readonly cv2: ConvBN;
  readonly cv3: ConvBN;
  constructor(cin: number, hidden: number, readonly numMasks: number) {
    super();
    this.cv1 = this.addModule('cv1', new ConvBN(cin, hidden, 3));
    this.cv2 = this.addModule('cv2', new ConvBN(hidden, hidden, 3));
    this.cv3 = this.addModule('cv3', new ConvBN(hidden, numMasks, 1));
  }
  forward(b: GraphBuilder, x: string): string {
    const up = b.scope('upsample', () => upsample2x(b, this.cv1.emit(b, x)));
    return this.cv3.emit(b, this.cv2.emit(b, up));
  }
}

class ModuleList extends Module {
  add<M extends Module>(name: string, m: M): M {
    return this.addModule(name, m);
  }
}

/** The segment head's sizes: prototypes / coefficients (32) and the prototype hidden width (256). */
export interface MaskHeadOptions {
  numMasks: number;
  protoChannels: number;
}

export const DEFAULT_MASK_HEAD: MaskHeadOptions = { numMasks: 32, protoChannels: 256 };

export interface Yolo9Options {
  size: Yolo9Size;
  nc: number;
  /** Hidden width of the class towers (read from a checkpoint; sticky across fine-tunes). */
  classWidth: number;
  /** A segment model's mask head; absent for detection. */
  masks?: MaskHeadOptions;
}

export interface EmitOptions {
  /** Static input height/width, or null for a graph whose spatial dims are free. */
  height: number | null;
  width: number | null;
  /** Static batch, or null for a symbolic `batch` dimension. */
  batch: number | null;
  /** Also expose the per-level raw head maps as outputs `raw_level{0,1,2}`. */
  rawOutputs?: boolean;
}

export class Yolo9Network extends Module {
  readonly backbone: Backbone;
  readonly neck: Neck;
  readonly head: DDetect;
  constructor(readonly options: Yolo9Options) {
    super();
    this.backbone = this.addModule('backbone', new Backbone(options.size));
    this.neck = this.addModule('neck', new Neck(options.size));
    this.head = this.addModule('head', new DDetect(YOLO9_CONFIGS[options.size].headChannels, options.nc, options.classWidth, options.masks));
    this.assignPaths();
  }

  get nc(): number {
    return this.options.nc;
  }

  forward(b: GraphBuilder, x: string): string[] {
    return this.head.emit(b, this.features(b, x));
  }

  /** The neck outputs P3, P4, P5 the head reads. */
  features(b: GraphBuilder, x: string): string[] {
    const [b3, b4, p5] = this.backbone.emit(b, x);
    return this.neck.emit(b, b3, b4, p5);
  }

  /** Builds the whole inference graph (BatchNorm still explicit: run foldBatchNorm for speed). */
  emitInference(b: GraphBuilder, opts: EmitOptions): void {
    this.emitGraph(b, opts, 'output');
  }

  /** The exported graph: a segment model's outputs are named `predictions`, `proto`, `mask_coeffs`, as the original's. */
  emitExport(b: GraphBuilder, opts: EmitOptions): void {
    this.emitGraph(b, opts, this.head.proto ? 'predictions' : 'output');
  }

  private emitGraph(b: GraphBuilder, opts: EmitOptions, boxOutput: string): void {
    const nc = this.nc;
    const images = b.input('images', 'float32', [opts.batch ?? 'batch', 3, opts.height ?? 'height', opts.width ?? 'width']);
    const feats = this.features(b, images);
    // The mask branch reads the neck outputs before the detection towers, as the original's head.
    const masks = this.head.proto ? b.scope('head', () => this.head.maskOutputs(b, feats)) : null;
    const levels = this.head.emit(b, feats);
    const out = b.scope('head', () => b.scope('decode', () => decode(b, levels, nc, opts)));
    const anchors = opts.height && opts.width ? YOLO9_STRIDES.reduce((a, s) => a + (opts.height! / s) * (opts.width! / s), 0) : 'anchors';
    const batch = opts.batch ?? 'batch';
    b.output(boxOutput, out, 'float32', [batch, 4 + nc, anchors]);
    if (masks) {
      const nm = this.head.proto!.numMasks;
      b.output('proto', masks.proto, 'float32', [batch, nm, opts.height ? opts.height / 4 : 'mask_height', opts.width ? opts.width / 4 : 'mask_width']);
      b.output('mask_coeffs', masks.coeffs, 'float32', [batch, nm, anchors]);
    }
    if (opts.rawOutputs) {
      levels.forEach((v, k) => {
        const s = YOLO9_STRIDES[k]!;
        b.output(`raw_level${k}`, v, 'float32', [opts.batch ?? 'batch', 4 * REG_MAX + nc, opts.height ? opts.height / s : `h${k}`, opts.width ? opts.width / s : `w${k}`]);
      });
    }
  }
}

/** Anchor centres `[1,2,A]` and strides `[1,1,A]`, as constants for static shapes or in-graph ops. */
function anchorGrid(b: GraphBuilder, levels: string[], opts: EmitOptions): { anchors: string; strides: string } {
  if (opts.height && opts.width) {
    const pts: number[][] = [[], []];
    const st: number[] = [];
    for (const s of YOLO9_STRIDES) {
      const h = opts.height / s;
      const w = opts.width / s;
      for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
        pts[0]!.push(x + 0.5);
        pts[1]!.push(y + 0.5);
        st.push(s);
      }
    }
    const a = st.length;
    return { anchors: b.constant('anchors', float32([...pts[0]!, ...pts[1]!], [1, 2, a])), strides: b.constant('strides', float32(st, [1, 1, a])) };
  }
  // Dynamic spatial size: derive each level's grid from its feature-map shape.
  const anchorParts: string[] = [];
  const strideParts: string[] = [];
  levels.forEach((lv, k) => b.scope(`grid${k}`, () => {
    const shape = b.op('Shape', [lv]);
    const h = b.op('Gather', [shape, b.constant('idx', int64([2], []))], { axis: i(0) });
    const w = b.op('Gather', [shape, b.constant('idx', int64([3], []))], { axis: i(0) });
    const zero = b.constant('zero', float32([0], []));
    const one = b.constant('one', float32([1], []));
    const half = b.constant('half', float32([0.5], []));
    const ys = b.op('Add', [b.op('Range', [zero, b.op('Cast', [h], { to: i(1) }), one]), half]);
    const xs = b.op('Add', [b.op('Range', [zero, b.op('Cast', [w], { to: i(1) }), one]), half]);
    const hw = b.op('Concat', [b.op('Unsqueeze', [h, b.constant('axes', int64([0]))]), b.op('Unsqueeze', [w, b.constant('axes', int64([0]))])], { axis: i(0) });
    const gx = b.op('Expand', [b.op('Unsqueeze', [xs, b.constant('axes', int64([0]))]), hw]);
    const gy = b.op('Expand', [b.op('Unsqueeze', [ys, b.constant('axes', int64([1]))]), hw]);
    const flat = (v: string): string => reshape(b, v, [1, 1, -1]);
    const fx = flat(gx);
    anchorParts.push(concat(b, [fx, flat(gy)], 1));
    strideParts.push(b.op('Expand', [b.constant('stride', float32([YOLO9_STRIDES[k]!], [1, 1, 1])), b.op('Shape', [fx])]));
  }));
  return { anchors: concat(b, anchorParts, 2), strides: concat(b, strideParts, 2) };
}

/** DFL expectation + dist2bbox + sigmoid scores: `[B, 4+nc, A]`. */
function decode(b: GraphBuilder, levels: string[], nc: number, opts: EmitOptions): string {
  const flat = concat(b, levels.map((lv) => reshape(b, lv, [0, 4 * REG_MAX + nc, -1])), 2);
  const [box, cls] = split(b, flat, [4 * REG_MAX, nc], 1) as [string, string];
  const dist = b.scope('dfl', () => {
    const prob = b.op('Softmax', [reshape(b, box, [0, 4, REG_MAX, -1])], { axis: i(2) });
    const bins = b.constant('bins', float32(Array.from({ length: REG_MAX }, (_, k) => k), [1, 1, REG_MAX, 1]));
    return b.op('ReduceSum', [b.op('Mul', [prob, bins]), b.constant('axes', int64([2]))], { keepdims: i(0) });
  });
  const { anchors, strides } = anchorGrid(b, levels, opts);
  const [lt, rb] = split(b, dist, [2, 2], 1) as [string, string];
  const x1y1 = b.op('Mul', [b.op('Sub', [anchors, lt]), strides]);
  const x2y2 = b.op('Mul', [b.op('Add', [anchors, rb]), strides]);
  return concat(b, [x1y1, x2y2, b.op('Sigmoid', [cls])], 1);
}

