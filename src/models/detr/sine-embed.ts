/**
 * The DETR sine embedding of normalised boxes (cx, cy, w, h) -> 4 * dim values, in the block order
 * (cy, cx, w, h); inside a block element 2j is sin(2*pi*v / T^(2j/dim)) and 2j+1 the cos of the
 * same argument (T = 10000).
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { concat, float32, int64, reshape } from '../../graph/nn.ts';

export function boxSineEmbedding(b: GraphBuilder, boxes: string, dim = 128, temperature = 10000): string {
  return b.scope('sine_embed', () => {
    const reordered = b.op('Gather', [boxes, b.constant('order', int64([1, 0, 2, 3]))], { axis: { i: -1 } });
    const scaled = b.op('Mul', [b.op('Unsqueeze', [reordered, b.constant('axes', int64([-1]))]), b.scalar(2 * Math.PI, 'two_pi')]);
    const freqs = Array.from({ length: dim / 2 }, (_, j) => temperature ** ((2 * j) / dim));
    const arg = b.op('Div', [scaled, b.constant('dim_t', float32(freqs, [dim / 2]))]);
    const unsq = (x: string): string => b.op('Unsqueeze', [x, b.constant('axes', int64([-1]))]);
    const pairs = concat(b, [unsq(b.op('Sin', [arg])), unsq(b.op('Cos', [arg]))], -1);
    return reshape(b, pairs, [0, 0, 4 * dim]);
  });
}
