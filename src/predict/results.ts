/**
 * Per-image prediction results: `Boxes` (typed arrays underneath, row accessors on top) and `Results`
 * with the reference's field names (`orig_shape`, `saved_path`, `summary()`, `toJSON()`).
 */

import { printable } from '../util/text.ts';
import type { InspectOptions } from 'node:util';
import type { Detections } from './postprocess.ts';
import type { Masks } from './masks.ts';

type Row4 = [number, number, number, number];

export class Boxes {
  /** N x 4 xyxy in original pixels, row-major */
  readonly xyxyData: Float32Array;
  readonly confData: Float32Array;
  readonly clsData: Float32Array;
  /** `[height, width]` of the original image, for the normalised views (set by `Results` if omitted) */
  orig_shape: [number, number] | null;
  /** Track id per box, set by tracking (`null` for plain detections). */
  idData: Int32Array | null = null;

  constructor(xyxy: Float32Array, conf: Float32Array, cls: Float32Array, origShape: [number, number] | null = null) {
    if (xyxy.length !== conf.length * 4 || cls.length !== conf.length) {
      throw new RangeError(`Boxes: inconsistent lengths xyxy=${xyxy.length} conf=${conf.length} cls=${cls.length}`);
    }
    this.xyxyData = xyxy;
    this.confData = conf;
    this.clsData = cls;
    this.orig_shape = origShape;
  }

  static fromDetections(det: Detections, origShape: [number, number]): Boxes {
    return new Boxes(det.xyxy, det.conf, det.cls, origShape);
  }

  get length(): number { return this.confData.length; }

  private rows(map: (x1: number, y1: number, x2: number, y2: number) => Row4): Row4[] {
    const d = this.xyxyData;
    const out: Row4[] = new Array(this.length);
    for (let i = 0; i < this.length; i++) out[i] = map(d[i * 4]!, d[i * 4 + 1]!, d[i * 4 + 2]!, d[i * 4 + 3]!);
    return out;
  }

  /** One `[x1, y1, x2, y2]` per box, in original-image pixels. */
  get xyxy(): Row4[] { return this.rows((x1, y1, x2, y2) => [x1, y1, x2, y2]); }
  /** One `[cx, cy, w, h]` per box (centre, width, height), in original-image pixels. */
  get xywh(): Row4[] { return this.rows((x1, y1, x2, y2) => [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1]); }
  private shape(): [number, number] {
    if (this.orig_shape === null) throw new Error('Boxes: orig_shape is not set, normalised coordinates are unavailable');
    return this.orig_shape;
  }

  /** `xyxy` divided by the original width and height (0..1). */
  get xyxyn(): Row4[] {
    const [h, w] = this.shape();
    return this.rows((x1, y1, x2, y2) => [x1 / w, y1 / h, x2 / w, y2 / h]);
  }
  /** `xywh` divided by the original width and height (0..1). */
  get xywhn(): Row4[] {
    const [h, w] = this.shape();
    return this.rows((x1, y1, x2, y2) => [(x1 + x2) / 2 / w, (y1 + y2) / 2 / h, (x2 - x1) / w, (y2 - y1) / h]);
  }
  /** One confidence (0..1) per box, in the order of `xyxy`. */
  get conf(): number[] { return Array.from(this.confData); }
  /** class ids as floats (the reference's convention); use `Math.trunc` or `clsInt` for indexing */
  get cls(): number[] { return Array.from(this.clsData); }
  clsInt(i: number): number { return Math.trunc(this.clsData[i]!); }
  /** Track ids (one per box) after tracking, else null. */
  get id(): number[] | null { return this.idData ? Array.from(this.idData) : null; }
  /** True for tracking output, also when it holds no box. */
  get is_track(): boolean { return this.idData !== null; }
  /** rows `[x1, y1, x2, y2, conf, cls]`, or `[x1, y1, x2, y2, id, conf, cls]` after tracking */
  get data(): number[][] {
    const d = this.xyxyData;
    const ids = this.idData;
    const out: number[][] = new Array(this.length);
    for (let i = 0; i < this.length; i++) {
      const box = [d[i * 4]!, d[i * 4 + 1]!, d[i * 4 + 2]!, d[i * 4 + 3]!];
      out[i] = ids ? [...box, ids[i]!, this.confData[i]!, this.clsData[i]!] : [...box, this.confData[i]!, this.clsData[i]!];
    }
    return out;
  }

