/**
 * COCO-style detection metrics, computed as pycocotools' COCOeval (bbox, or segm with a mask IoU
 * passed in) does: per image and class,
 * detections sorted by score (stable), the first 100 kept, greedily matched to ground truth at each
 * IoU threshold 0.50:0.05:0.95 (ignored / crowd ground truth last); per class and area range the
 * 101-point interpolated precision and the recall; the 12 summary stats; and the original's
 * precision / recall (means of every valid entry of those arrays at area "all", maxDets 100).
 */

/** A class-labelled pixel box in one image: what ground truth and detections have in common. */
export interface ImageBox {
  /** Image index (any integer id). */
  image: number;
  cls: number;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface GtBox extends ImageBox {
  /** Defaults to the box area (w * h). */
  area?: number;
  /** Crowd regions: matched by intersection over the detection's area and never counted. */
  iscrowd?: boolean;
}

export interface DetBox extends ImageBox {
  score: number;
}

/** `np.linspace(.5, .95, 10)` with numpy's arithmetic. */
export const IOU_THRESHOLDS: readonly number[] = (() => {
  const step = (0.95 - 0.5) / 9;
  const t = Array.from({ length: 10 }, (_, i) => i * step + 0.5);
  t[9] = 0.95;
  return t;
})();

/** `np.linspace(0, 1, 101)`. */
export const RECALL_THRESHOLDS: readonly number[] = (() => {
  const t = Array.from({ length: 101 }, (_, i) => i * 0.01);
  t[100] = 1;
  return t;
})();

export const AREA_RANGES: readonly (readonly [number, number])[] = [[0, 1e10], [0, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e10]];
export const AREA_NAMES = ['all', 'small', 'medium', 'large'] as const;
export const MAX_DETS: readonly number[] = [1, 10, 100];

const EPS = 2.220446049250313e-16; // np.spacing(1)

export interface CocoEvalResult {
  /** The 12 COCOeval summary numbers (-1 where undefined). */
  stats: number[];
  /** `[T=10, R=101, K, A=4, M=3]`, row-major; -1 where a class has no ground truth. */
  precision: Float64Array;
  /** `[T=10, K, A=4, M=3]`, row-major. */
  recall: Float64Array;
  /** Class ids in K order. */
  catIds: number[];
}

interface ImgEval {
  /** per threshold, per det (sorted, <= maxDet): matched? */
  dtMatched: Uint8Array[];
  dtIgnore: Uint8Array[];
  dtScores: number[];
  gtIgnore: Uint8Array;
}

const area = (b: { x1: number; y1: number; x2: number; y2: number }): number => (b.x2 - b.x1) * (b.y2 - b.y1);

/** Overlap of a detection with a ground truth; crowd ground truth is matched by |D n G| / |D|. */
export type IouFn<G extends GtBox, D extends DetBox> = (d: D, g: G, crowd: boolean) => number;

/** IoU as maskUtils.iou for boxes: crowd ground truth uses the detection's area as the union. */
function boxIou(d: DetBox, g: GtBox, crowd: boolean): number {
  const w = Math.min(d.x2, g.x2) - Math.max(d.x1, g.x1);
  const h = Math.min(d.y2, g.y2) - Math.max(d.y1, g.y1);
  if (w <= 0 || h <= 0) return 0;
  const inter = w * h;
  const union = crowd ? area(d) : area(d) + area(g) - inter;
  return inter / union;
}

/** Stable sort of indices by key (numpy's mergesort). */
function argsortStable(n: number, key: (i: number) => number): number[] {
  const idx = Array.from({ length: n }, (_, i) => i);
  return idx.sort((a, b) => key(a) - key(b) || a - b);
}

function evaluateImg<G extends GtBox, D extends DetBox>(gts: G[], dts: D[], range: readonly [number, number], maxDet: number, iou: IouFn<G, D>): ImgEval | null {
  if (gts.length === 0 && dts.length === 0) return null;
  const T = IOU_THRESHOLDS.length;
  const ign = gts.map((g) => (g.iscrowd || (g.area ?? area(g)) < range[0] || (g.area ?? area(g)) > range[1] ? 1 : 0));
  const gOrder = argsortStable(gts.length, (i) => ign[i]!);
  const g = gOrder.map((i) => gts[i]!);
  const gIg = Uint8Array.from(gOrder.map((i) => ign[i]!));
  const crowd = g.map((x) => x.iscrowd === true);
  const dOrder = argsortStable(dts.length, (i) => -dts[i]!.score).slice(0, maxDet);
  const d = dOrder.map((i) => dts[i]!);
  const D = d.length, G = g.length;
  const ious = new Float64Array(D * G);
  for (let i = 0; i < D; i++) for (let j = 0; j < G; j++) ious[i * G + j] = iou(d[i]!, g[j]!, crowd[j]!);
  const dtMatched: Uint8Array[] = [], dtIgnore: Uint8Array[] = [];
  for (let t = 0; t < T; t++) {
    const gtm = new Uint8Array(G), dtm = new Uint8Array(D), dtIg = new Uint8Array(D);
    if (D > 0 && G > 0) {
      for (let di = 0; di < D; di++) {
        let best = Math.min(IOU_THRESHOLDS[t]!, 1 - 1e-10);
        let m = -1;
        for (let gi = 0; gi < G; gi++) {
          if (gtm[gi] && !crowd[gi]) continue;
          if (m > -1 && gIg[m] === 0 && gIg[gi] === 1) break;
          const v = ious[di * G + gi]!;
          if (v < best) continue;
          best = v;
          m = gi;
        }
        if (m === -1) continue;
        dtIg[di] = gIg[m]!;
        dtm[di] = 1;
        gtm[m] = 1;
      }
    }
    for (let di = 0; di < D; di++) {
      const a = area(d[di]!);
      if (!dtm[di] && (a < range[0] || a > range[1])) dtIg[di] = 1;
    }
    dtMatched.push(dtm);
    dtIgnore.push(dtIg);
  }
  return { dtMatched, dtIgnore, dtScores: d.map((x) => x.score), gtIgnore: gIg };
}

export interface CocoEvalOptions<G extends GtBox = GtBox, D extends DetBox = DetBox> {
  /**
   * The overlap measure (default: box IoU). Segm evaluation passes mask IoU; areas stay the `area`
   * fields of the ground truth and the box areas of the detections, as pycocotools' loadRes gives
   * detections with a bbox the box area.
   */
  iou?: IouFn<G, D>;
  /** Classes to evaluate (default: every class present in gts or dets). */
  catIds?: readonly number[];
  /** Images to evaluate (default: every image present in gts or dets). */
  imageIds?: readonly number[];
}

/** Runs the evaluation and accumulation of COCOeval (bbox) and returns the arrays and stats. */
export function cocoEvaluate<G extends GtBox, D extends DetBox>(gts: readonly G[], dets: readonly D[], options: CocoEvalOptions<G, D> = {}): CocoEvalResult {
  const iou: IouFn<G, D> = options.iou ?? boxIou;
  const catIds = [...(options.catIds ?? new Set([...gts.map((g) => g.cls), ...dets.map((d) => d.cls)]))].sort((a, b) => a - b);
  const imgIds = [...(options.imageIds ?? new Set([...gts.map((g) => g.image), ...dets.map((d) => d.image)]))].sort((a, b) => a - b);
  const key = (img: number, cls: number): string => `${img}:${cls}`;
  const gIdx = new Map<string, G[]>(), dIdx = new Map<string, D[]>();
  const imgSet = new Set(imgIds);
  const imagesOf = new Map<number, Set<number>>(); // class -> images with a box of it
  const add = <B extends G | D>(idx: Map<string, B[]>, b: B): void => {
    if (!imgSet.has(b.image)) return;
    const k = key(b.image, b.cls);
    (idx.get(k) ?? idx.set(k, []).get(k)!).push(b);
    (imagesOf.get(b.cls) ?? imagesOf.set(b.cls, new Set()).get(b.cls)!).add(b.image);
  };
  for (const g of gts) add(gIdx, g);
  for (const d of dets) add(dIdx, d);

  const T = IOU_THRESHOLDS.length, R = RECALL_THRESHOLDS.length, K = catIds.length, A = AREA_RANGES.length, M = MAX_DETS.length;
  const precision = new Float64Array(T * R * K * A * M).fill(-1);
  const recall = new Float64Array(T * K * A * M).fill(-1);
  const maxDetAll = MAX_DETS[M - 1]!;

  for (let k = 0; k < K; k++) {
    const cat = catIds[k]!;
    for (let a = 0; a < A; a++) {
      const E: ImgEval[] = [];
      const imgs = [...(imagesOf.get(cat) ?? [])].sort((x, y) => x - y);
      for (const img of imgs) {
        const e = evaluateImg(gIdx.get(key(img, cat)) ?? [], dIdx.get(key(img, cat)) ?? [], AREA_RANGES[a]!, maxDetAll, iou);
        if (e) E.push(e);
      }
      if (E.length === 0) continue;
      let npig = 0;
      for (const e of E) for (const v of e.gtIgnore) if (v === 0) npig++;
      if (npig === 0) continue;
      for (let m = 0; m < M; m++) {
        const maxDet = MAX_DETS[m]!;
        const scores: number[] = [];
        const src: [ImgEval, number][] = [];
        for (const e of E) {
          const n = Math.min(e.dtScores.length, maxDet);
          for (let i = 0; i < n; i++) { scores.push(e.dtScores[i]!); src.push([e, i]); }
        }
        const order = argsortStable(scores.length, (i) => -scores[i]!);
        const nd = order.length;
        for (let t = 0; t < T; t++) {
          const pr = new Float64Array(nd), rc = new Float64Array(nd);
          let tp = 0, fp = 0;
          for (let j = 0; j < nd; j++) {
            const [e, i] = src[order[j]!]!;
            const ig = e.dtIgnore[t]![i]!, mt = e.dtMatched[t]![i]!;
            if (!ig) { if (mt) tp++; else fp++; }
            rc[j] = tp / npig;
            pr[j] = tp / (fp + tp + EPS);
          }
          recall[((t * K + k) * A + a) * M + m] = nd ? rc[nd - 1]! : 0;
          for (let j = nd - 1; j > 0; j--) if (pr[j]! > pr[j - 1]!) pr[j - 1] = pr[j]!;
          // searchsorted(rc, thr, 'left'): first j with rc[j] >= thr
          let j = 0;
          for (let r = 0; r < R; r++) {
            const thr = RECALL_THRESHOLDS[r]!;
            while (j < nd && rc[j]! < thr) j++;
            precision[(((t * R + r) * K + k) * A + a) * M + m] = j < nd ? pr[j]! : 0;
          }
        }
      }
    }
  }

  const meanValid = (values: Iterable<number>): number => {
    let s = 0, n = 0;
    for (const v of values) if (v > -1) { s += v; n++; }
    return n ? s / n : -1;
  };
  function* pSel(tSel: number | null, a: number, m: number): Generator<number> {
    for (let t = 0; t < T; t++) {
      if (tSel !== null && t !== tSel) continue;
      for (let r = 0; r < R; r++) for (let k = 0; k < K; k++) yield precision[(((t * R + r) * K + k) * A + a) * M + m]!;
    }
  }
  function* rSel(a: number, m: number): Generator<number> {
    for (let t = 0; t < T; t++) for (let k = 0; k < K; k++) yield recall[((t * K + k) * A + a) * M + m]!;
  }
  const stats = [
    meanValid(pSel(null, 0, 2)), meanValid(pSel(0, 0, 2)), meanValid(pSel(5, 0, 2)),
    meanValid(pSel(null, 1, 2)), meanValid(pSel(null, 2, 2)), meanValid(pSel(null, 3, 2)),
    meanValid(rSel(0, 0)), meanValid(rSel(0, 1)), meanValid(rSel(0, 2)),
    meanValid(rSel(1, 2)), meanValid(rSel(2, 2)), meanValid(rSel(3, 2)),
  ];
  return { stats, precision, recall, catIds };
}

/** Mean of valid (> -1) entries, or 0 when there are none. */
function meanOrZero(values: Iterable<number>): number {
  let s = 0, n = 0;
  for (const v of values) if (v > -1) { s += v; n++; }
  return n ? s / n : 0;
}

/** The original's precision / recall: means of every valid entry at area "all", maxDets 100. */
function precisionRecall(res: CocoEvalResult): { precision: number; recall: number } {
  const K = res.catIds.length, A = AREA_RANGES.length, M = MAX_DETS.length, R = RECALL_THRESHOLDS.length, T = IOU_THRESHOLDS.length;
  const p: number[] = [], r: number[] = [];
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < R; i++) for (let k = 0; k < K; k++) p.push(res.precision[(((t * R + i) * K + k) * A + 0) * M + 2]!);
    for (let k = 0; k < K; k++) r.push(res.recall[((t * K + k) * A + 0) * M + 2]!);
  }
  return { precision: meanOrZero(p), recall: meanOrZero(r) };
}

