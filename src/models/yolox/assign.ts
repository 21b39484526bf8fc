/**
 * YOLOX's host assigner (the contract's `HostAssigner`): the train-mode forward's decoded
 * predictions go to SimOTA image by image, and the assignment comes back as the loss graph's
 * inputs (loss.ts `AssignedInputs`). Targets arrive as the trainer's rows `[cls, x1, y1, x2, y2]`
 * normalised 0..1 and become the original's pixel `[cx, cy, w, h]` boxes here.
 */
import type { HostTensor } from '../../graph/tensor.ts';
import type { DetectionNetwork, HostAssigner, TrainShape } from '../registry.ts';
import { YOLOX_STRIDES } from './config.ts';
import { decodeBoxes, flattenLevels } from './loss.ts';
import { YoloxNetwork } from './network.ts';
import { anchorGrid, simota, type AnchorGrid, type GtBox } from './simota.ts';
import { concat, split } from '../../graph/nn.ts';

export function asYolox(network: DetectionNetwork): YoloxNetwork {
  if (!(network instanceof YoloxNetwork)) throw new Error('yolox training hooks got a network of another family');
  return network;
}

/** The loss graph's input names for the assignment. */
export const ASSIGNED = {
  fg: 'assign.fg', cls: 'assign.cls', iou: 'assign.iou', box: 'assign.box', l1: 'assign.l1', norm: 'assign.norm', fgPerGt: 'assign.fg_per_gt',
} as const;

/** Ground truths of image `i`: rows that are not padding (class -1, or all zeros), in input pixels. */
export function gtBoxes(targets: HostTensor, i: number, width: number, height: number): GtBox[] {
  const [, m] = targets.dims as [number, number, number];
  const d = targets.data as Float32Array;
  const out: GtBox[] = [];
  for (let r = 0; r < m; r++) {
    const o = (i * m + r) * 5;
    const [cls, x1, y1, x2, y2] = [d[o]!, d[o + 1]!, d[o + 2]!, d[o + 3]!, d[o + 4]!];
    if (cls < 0 || (cls === 0 && x1 === 0 && y1 === 0 && x2 === 0 && y2 === 0)) continue;
    out.push({ cls, cx: ((x1 + x2) / 2) * width, cy: ((y1 + y2) / 2) * height, w: (x2 - x1) * width, h: (y2 - y1) * height });
  }
  return out;
}

const grids = new Map<string, AnchorGrid>();
function gridFor(height: number, width: number): AnchorGrid {
  const key = `${height}x${width}`;
  let g = grids.get(key);
  if (!g) grids.set(key, (g = anchorGrid(height, width, YOLOX_STRIDES)));
  return g;
}

/**
 * The assignment of a batch as loss inputs. `preds` `[B, A, 5+nc]`: decoded cx cy w h, then raw
 * objectness and class logits.
 */
export function assignBatch(preds: HostTensor, targets: HostTensor, shape: TrainShape, nc: number): Record<string, HostTensor> {
  const { batch: B, height: H, width: W } = shape;
  const grid = gridFor(H, W);
  const A = grid.count;
  const rows = preds.data as Float32Array;
  const fg = new Float32Array(B * A);
  const cls = new Float32Array(B * A).fill(-1);
  const iou = new Float32Array(B * A);
  const box = new Float32Array(B * A * 4);
  const l1 = new Float32Array(B * A * 4);
  let numFg = 0;
  let numGts = 0;
  for (let i = 0; i < B; i++) {
    const gts = gtBoxes(targets, i, W, H);
    numGts += gts.length;
    const r = simota({ rows, offset: i * A * (5 + nc), stride: 5 + nc, nc }, grid, gts);
    r.fgAnchors.forEach((a, k) => {
      const g = gts[r.matchedGt[k]!]!;
      const j = i * A + a;
      const s = grid.stride[a]!;
      fg[j] = 1;
      cls[j] = g.cls;
      iou[j] = r.predIou[k]!;
      box.set([g.cx, g.cy, g.w, g.h], j * 4);
      l1.set([g.cx / s - grid.gx[a]!, g.cy / s - grid.gy[a]!, Math.log(g.w / s + 1e-8), Math.log(g.h / s + 1e-8)], j * 4);
    });
    numFg += r.fgAnchors.length;
  }
  const scalar = (v: number): HostTensor => ({ dtype: 'float32', dims: [], data: Float32Array.of(v) });
  return {
    [ASSIGNED.fg]: { dtype: 'float32', dims: [B, A], data: fg },
    [ASSIGNED.cls]: { dtype: 'float32', dims: [B, A], data: cls },
    [ASSIGNED.iou]: { dtype: 'float32', dims: [B, A], data: iou },
    [ASSIGNED.box]: { dtype: 'float32', dims: [B, A, 4], data: box },
    [ASSIGNED.l1]: { dtype: 'float32', dims: [B, A, 4], data: l1 },
    [ASSIGNED.norm]: scalar(Math.max(numFg, 1)),
    [ASSIGNED.fgPerGt]: scalar(numFg / Math.max(numGts, 1)),
  };
}

/** The train-mode forward's predictions for SimOTA: `[B, A, 5+nc]` decoded boxes + raw logits. */
function emitPredictions(b: Parameters<HostAssigner['emitPredictions']>[0], network: DetectionNetwork, images: string, shape: TrainShape) {
  const net = asYolox(network);
  const nc = net.nc;
  b.preciseSilu = true;
  const flat = flattenLevels(b, net.head.logits(b, net.features(b, images)), nc);
  const [reg, logits] = split(b, flat, [4, 1 + nc], 2) as [string, string];
  const value = concat(b, [b.scope('decode', () => decodeBoxes(b, reg, shape)), logits], 2);
  return { preds: { value, dims: [shape.batch, gridFor(shape.height, shape.width).count, 5 + nc] } };
}

export const yoloxAssigner: HostAssigner = {
  emitPredictions,
  inputs(shape) {
    const { batch: B } = shape;
    const A = gridFor(shape.height, shape.width).count;
    return {
      [ASSIGNED.fg]: { dtype: 'float32', dims: [B, A] },
      [ASSIGNED.cls]: { dtype: 'float32', dims: [B, A] },
      [ASSIGNED.iou]: { dtype: 'float32', dims: [B, A] },
      [ASSIGNED.box]: { dtype: 'float32', dims: [B, A, 4] },
      [ASSIGNED.l1]: { dtype: 'float32', dims: [B, A, 4] },
      [ASSIGNED.norm]: { dtype: 'float32', dims: [] },
      [ASSIGNED.fgPerGt]: { dtype: 'float32', dims: [] },
    };
  },
  assign: (predictions, targets, shape, nc) => assignBatch(predictions.preds!, targets, shape, nc),
};