  /** The boxes at `rows`, in that order (ids too). */
  select(rows: ArrayLike<number>): Boxes {
    const n = rows.length;
    const xyxy = new Float32Array(n * 4), conf = new Float32Array(n), cls = new Float32Array(n);
    for (let k = 0; k < n; k++) {
      const i = rows[k]!;
      xyxy.set(this.xyxyData.subarray(i * 4, i * 4 + 4), k * 4);
      conf[k] = this.confData[i]!;
      cls[k] = this.clsData[i]!;
    }
    const out = new Boxes(xyxy, conf, cls, this.orig_shape);
    if (this.idData) out.idData = Int32Array.from(rows, (i) => this.idData![i]!);
    return out;
  }
}

/** Milliseconds one image spent in each stage. */
export interface Speed {
  /** Decoding and letterboxing. */
  preprocess: number;
  /** The network's forward pass. */
  inference: number;
  /** Decoding the outputs, NMS and building the `Results`. */
  postprocess: number;
  /**
   * Building and creating the ONNX Runtime session, paid by the first image of a model and input
   * shape (absent on every other result), kept out of `inference` so that stays the forward alone.
   */
  load?: number;
}

/** One box of `Results.summary()`. */
export interface SummaryRow {
  /** Class name (`names[class]`). */
  name: string;
  /** Class id. */
  class: number;
  confidence: number;
  /** Corners in original-image pixels (0..1 with `normalize: true`). */
  box: { x1: number; y1: number; x2: number; y2: number };
  /** Segment models: the mask's largest outer contour (pixels, 0..1 with `normalize: true`). */
  segments?: { x: number[]; y: number[] };
  /** The box's track id (tracking output only). */
  track_id?: number;
}

export interface ResultsInit {
  boxes: Boxes;
  /** Segment models: one mask per box (null or absent when nothing was found). */
  masks?: Masks | null;
  names: Record<number, string>;
  orig_shape: [number, number];
  path?: string | null;
  speed?: Partial<Speed>;
}

/** Stage times to 0.1 ms, load last and only when paid: `1.2ms preprocess, 9.8ms inference, 0.4ms postprocess`. */
export function speedLine(speed: Speed): string {
  const parts = [`${speed.preprocess.toFixed(1)}ms preprocess`, `${speed.inference.toFixed(1)}ms inference`, `${speed.postprocess.toFixed(1)}ms postprocess`];
  if (speed.load !== undefined) parts.push(`${speed.load.toFixed(1)}ms load`);
  return parts.join(', ');
}

/**
 * `console.log(result.speed)` shows each time to 0.01 ms (482.06, not 482.05897600000003); the values
 * themselves, their JSON and their spreads keep full precision (the hook is a non-enumerable symbol).
 */
function roundedWhenPrinted(speed: Speed): Speed {
  // Node's util.inspect.custom symbol and the inspect it passes in: no node:util import, so browsers load this too.
  Object.defineProperty(speed, Symbol.for('nodejs.util.inspect.custom'), {
    enumerable: false,
    value: (_depth: number, options: InspectOptions, inspect: (v: unknown, o: InspectOptions) => string) => inspect(Object.fromEntries(Object.entries(speed).map(([k, v]) => [k, round(v as number, 2)])), options),
  });
  return speed;
}

function round(v: number, decimals: number): number {
  const k = 10 ** decimals;
  return Math.round(v * k) / k;
}