/** COCOeval's 12 summary stats, in order, under the original's unsuffixed key names. */
const SUMMARY_KEYS = ['mAP50-95', 'mAP50', 'mAP75', 'mAP_small', 'mAP_medium', 'mAP_large', 'AR1', 'AR10', 'AR100', 'AR_small', 'AR_medium', 'AR_large'];

/** Summary stats `from` (inclusive) to `to` (exclusive) as `metrics/<name>` entries. */
function summaryKeys(s: readonly number[], from = 0, to = SUMMARY_KEYS.length): Record<string, number> {
  return Object.fromEntries(SUMMARY_KEYS.slice(from, to).map((name, k) => [`metrics/${name}`, s[from + k]!]));
}

/**
 * The original's segment metric dict: the unsuffixed keys are the **mask** metrics, `(B)` the box
 * ones and `(M)` the mask ones (precision, recall, mAP50, mAP50-95); no unsuffixed precision/recall.
 */
export function segmentMetricsDict(box: CocoEvalResult, mask: CocoEvalResult): Record<string, number> {
  const b = precisionRecall(box), m = precisionRecall(mask);
  return {
    ...summaryKeys(mask.stats),
    'metrics/precision(B)': b.precision,
    'metrics/recall(B)': b.recall,
    'metrics/mAP50(B)': box.stats[1]!,
    'metrics/mAP50-95(B)': box.stats[0]!,
    'metrics/precision(M)': m.precision,
    'metrics/recall(M)': m.recall,
    'metrics/mAP50(M)': mask.stats[1]!,
    'metrics/mAP50-95(M)': mask.stats[0]!,
  };
}

