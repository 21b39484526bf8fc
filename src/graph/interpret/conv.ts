/**
 * Float64 convolution kernels for the reference interpreter: 2-D Conv (groups, strides, pads,
 * dilations, bias), ConvTranspose, and the pooling ops. Direct loops with the width axis innermost;
 * exactness, not speed, is the point.
 */
import { array, type F64 } from './array.ts';

export interface Conv2dAttrs {
  kernel: [number, number];
  strides: [number, number];
  /** [top, left, bottom, right] */
  pads: [number, number, number, number];
  dilations: [number, number];
  group: number;
}

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
  const xd = x.data;
  const wdat = w.data;
  const mg = m / g;
  for (let b = 0; b < n; b++) {
    for (let oc = 0; oc < m; oc++) {
      const grp = Math.floor(oc / mg);
      const ybase = (b * m + oc) * oh * ow;
      if (bias) y.fill(bias.data[oc]!, ybase, ybase + oh * ow);
      for (let icg = 0; icg < cg; icg++) {
        const ic = grp * cg + icg;
        const xbase = (b * c + ic) * h * wd;
        for (let ki = 0; ki < kh; ki++) {
          for (let kj = 0; kj < kw; kj++) {
            const wv = wdat[((oc * cg + icg) * kh + ki) * kw + kj]!;
            if (wv === 0) continue;
            // Output columns whose input column lies inside the image.
            const colOff = kj * dw - pl;
            const ojLo = Math.max(0, Math.ceil(-colOff / sw));
            const ojHi = Math.min(ow - 1, Math.floor((wd - 1 - colOff) / sw));
            for (let oi = 0; oi < oh; oi++) {
              const ii = oi * sh + ki * dh - pt;
              if (ii < 0 || ii >= h) continue;
              const xrow = xbase + ii * wd + colOff;
              const yrow = ybase + oi * ow;
              for (let oj = ojLo; oj <= ojHi; oj++) y[yrow + oj] += wv * xd[xrow + oj * sw]!;
            }
          }
        }
      }
    }
  }
  return out;
}

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
  for (let b = 0; b < n; b++) {
    for (let ic = 0; ic < c; ic++) {
      const grp = Math.floor(ic / cg);
      const xbase = (b * c + ic) * h * wd;
      for (let ocg = 0; ocg < mg; ocg++) {
        const oc = grp * mg + ocg;
        const ybase = (b * m + oc) * oh * ow;
        for (let ki = 0; ki < kh; ki++) {
          for (let kj = 0; kj < kw; kj++) {
            const wv = w.data[((ic * mg + ocg) * kh + ki) * kw + kj]!;
            if (wv === 0) continue;
            for (let ii = 0; ii < h; ii++) {
              const oi = ii * sh + ki * dh - pt;
              if (oi < 0 || oi >= oh) continue;
              for (let ij = 0; ij < wd; ij++) {
                const oj = ij * sw + kj * dw - pl;
                if (oj < 0 || oj >= ow) continue;
                y[ybase + oi * ow + oj] += wv * x.data[xbase + ii * wd + ij]!;
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
