/**
 * GridSample (4-D, bilinear, zeros padding, either align_corners) gradient in plain ONNX ops.
 * Each output sample reads four corners (y0|y1, x0|x1) with weights (1-fy|fy)(1-fx|fx); a corner
 * outside the map reads 0, so its weight is masked and its index clamped to a harmless cell; a NaN
 * coordinate counts as outside.
 * The input is viewed as rows [N*H*W, C] (channels contiguous), so one index per corner moves a
 * whole channel row:
 * - input gradient: ScatterND(reduction='add') of g * weight into the zero rows (duplicate corners
 *   accumulate);
 * - grid gradient: GatherND of the corner rows, dotted with g over channels, then
 *   d/dpx = (v01 - v00)(1 - fy) + (v11 - v10) fy (and likewise in y), times dpx/dgx.
 */
import { i, s } from '../builder.ts';
import { attrInt } from '../ir.ts';
import { int64 } from '../nn.ts';
import { dims, gOnly, type VjpRule } from './context.ts';
import { reduceSum, reshapeTo, transpose, zerosOf } from './emit.ts';

const attrString = (attrs: Record<string, unknown>, key: string, fallback: string): string => {
  const a = attrs[key] as { s?: string } | undefined;
  return a?.s ?? fallback;
};

export const gridSampleRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const [x, grid] = node.inputs as [string, string];
  const xd = dims(ctx, x);
  if (xd.length !== 4) throw new Error(`autodiff: GridSample ${node.name}: only 4-D inputs are supported`);
  const mode = attrString(node.attrs, 'mode', 'bilinear');
  const padding = attrString(node.attrs, 'padding_mode', 'zeros');
  if ((mode !== 'bilinear' && mode !== 'linear') || padding !== 'zeros') throw new Error(`autodiff: GridSample ${node.name}: only bilinear sampling with zeros padding is supported (got ${mode}, ${padding})`);
  const align = attrInt(node, 'align_corners', 0) === 1;
  const [n, c, h, w] = xd as [number, number, number, number];
  const [, ho, wo] = dims(ctx, grid) as [number, number, number, number];
  const p = ho * wo;
  const g = gOnly(ctx);
  const f = (v: number, hint: string): string => b.scalar(v, hint);
  const one = f(1, 'one');

  // Pixel coordinates: px = gx * sx + (W - 1) / 2 with sx = W/2 (or (W-1)/2 with align_corners).
  const sx = align ? (w - 1) / 2 : w / 2;
  const sy = align ? (h - 1) / 2 : h / 2;
  const [gx, gy] = b.opMulti('Split', [reshapeTo(b, grid, [n, p, 2]), b.constant('split', int64([1, 1]))], 2, { axis: i(2) }) as [string, string];
  // A NaN coordinate (a diverged forward) samples nothing, as in torch's backward: moved off the
  // map, every corner is masked instead of its NaN reaching the int64 cell index.
  const offMap = (v: string): string => b.op('Where', [b.op('IsNaN', [v]), f(-2, 'off_map'), v]);
  const px = offMap(b.op('Add', [b.op('Mul', [gx, f(sx, 'sx')]), f((w - 1) / 2, 'ox')]));
  const py = offMap(b.op('Add', [b.op('Mul', [gy, f(sy, 'sy')]), f((h - 1) / 2, 'oy')]));
  const x0 = b.op('Floor', [px]);
  const y0 = b.op('Floor', [py]);
  const fx = b.op('Sub', [px, x0]);
  const fy = b.op('Sub', [py, y0]);
  const x1 = b.op('Add', [x0, one]);
  const y1 = b.op('Add', [y0, one]);
  const gfx = b.op('Sub', [one, fx]);
  const gfy = b.op('Sub', [one, fy]);

  const inside = (v: string, size: number): string => b.op('And', [b.op('GreaterOrEqual', [v, f(0, 'zero')]), b.op('LessOrEqual', [v, f(size - 1, 'last')])]);
  const clamp = (v: string, size: number): string => b.op('Clip', [v, f(0, 'zero'), f(size - 1, 'last')]);
  const corners = [[y0, x0, gfy, gfx], [y0, x1, gfy, fx], [y1, x0, fy, gfx], [y1, x1, fy, fx]] as const;
  const valid: string[] = [];
  const weight: string[] = [];
  const cell: string[] = [];
  for (const [yk, xk, wy, wx] of corners) {
    const ok = b.op('Cast', [b.op('And', [inside(xk, w), inside(yk, h)])], { to: i(1) });
    valid.push(ok);
    weight.push(b.op('Mul', [b.op('Mul', [wy, wx]), ok]));
    cell.push(b.op('Add', [b.op('Mul', [clamp(yk, h), f(w, 'width')]), clamp(xk, w)]));
  }
  // [N, 4P] corner-major per image; row = n*H*W + y*W + x (int64 before the batch offset, so no float32 limit).
  const cat = (parts: string[]): string => b.op('Concat', parts, { axis: i(1) });
  const offsets = b.constant('batch_rows', int64(Array.from({ length: n }, (_, k) => k * h * w), [n, 1, 1]));
  const rows = reshapeTo(b, b.op('Add', [b.op('Cast', [cat(cell)], { to: i(7) }), offsets]), [n * 4 * p, 1]);
  const gRows = b.op('Unsqueeze', [reshapeTo(b, transpose(b, g, [0, 2, 3, 1]), [n, p, c]), b.constant('axes', int64([1]))]); // [N, 1, P, C]

  // Input gradient.
  const updates = reshapeTo(b, b.op('Mul', [gRows, reshapeTo(b, cat(weight), [n, 4, p, 1])]), [n * 4 * p, c]);
  const scattered = b.op('ScatterND', [zerosOf(b, [n * h * w, c]), rows, updates], { reduction: s('add') });
  const dx = transpose(b, reshapeTo(b, scattered, [n, h, w, c]), [0, 3, 1, 2]);

  // Grid gradient: per corner, the channel dot product of g with the corner's values (0 outside).
  const xRows = reshapeTo(b, transpose(b, x, [0, 2, 3, 1]), [n * h * w, c]);
  const values = reshapeTo(b, b.op('GatherND', [xRows, rows]), [n, 4, p, c]);
  const dots = b.op('Mul', [reduceSum(b, b.op('Mul', [values, gRows]), [3], false), reshapeTo(b, cat(valid), [n, 4, p])]);
  const [d00, d01, d10, d11] = b.opMulti('Split', [dots, b.constant('split', int64([1, 1, 1, 1]))], 4, { axis: i(1) }) as [string, string, string, string];
  const flat = (v: string): string => reshapeTo(b, v, [n, 1, p]);
  const lerp = (lo: string, hi: string, t: string): string => b.op('Add', [b.op('Mul', [lo, b.op('Sub', [one, t])]), b.op('Mul', [hi, t])]);
  const dpx = lerp(b.op('Sub', [d01, d00]), b.op('Sub', [d11, d10]), flat(fy));
  const dpy = lerp(b.op('Sub', [d10, d00]), b.op('Sub', [d11, d01]), flat(fx));
  const dGrid = b.op('Concat', [reshapeTo(b, b.op('Mul', [dpx, f(sx, 'sx')]), [n, p, 1]), reshapeTo(b, b.op('Mul', [dpy, f(sy, 'sy')]), [n, p, 1])], { axis: i(2) });
  return [dx, reshapeTo(b, dGrid, [n, ho, wo, 2])];
};
