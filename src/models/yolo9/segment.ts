/**
 * YOLOv9-seg postprocess: best class per anchor (no candidate cap), boxes mapped to the original
 * image, then for the kept rows sigmoid(coefficients x prototypes), zeroed outside the unclamped
 * canvas box at prototype resolution (pixel index j kept when x1 <= j < x2), resized bilinearly to
 * the canvas, cut to the letterbox content, resized to the original size, and thresholded at > 0.5.
 *
 * A pixel outside the box's neighbourhood reads only zeros through both resizes, so each mask is
 * computed on the rows and columns its box can reach and stored as runs; the result is the same
 * as resizing whole maps.
 */
import type { HostTensor } from '../../graph/tensor.ts';
import { letterboxGeometry } from '../../data/letterbox.ts';
import { bilinearTaps, resampleWindow, thresholdWindow, type BilinearTaps } from '../../data/masks/resize.ts';
import { RunBuilder } from '../../data/masks/rle.ts';
import { LibreYOLOError } from '../../errors.ts';
import type { DetectionSet, MaskInputs, MaskSet, SegmentHooks } from '../registry.ts';

const f32 = Math.fround;

function output(inputs: MaskInputs, name: string): HostTensor {
  const t = inputs.outputs[name];
  if (!t) throw new LibreYOLOError('model_load_failed', `The segment model's forward gave no '${name}' output (outputs: ${Object.keys(inputs.outputs).join(', ')}).`);
  return t;
}

/** Thresholded candidates of the best class per anchor, each with its anchor. */
function candidates(inputs: MaskInputs, conf: number): DetectionSet & { source: Int32Array } {
  const pred = output(inputs, 'output');
  const [, rows, A] = pred.dims as [number, number, number];
  const nc = rows - 4;
  const data = pred.data as Float32Array;
  const off = inputs.index * rows * A;
  const best = new Float32Array(A).fill(-Infinity);
  const bestCls = new Int32Array(A);
  for (let c = 0; c < nc; c++) {
    const base = off + (4 + c) * A;
    for (let a = 0; a < A; a++) {
      const s = data[base + a]!;
      if (s > best[a]!) { best[a] = s; bestCls[a] = c; }
    }
  }
  const thr = f32(conf);
  const rx = f32(inputs.ratio), ry = f32(inputs.ratioY ?? inputs.ratio);
  const W = inputs.origWidth, H = inputs.origHeight;
  const keep: number[] = [];
  const boxes: number[] = [];
  for (let a = 0; a < A; a++) {
    if (!(best[a]! > thr)) continue;
    const x1 = Math.min(Math.max(f32(data[off + a]! / rx), 0), W);
    const y1 = Math.min(Math.max(f32(data[off + A + a]! / ry), 0), H);
    const x2 = Math.min(Math.max(f32(data[off + 2 * A + a]! / rx), 0), W);
    const y2 = Math.min(Math.max(f32(data[off + 3 * A + a]! / ry), 0), H);
    if (!(x2 > x1) || !(y2 > y1)) continue;
    keep.push(a);
    boxes.push(x1, y1, x2, y2);
  }
  const source = Int32Array.from(keep);
  return {
    xyxy: Float32Array.from(boxes),
    conf: Float32Array.from(keep, (a) => best[a]!),
    cls: Float32Array.from(keep, (a) => bestCls[a]!),
    source,
  };
}

/** Per-image resize taps, shared by every mask of the image. */
interface Plan {
  Hp: number; Wp: number; Hin: number; Win: number;
  /** Letterbox content of the canvas. */
  newH: number; newW: number;
  up: { rows: BilinearTaps; cols: BilinearTaps };
  down: { rows: BilinearTaps; cols: BilinearTaps };
}

