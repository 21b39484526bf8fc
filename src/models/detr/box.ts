/** Box reparameterisation shared by DETR heads (cx, cy, w, h in normalised input space). */
import type { GraphBuilder } from '../../graph/builder.ts';
import { concat, slice } from '../../graph/nn.ts';

/**
 * Applies a predicted delta to reference boxes: centre = d_xy * ref_wh + ref_xy, size =
 * exp(d_wh) * ref_wh (no sigmoid, no clamp: `bbox_reparam`). Both operands `[..., 4]`, broadcasting.
 */
export function applyBoxDelta(b: GraphBuilder, delta: string, ref: string): string {
  return b.scope('reparam', () => {
    const refXy = slice(b, ref, -1, 0, 2);
    const refWh = slice(b, ref, -1, 2, 4);
    const xy = b.op('Add', [b.op('Mul', [slice(b, delta, -1, 0, 2), refWh]), refXy]);
    const wh = b.op('Mul', [b.op('Exp', [slice(b, delta, -1, 2, 4)]), refWh]);
    return concat(b, [xy, wh], -1);
  });
}
