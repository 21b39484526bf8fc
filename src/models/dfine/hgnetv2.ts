/**
 * HGNetv2 (keys `backbone.*`): a stem with asymmetric zero pads and a stride-1
 * max-pool branch, then stages of HG blocks (a chain of convs whose outputs are all concatenated
 * with the input, then the two-conv "se" aggregation). Light blocks split each conv into a 1x1 and
 * a depthwise k x k. The ESE module of the original is never built and has no keys.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { ints } from '../../graph/builder.ts';
import { ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { concat, int64 } from '../../graph/nn.ts';
import type { DfineConfig, HgnetSpec, StageSpec } from './config.ts';
import { HGNET } from './config.ts';
import { ConvNorm } from './conv.ts';

interface Opts {
  lab: boolean;
  frozen: boolean;
}

const cba = (o: Opts, cin: number, cout: number, k: number, stride = 1, groups = 1, act = true): ConvNorm =>
  new ConvNorm({ cin, cout, k, stride, groups, act: act ? 'relu' : null, norm: 'bn', lab: o.lab, frozen: o.frozen });

/** Zero padding of one row/column at the right and bottom (torch F.pad [0, 1, 0, 1]). */
function padRightBottom(b: GraphBuilder, x: string): string {
  return b.op('Pad', [x, b.constant('pads', int64([0, 0, 0, 0, 0, 0, 1, 1]))], { mode: { s: 'constant' } });
}

class Stem extends Module {
  readonly stem1: ConvNorm;
  readonly stem2a: ConvNorm;
  readonly stem2b: ConvNorm;
  readonly stem3: ConvNorm;
  readonly stem4: ConvNorm;
  constructor(o: Opts, [cin, mid, cout]: readonly [number, number, number]) {
    super();
    this.stem1 = this.addModule('stem1', cba(o, cin, mid, 3, 2));
    this.stem2a = this.addModule('stem2a', cba(o, mid, mid / 2, 2));
    this.stem2b = this.addModule('stem2b', cba(o, mid / 2, mid, 2));
    this.stem3 = this.addModule('stem3', cba(o, mid * 2, mid, 3, 2));
    this.stem4 = this.addModule('stem4', cba(o, mid, cout, 1));
  }
  forward(b: GraphBuilder, input: string): string {
    const x = padRightBottom(b, this.stem1.emit(b, input));
    const convBranch = this.stem2b.emit(b, padRightBottom(b, this.stem2a.emit(b, x)));
    const pooled = b.op('MaxPool', [x], { kernel_shape: ints([2, 2]), strides: ints([1, 1]), pads: ints([0, 0, 0, 0]), ceil_mode: { i: 1 } });
    return this.stem4.emit(b, this.stem3.emit(b, concat(b, [pooled, convBranch], 1)));
  }
}

/** Light block layer: 1x1 conv + BN (no act), then depthwise k x k + BN + act (+ lab). */
class LightConv extends Module {
  readonly conv1: ConvNorm;
  readonly conv2: ConvNorm;
  constructor(o: Opts, cin: number, cout: number, k: number) {
    super();
    this.conv1 = this.addModule('conv1', cba(o, cin, cout, 1, 1, 1, false));
    this.conv2 = this.addModule('conv2', cba(o, cout, cout, k, 1, cout));
  }
  forward(b: GraphBuilder, x: string): string {
    return this.conv2.emit(b, this.conv1.emit(b, x));
  }
}

class HGBlock extends Module {
  readonly layers: ModuleList<ConvNorm | LightConv>;
  readonly aggregation: ModuleList<ConvNorm>;
  constructor(o: Opts, cin: number, s: StageSpec, readonly residual: boolean) {
    super();
    this.layers = this.addModule('layers', new ModuleList(Array.from({ length: s.layers }, (_, k) =>
      s.light ? new LightConv(o, k === 0 ? cin : s.mid, s.mid, s.kernel) : cba(o, k === 0 ? cin : s.mid, s.mid, s.kernel))));
    const total = cin + s.layers * s.mid;
    this.aggregation = this.addModule('aggregation', new ModuleList([cba(o, total, s.cout / 2, 1), cba(o, s.cout / 2, s.cout, 1)]));
  }
  forward(b: GraphBuilder, x: string): string {
    const outs = [x];
    b.scope('layers', () => {
      let y = x;
      for (const l of this.layers.items) outs.push(y = l.emit(b, y));
    });
    const agg = b.scope('aggregation', () => this.aggregation.at(1).emit(b, this.aggregation.at(0).emit(b, concat(b, outs, 1))));
    return this.residual ? b.op('Add', [agg, x]) : agg;
  }
}

class HGStage extends Module {
  readonly downsample: ConvNorm | null;
  readonly blocks: ModuleList<HGBlock>;
  constructor(o: Opts, s: StageSpec) {
    super();
    this.downsample = s.downsample ? this.addModule('downsample', cba(o, s.cin, s.cin, 3, 2, s.cin, false)) : null;
    this.blocks = this.addModule('blocks', new ModuleList(Array.from({ length: s.blocks }, (_, j) => new HGBlock(o, j === 0 ? s.cin : s.cout, s, j > 0))));
  }
  forward(b: GraphBuilder, x: string): string {
    let y = this.downsample ? this.downsample.emit(b, x) : x;
    b.scope('blocks', () => { for (const blk of this.blocks.items) y = blk.emit(b, y); });
    return y;
  }
}

export class HGNetv2 extends Module {
  readonly spec: HgnetSpec;
  readonly stem: Stem;
  readonly stages: ModuleList<HGStage>;
  constructor(readonly cfg: DfineConfig) {
    super();
    this.spec = HGNET[cfg.backbone];
    const o: Opts = { lab: cfg.useLab, frozen: cfg.freezeNorm };
    this.stem = this.addModule('stem', new Stem(o, this.spec.stem));
    this.stages = this.addModule('stages', new ModuleList(this.spec.stages.map((s) => new HGStage(o, s))));
  }
  /** The maps of the stages in `return_idx`. */
  forward(b: GraphBuilder, x: string): string[] {
    let y = this.stem.emit(b, x);
    const outs: string[] = [];
    b.scope('stages', () => this.stages.items.forEach((s, k) => {
      y = s.emit(b, y);
      if (this.cfg.returnIdx.includes(k)) outs.push(y);
    }));
    return outs;
  }
  outChannels(): number[] {
    return this.cfg.returnIdx.map((k) => this.spec.stages[k]!.cout);
  }
}