export class Results {
  /** The detections, in original-image pixels. */
  boxes: Boxes;
  /** Segment models: the instance masks, one per box; null for detection models and when nothing was found. */
  masks: Masks | null;
  /** Class id -> name, as the model declares them. */
  names: Record<number, string>;
  /** `[height, width]` */
  orig_shape: [number, number];
  /** source path or URL; null for in-memory inputs */
  path: string | null;
  /** per-stage milliseconds */
  speed: Speed;
  /**
   * Plain predict (not tiling or TTA): this image's share of the run's wall time, in ms: its chunk's
   * wait divided by the images in it, plus its own postprocess and save, session creation left out.
   * Stage times overlap (the next chunk decodes during this one's forward); these add up to the run's time.
   */
  wall_ms?: number;
  /** Where `save: true` wrote the annotated image. */
  saved_path?: string;
  /** Set by tiled inference (absent when tiling was skipped because the image fits). */
  tiled?: boolean;
  num_tiles?: number;
  /** `save: true` with tiling: the folder of raw tiles and the grid visualisation. */
  tiles_path?: string;
  grid_path?: string;
  /** Index of the frame in its video or stream (counting the frames vid_stride skips); null for images. */
  frame_idx: number | null = null;

  constructor(init: ResultsInit) {
    this.boxes = init.boxes;
    this.boxes.orig_shape ??= init.orig_shape;
    this.masks = init.masks && init.masks.length > 0 ? init.masks : null;
    this.names = init.names;
    this.orig_shape = init.orig_shape;
    this.path = init.path ?? null;
    this.speed = roundedWhenPrinted({ preprocess: 0, inference: 0, postprocess: 0, ...init.speed });
  }

  /** `sample.jpg: 640x360 circle: 2, star: 2; 1.2ms preprocess, 9.8ms inference, 0.4ms postprocess` (times rounded). */
  toString(): string {
    return `${this.path ?? 'image'}: ${this.orig_shape[1]}x${this.orig_shape[0]} ${summaryLine(this)}; ${speedLine(this.speed)}`;
  }

  /** Number of detections. */
  get length(): number { return this.boxes.length; }

  /** Track id per box after tracking (the same values as `boxes.id`), else null. */
  get track_id(): number[] | null { return this.boxes.id; }

  /** Class name for a class id, falling back to the id itself. */
  nameOf(cls: number): string {
    return this.names[cls] ?? String(cls);
  }

  /** One row per box; coordinates optionally normalised by the original size, rounded to `decimals`. */
  summary({ normalize = false, decimals = 5 }: { normalize?: boolean; decimals?: number } = {}): SummaryRow[] {
    const [h, w] = this.orig_shape;
    const sx = normalize ? 1 / w : 1, sy = normalize ? 1 / h : 1;
    const d = this.boxes.xyxyData;
    const polygons = this.masks ? (normalize ? this.masks.xyn : this.masks.xy) : null;
    const rows: SummaryRow[] = [];
    for (let i = 0; i < this.boxes.length; i++) {
      const cls = this.boxes.clsInt(i);
      rows.push({
        name: this.nameOf(cls),
        class: cls,
        confidence: round(this.boxes.confData[i]!, decimals),
        box: {
          x1: round(d[i * 4]! * sx, decimals), y1: round(d[i * 4 + 1]! * sy, decimals),
          x2: round(d[i * 4 + 2]! * sx, decimals), y2: round(d[i * 4 + 3]! * sy, decimals),
        },
        ...(polygons ? { segments: { x: polygons[i]!.map((p) => round(p[0], decimals)), y: polygons[i]!.map((p) => round(p[1], decimals)) } } : {}),
        ...(this.boxes.idData ? { track_id: this.boxes.idData[i]! } : {}),
      });
    }
    return rows;
  }

  /** `JSON.stringify(result)` gives the JSON of `summary()`, like the reference's `to_json()`. */
  toJSON(): SummaryRow[] {
    return this.summary();
  }
}

/**
 * CLI line such as `person: 3, car: 2` (classes by id); `(no detections)` when empty. Counts follow
 * the name rather than pluralising it, so `sheep`, `couch` and `knife` read right.
 */
export function summaryLine(result: Results): string {
  if (result.length === 0) return '(no detections)';
  const counts = new Map<number, number>();
  for (let i = 0; i < result.length; i++) {
    const c = result.boxes.clsInt(i);
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  // Names come from the checkpoint: control and bidi characters are written as escapes, never sent to a terminal raw.
  return [...counts].sort((a, b) => a[0] - b[0]).map(([c, n]) => `${printable(result.nameOf(c))}: ${n}`).join(', ');
}