function planOf(inputs: MaskInputs, Hp: number, Wp: number): Plan {
  const Hin = inputs.inputHeight, Win = inputs.inputWidth;
  const g = letterboxGeometry(inputs.origWidth, inputs.origHeight, Hin, Win);
  const newH = Math.min(g.newHeight, Hin), newW = Math.min(g.newWidth, Win);
  return {
    Hp, Wp, Hin, Win, newH, newW,
    up: { rows: bilinearTaps(Hp, Hin), cols: bilinearTaps(Wp, Win) },
    down: { rows: bilinearTaps(newH, inputs.origHeight), cols: bilinearTaps(newW, inputs.origWidth) },
  };
}

/** The masks of anchors `source`, at the original image size. */
function masks(inputs: MaskInputs, source: Int32Array): MaskSet {
  const pred = output(inputs, 'output');
  const proto = output(inputs, 'proto');
  const coeffs = output(inputs, 'mask_coeffs');
  const [, rows, A] = pred.dims as [number, number, number];
  const [, nm, Hp, Wp] = proto.dims as [number, number, number, number];
  if (coeffs.dims[1] !== nm || coeffs.dims[2] !== A) {
    throw new LibreYOLOError('model_load_failed', `The segment model's mask_coeffs [${coeffs.dims.join(',')}] do not fit its proto [${proto.dims.join(',')}] and ${A} anchors.`);
  }
  const H0 = inputs.origHeight, W0 = inputs.origWidth;
  const plan = planOf(inputs, Hp, Wp);
  const P = proto.data as Float32Array, C = coeffs.data as Float32Array, D = pred.data as Float32Array;
  const pOff = inputs.index * nm * Hp * Wp, cOff = inputs.index * nm * A, dOff = inputs.index * rows * A;
  const plane = Hp * Wp;
  const sx = f32(Wp / plan.Win), sy = f32(Hp / plan.Hin);
  const runs: Int32Array[] = [];
  const coef = new Float64Array(nm);
  for (const a of source) {
    // Crop window at prototype resolution: integer j with x1 <= j < x2 (unclamped canvas box).
    const px1 = f32(D[dOff + a]! * sx), py1 = f32(D[dOff + A + a]! * sy);
    const px2 = f32(D[dOff + 2 * A + a]! * sx), py2 = f32(D[dOff + 3 * A + a]! * sy);
    const j0 = Math.max(0, Math.ceil(px1)), j1 = Math.min(Wp, Math.ceil(px2));
    const i0 = Math.max(0, Math.ceil(py1)), i1 = Math.min(Hp, Math.ceil(py2));
    const builder = new RunBuilder(H0 * W0);
    if (j1 <= j0 || i1 <= i0) { runs.push(builder.finish()); continue; }
    for (let k = 0; k < nm; k++) coef[k] = C[cOff + k * A + a]!;
    const rw = j1 - j0;
    const prob = new Float32Array((i1 - i0) * rw);
    for (let i = i0; i < i1; i++) {
      for (let j = j0; j < j1; j++) {
        let s = 0;
        for (let k = 0, p = pOff + i * Wp + j; k < nm; k++, p += plane) s += coef[k]! * P[p]!;
        prob[(i - i0) * rw + (j - j0)] = 1 / (1 + Math.exp(-s));
      }
    }
    // Prototypes -> canvas (content rows/columns only), then content -> original size.
    const canvas = resampleWindow(prob, i0, i1, j0, j1, plan.up.rows, plan.up.cols, plan.newH, plan.newW);
    if (canvas.r1 > canvas.r0 && canvas.c1 > canvas.c0) {
      thresholdWindow(resampleWindow(canvas.data, canvas.r0, canvas.r1, canvas.c0, canvas.c1, plan.down.rows, plan.down.cols, H0, W0), 0.5, W0, builder);
    }
    runs.push(builder.finish());
  }
  return { height: H0, width: W0, runs };
}

export const yolo9Segment: SegmentHooks = {
  maskOutputs: ['proto', 'mask_coeffs'],
  candidates,
  masks,
};
