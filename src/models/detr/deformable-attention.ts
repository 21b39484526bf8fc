/**
 * Multi-scale deformable attention (Deformable-DETR `MSDeformAttn`) as ONNX GridSample: per head,
 * per level, bilinear samples of the projected value map at points offset from each query's
 * reference box, weighted by a softmax over (levels x points).
 *
 * Sampling follows the original: loc = ref_xy + offset / n_points * ref_wh * 0.5; grid = 2*loc - 1;
 * GridSample bilinear, zeros padding, align_corners 0 (pixel = loc * W - 0.5, outside corners add 0).
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
  points: number;
}

export class MSDeformAttn extends Module {
  readonly samplingOffsets: Linear;
  readonly attentionWeights: Linear;
  readonly valueProj: Linear;
  readonly outputProj: Linear;
  constructor(readonly spec: DeformableAttentionSpec) {
    super();
    const { dModel, heads, levels, points } = spec;
    this.samplingOffsets = this.addModule('sampling_offsets', new Linear(dModel, heads * levels * points * 2));
    this.attentionWeights = this.addModule('attention_weights', new Linear(dModel, heads * levels * points));
    this.valueProj = this.addModule('value_proj', new Linear(dModel, dModel));
    this.outputProj = this.addModule('output_proj', new Linear(dModel, dModel));
  }

  /**
   * query `[B, Q, D]` (Q = `queries`), ref `[B, Q, 4]` (cx, cy, w, h normalised), input `[B, N, D]`
   * (levels flattened row-major, in `shapes` order); returns `[B, Q, D]`.
   */
  forward(b: GraphBuilder, query: string, ref: string, input: string, shapes: ReadonlyArray<readonly [number, number]>, queries: number): string {
    const { dModel, heads, levels, points } = this.spec;
    if (shapes.length !== levels) throw new Error(`MSDeformAttn: ${shapes.length} feature levels given, ${levels} expected`);
    const dh = dModel / heads;
    const value = this.valueProj.emit(b, input);
    const offsets = reshape(b, this.samplingOffsets.emit(b, query), [0, 0, heads, levels, points, 2]);
    const weights = softmax(b, reshape(b, this.attentionWeights.emit(b, query), [0, 0, heads, levels * points]), -1);
    return b.scope('sample', () => {
      const refXy = reshape(b, slice(b, ref, -1, 0, 2), [0, 0, 1, 1, 1, 2]);
      const refWh = reshape(b, slice(b, ref, -1, 2, 4), [0, 0, 1, 1, 1, 2]);
      const step = b.op('Mul', [b.op('Mul', [b.op('Div', [offsets, b.scalar(points, 'n_points')]), refWh]), b.scalar(0.5, 'half')]);
      const grid = b.op('Sub', [b.op('Mul', [b.op('Add', [refXy, step]), b.scalar(2, 'two')]), b.scalar(1, 'one')]);
      // [B, Q, heads, L, P, 2] -> per level [B*heads, Q, P, 2]; value [B, N, D] -> per level [B*heads, dh, H, W].
      const gridByLevel = levels === 1 ? [grid] : split(b, grid, Array(levels).fill(1), 3);
      const valueByLevel = levels === 1 ? [value] : split(b, value, shapes.map(([h, w]) => h * w), 1);
      const samples = shapes.map(([h, w], l) => {
        const v = reshape(b, transpose(b, reshape(b, valueByLevel[l]!, [0, h * w, heads, dh]), [0, 2, 3, 1]), [-1, dh, h, w]);
        const g = reshape(b, transpose(b, reshape(b, gridByLevel[l]!, [0, 0, heads, points, 2]), [0, 2, 1, 3, 4]), [-1, queries, points, 2]);
        return b.op('GridSample', [v, g], { mode: { s: 'bilinear' }, padding_mode: { s: 'zeros' }, align_corners: i(0) });
      });
      // samples: [B*heads, dh, Q, P] per level -> [B*heads, dh, Q, L*P]
      const stacked = levels === 1 ? samples[0]! : concat(b, samples, -1);
      const w = reshape(b, transpose(b, weights, [0, 2, 1, 3]), [-1, 1, 0, levels * points]);
      const summed = b.op('ReduceSum', [b.op('Mul', [stacked, w]), b.constant('axes', { dtype: 'int64', dims: [1], data: BigInt64Array.of(-1n) })], { keepdims: i(0) });
      // [B*heads, dh, Q] -> [B, Q, heads*dh]
      const merged = transpose(b, reshape(b, summed, [-1, heads * dh, 0]), [0, 2, 1]);
      return this.outputProj.emit(b, merged);
    });
  }
}
