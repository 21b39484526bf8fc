/**
 * Float64 convolution kernels for the reference interpreter: 2-D Conv (groups, strides, pads,
 * dilations, bias) and ConvTranspose as matrix products (matmul.ts's float64 dot products), and the
 * pooling ops as direct loops.
 */
import { array, type F64 } from './array.ts';
import { gemm, transposeBlock } from './matmul.ts';

export interface Conv2dAttrs {
  kernel: [number, number];
  strides: [number, number];
  /** [top, left, bottom, right] */
  pads: [number, number, number, number];
  dilations: [number, number];
  group: number;
}

/**
 * Conv as one matrix product per (image, group): the group's weight rows [M/g, C/g*kh*kw] times the
 * im2col patches (zeros outside the image), then the bias.
 */
export function conv2d(x: F64, w: F64, bias: F64 | undefined, a: Conv2dAttrs): F64 {
  const [n, c, h, wd] = x.dims as [number, number, number, number];
  const [m, cg, kh, kw] = w.dims as [number, number, number, number];
  const g = a.group;
  if (cg * g !== c) throw new RangeError(`Conv: input has ${c} channels, weight expects ${cg * g}`);
  const [sh, sw] = a.strides;
  const [dh, dw] = a.dilations;
  const [pt, pl, pb, pr] = a.pads;
  const oh = Math.floor((h + pt + pb - ((kh - 1) * dh + 1)) / sh) + 1;
  const ow = Math.floor((wd + pl + pr - ((kw - 1) * dw + 1)) / sw) + 1;
  const out = array([n, m, oh, ow]);
  const y = out.data;
  const mg = m / g;
  const taps = cg * kh * kw;
  const positions = oh * ow;
  const cols = new Float64Array(positions * taps);
  for (let b = 0; b < n; b++) {
    for (let grp = 0; grp < g; grp++) {
      im2col(x.data, ((b * c) + grp * cg) * h * wd, cg, h, wd, kh, kw, oh, ow, a, cols);
      gemm(w.data, grp * mg * taps, cols, y, (b * m + grp * mg) * positions, mg, taps, positions);
    }
    if (bias) for (let oc = 0; oc < m; oc++) addConst(y, (b * m + oc) * positions, positions, bias.data[oc]!);
  }
  return out;
}

/** cols[p * taps + (ic * kh + ki) * kw + kj]: the input under tap (ki, kj) of channel ic at output position p (0 in the padding). */
function im2col(x: Float64Array, base: number, cg: number, h: number, wd: number, kh: number, kw: number, oh: number, ow: number, a: Conv2dAttrs, cols: Float64Array): void {
  const [sh, sw] = a.strides;
  const [dh, dw] = a.dilations;
  const [pt, pl] = a.pads;
  const taps = cg * kh * kw;
  for (let oi = 0; oi < oh; oi++) {
    for (let oj = 0; oj < ow; oj++) {
      const row = (oi * ow + oj) * taps;
      for (let ic = 0; ic < cg; ic++) {
        const xc = base + ic * h * wd;
        for (let ki = 0; ki < kh; ki++) {
          const ii = oi * sh + ki * dh - pt;
          const t = row + (ic * kh + ki) * kw;
          if (ii < 0 || ii >= h) {
            cols.fill(0, t, t + kw);
            continue;
          }
          const xr = xc + ii * wd;
          for (let kj = 0; kj < kw; kj++) {
            const ij = oj * sw + kj * dw - pl;
            cols[t + kj] = ij >= 0 && ij < wd ? x[xr + ij]! : 0;
          }
        }
      }
    }
  }
}

/**
 * ConvTranspose as one matrix product per (image, group), input positions [H*W, C/g] times the
 * weight's [C/g, M/g*kh*kw], each product row scattered (col2im) onto the output, then the bias.
 */