/** The original's metric dict (key names as in results.csv) from a COCOeval result. */
export function metricsDict(res: CocoEvalResult): Record<string, number> {
  const { precision, recall } = precisionRecall(res);
  const s = res.stats;
  // The original's column order: precision and recall, the three mAPs, the (B) copies, the rest.
  return {
    'metrics/precision': precision,
    'metrics/recall': recall,
    ...summaryKeys(s, 0, 3),
    'metrics/precision(B)': precision,
    'metrics/recall(B)': recall,
    'metrics/mAP50(B)': s[1]!,
    'metrics/mAP50-95(B)': s[0]!,
    ...summaryKeys(s, 3),
  };
}

/** Per-class AP50-95 and AP50 (area all, maxDets 100); -1 for a class without ground truth. */
export function perClassAP(res: CocoEvalResult): { cls: number; ap: number; ap50: number }[] {
  const K = res.catIds.length, A = AREA_RANGES.length, M = MAX_DETS.length, R = RECALL_THRESHOLDS.length, T = IOU_THRESHOLDS.length;
  return res.catIds.map((cls, k) => {
    let s = 0, n = 0, s50 = 0, n50 = 0;
    for (let t = 0; t < T; t++) {
      for (let i = 0; i < R; i++) {
        const v = res.precision[(((t * R + i) * K + k) * A + 0) * M + 2]!;
        if (v > -1) { s += v; n++; if (t === 0) { s50 += v; n50++; } }
      }
    }
    return { cls, ap: n ? s / n : -1, ap50: n50 ? s50 / n50 : -1 };
  });
}
