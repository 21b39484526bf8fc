/**
 * Multi-scale deformable attention (Deformable-DETR `MSDeformAttn`) as ONNX GridSample: per head,
 * per level, bilinear samples of the projected value map at points offset from each query's
 * reference box, weighted by a softmax over (levels x points).
 *
 * Sampling follows the original: loc = ref_xy + offset / n_points * ref_wh * 0.5; grid = 2*loc - 1;
 * GridSample bilinear, zeros padding, align_corners 0 (pixel = loc * W - 0.5, outside corners add 0).
 *
 * Options cover D-FINE's variant: a point count per level (points ordered level by
 * level, one softmax over all of a head's points), the offset scale 1/P_l read from a
 * `num_points_scale` buffer (multiplied, as the original), and no value/output projection.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { i } from '../../graph/builder.ts';
import { Linear } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { concat, reshape, slice, softmax, split, transpose } from '../../graph/nn.ts';

export interface DeformableAttentionSpec {
  dModel: number;
  heads: number;
  levels: number;
  /** Points per level: one count for every level, or one per level. */
  points: number | readonly number[];
  /** `value_proj` / `output_proj` Linears around the sampling (default true; D-FINE has none). */
  projections?: boolean;
  /** Scale offsets by 1/P_l from a `num_points_scale` buffer (D-FINE) instead of dividing by P. */
  pointsScaleBuffer?: boolean;
}

export class MSDeformAttn extends Module {
  readonly samplingOffsets: Linear;
  readonly attentionWeights: Linear;
  readonly valueProj: Linear | null;
  readonly outputProj: Linear | null;
  readonly pointsPerLevel: readonly number[];
  constructor(readonly spec: DeformableAttentionSpec) {
    super();
    const { dModel, heads, levels, points } = spec;
    this.pointsPerLevel = typeof points === 'number' ? Array<number>(levels).fill(points) : points;
    if (this.pointsPerLevel.length !== levels) throw new Error(`MSDeformAttn: ${this.pointsPerLevel.length} point counts for ${levels} levels`);
    const total = this.pointsPerLevel.reduce((a, p) => a + p, 0);
    if (spec.pointsScaleBuffer) {
      const scale = this.addBuffer('num_points_scale', [total]);
      scale.value = { dtype: 'float32', dims: [total], data: Float32Array.from(this.pointsPerLevel.flatMap((p) => Array<number>(p).fill(1 / p))) };
    }
    this.samplingOffsets = this.addModule('sampling_offsets', new Linear(dModel, heads * total * 2));
    this.attentionWeights = this.addModule('attention_weights', new Linear(dModel, heads * total));
    const proj = spec.projections !== false;
    this.valueProj = proj ? this.addModule('value_proj', new Linear(dModel, dModel)) : null;
    this.outputProj = proj ? this.addModule('output_proj', new Linear(dModel, dModel)) : null;
  }

  /**
   * query `[B, Q, D]` (Q = `queries`), ref `[B, Q, 4]` (cx, cy, w, h normalised), input `[B, N, D]`
   * (levels flattened row-major, in `shapes` order); returns `[B, Q, D]`.
   */
  forward(b: GraphBuilder, query: string, ref: string, input: string, shapes: ReadonlyArray<readonly [number, number]>, queries: number): string {
    const { dModel, heads, levels } = this.spec;
    if (shapes.length !== levels) throw new Error(`MSDeformAttn: ${shapes.length} feature levels given, ${levels} expected`);
    const dh = dModel / heads;
    const perLevel = this.pointsPerLevel;
    const total = perLevel.reduce((a, p) => a + p, 0);
    const value = this.valueProj ? this.valueProj.emit(b, input) : input;
    // Output index order of both heads: head, point (level-major), xy.
    const offsets = reshape(b, this.samplingOffsets.emit(b, query), [0, 0, heads, total, 2]);
    const weights = softmax(b, reshape(b, this.attentionWeights.emit(b, query), [0, 0, heads, total]), -1);
    return b.scope('sample', () => {
      const refXy = reshape(b, slice(b, ref, -1, 0, 2), [0, 0, 1, 1, 2]);
      const refWh = reshape(b, slice(b, ref, -1, 2, 4), [0, 0, 1, 1, 2]);
      const scaled = this.spec.pointsScaleBuffer
        ? b.op('Mul', [offsets, reshape(b, this.use(b, 'num_points_scale'), [total, 1])])
        : b.op('Div', [offsets, b.scalar(perLevel[0]!, 'n_points')]);
      const step = b.op('Mul', [b.op('Mul', [scaled, refWh]), b.scalar(0.5, 'half')]);
      const grid = b.op('Sub', [b.op('Mul', [b.op('Add', [refXy, step]), b.scalar(2, 'two')]), b.scalar(1, 'one')]);
      // [B, Q, heads, sum P, 2] -> per level [B*heads, Q, P_l, 2]; value [B, N, D] -> per level [B*heads, dh, H, W].
      const gridByLevel = levels === 1 ? [grid] : split(b, grid, [...perLevel], 3);
      const valueByLevel = levels === 1 ? [value] : split(b, value, shapes.map(([h, w]) => h * w), 1);
      const samples = shapes.map(([h, w], l) => {
        const v = reshape(b, transpose(b, reshape(b, valueByLevel[l]!, [0, h * w, heads, dh]), [0, 2, 3, 1]), [-1, dh, h, w]);
        const g = reshape(b, transpose(b, gridByLevel[l]!, [0, 2, 1, 3, 4]), [-1, queries, perLevel[l]!, 2]);
        return b.op('GridSample', [v, g], { mode: { s: 'bilinear' }, padding_mode: { s: 'zeros' }, align_corners: i(0) });
      });
      // samples: [B*heads, dh, Q, P_l] per level -> [B*heads, dh, Q, sum P]
      const stacked = levels === 1 ? samples[0]! : concat(b, samples, -1);
      const w = reshape(b, transpose(b, weights, [0, 2, 1, 3]), [-1, 1, 0, total]);
      const summed = b.op('ReduceSum', [b.op('Mul', [stacked, w]), b.constant('axes', { dtype: 'int64', dims: [1], data: BigInt64Array.of(-1n) })], { keepdims: i(0) });
      // [B*heads, dh, Q] -> [B, Q, heads*dh]
      const merged = transpose(b, reshape(b, summed, [-1, heads * dh, 0]), [0, 2, 1]);
      return this.outputProj ? this.outputProj.emit(b, merged) : merged;
    });
  }
}