export function convTranspose2d(x: F64, w: F64, bias: F64 | undefined, a: Conv2dAttrs & { outputPadding: [number, number] }): F64 {
  const [n, c, h, wd] = x.dims as [number, number, number, number];
  const [wc, mg, kh, kw] = w.dims as [number, number, number, number];
  if (wc !== c) throw new RangeError(`ConvTranspose: input has ${c} channels, weight has ${wc}`);
  const g = a.group;
  const m = mg * g;
  const cg = c / g;
  const [sh, sw] = a.strides;
  const [dh, dw] = a.dilations;
  const [pt, pl, pb, pr] = a.pads;
  const oh = sh * (h - 1) + a.outputPadding[0] + (kh - 1) * dh + 1 - pt - pb;
  const ow = sw * (wd - 1) + a.outputPadding[1] + (kw - 1) * dw + 1 - pl - pr;
  const out = array([n, m, oh, ow]);
  const y = out.data;
  const positions = h * wd;
  const taps = mg * kh * kw;
  const xt = new Float64Array(positions * cg);
  const wt = new Float64Array(taps * cg);
  const prod = new Float64Array(positions * taps);
  for (let grp = 0; grp < g; grp++) {
    transposeBlock(w.data, grp * cg * taps, cg, taps, wt);
    for (let b = 0; b < n; b++) {
      transposeBlock(x.data, (b * c + grp * cg) * positions, cg, positions, xt);
      gemm(xt, 0, wt, prod, 0, positions, cg, taps);
      const ybase = (b * m + grp * mg) * oh * ow;
      for (let ii = 0; ii < h; ii++) {
        for (let ij = 0; ij < wd; ij++) {
          const row = (ii * wd + ij) * taps;
          for (let ocg = 0; ocg < mg; ocg++) {
            for (let ki = 0; ki < kh; ki++) {
              const oi = ii * sh + ki * dh - pt;
              if (oi < 0 || oi >= oh) continue;
              const yr = ybase + (ocg * oh + oi) * ow;
              const t = row + (ocg * kh + ki) * kw;
              for (let kj = 0; kj < kw; kj++) {
                const oj = ij * sw + kj * dw - pl;
                if (oj >= 0 && oj < ow) y[yr + oj] += prod[t + kj]!;
              }
            }
          }
        }
      }
    }
  }
  if (bias) for (let b = 0; b < n; b++) for (let oc = 0; oc < m; oc++) addConst(y, (b * m + oc) * oh * ow, oh * ow, bias.data[oc]!);
  return out;
}

function addConst(y: Float64Array, base: number, len: number, v: number): void {
  for (let k = 0; k < len; k++) y[base + k] += v;
}

export interface PoolAttrs {
  kernel: [number, number];
  strides: [number, number];
  pads: [number, number, number, number];
  /** ceil_mode: a last, partial window when the stride leaves input over (it must start inside the input or left pad). */
  ceil?: boolean;
}

/** Max pooling; also returns ONNX's flat indices (row-major over the whole input). */
export function maxPool2d(x: F64, a: PoolAttrs): [F64, F64] {
  return pool(x, a, 'max');
}

export function avgPool2d(x: F64, a: PoolAttrs, countIncludePad: boolean): F64 {
  return pool(x, a, countIncludePad ? 'avg_pad' : 'avg')[0];
}

function pool(x: F64, a: PoolAttrs, mode: 'max' | 'avg' | 'avg_pad'): [F64, F64] {
  const [n, c, h, wd] = x.dims as [number, number, number, number];
  const [kh, kw] = a.kernel;
  const [sh, sw] = a.strides;
  const [pt, pl, pb, pr] = a.pads;
  const outSize = (size: number, before: number, after: number, k: number, st: number): number => {
    if (!a.ceil) return Math.floor((size + before + after - k) / st) + 1;
    const o = Math.ceil((size + before + after - k) / st) + 1;
    return (o - 1) * st >= size + before ? o - 1 : o;
  };
  const oh = outSize(h, pt, pb, kh, sh);
  const ow = outSize(wd, pl, pr, kw, sw);
  const out = array([n, c, oh, ow]);
  const idx = array([n, c, oh, ow]);
  for (let p = 0; p < n * c; p++) {
    const base = p * h * wd;
    for (let oi = 0; oi < oh; oi++) {
      for (let oj = 0; oj < ow; oj++) {
        let best = -Infinity;
        let bestAt = -1;
        let sum = 0;
        let count = 0;
        for (let ki = 0; ki < kh; ki++) {
          const ii = oi * sh + ki - pt;
          for (let kj = 0; kj < kw; kj++) {
            const ij = oj * sw + kj - pl;
            if (ii < 0 || ii >= h || ij < 0 || ij >= wd) {
              if (mode === 'avg_pad') count++;
              continue;
            }
            const v = x.data[base + ii * wd + ij]!;
            if (v > best) {
              best = v;
              bestAt = base + ii * wd + ij;
            }
            sum += v;
            count++;
          }
        }
        const o = (p * oh + oi) * ow + oj;
        out.data[o] = mode === 'max' ? best : sum / count;
        idx.data[o] = bestAt;
      }
    }
  }
  return [out, idx];
}
