/**
 * `Results.masks`: instance masks at the original image size, one per box and in the boxes' order.
 * They are kept as run lengths (a few kilobytes per mask instead of H x W bytes); `data` and
 * `mask(i)` materialise pixels on access, `xy` / `xyn` give each mask's largest outer contour.
 */
import type { MaskSet } from '../models/registry.ts';
import { largestOuterContour } from '../data/masks/contour.ts';
import { decodeRunsInto, runsArea } from '../data/masks/rle.ts';

export class Masks {
  /** Run lengths per mask (row-major, alternating unset/set, starting unset). */
  readonly runs: readonly Int32Array[];
  /** `[height, width]` of the original image. */
  readonly orig_shape: [number, number];
  private polygons: number[][] | null = null;

  constructor(set: MaskSet) {
    this.runs = set.runs;
    this.orig_shape = [set.height, set.width];
  }

  get length(): number {
    return this.runs.length;
  }

  /** `[N, H, W]`. */
  get shape(): [number, number, number] {
    return [this.length, ...this.orig_shape];
  }

  /** Mask `i` as `H x W` bytes (1 = set). */
  mask(i: number): Uint8Array {
    const [h, w] = this.orig_shape;
    const out = new Uint8Array(h * w);
    decodeRunsInto(this.runs[i]!, out, 0, h * w);
    return out;
  }

  /** Every mask as `N x H x W` bytes (1 = set), row-major: `data[(i * H + y) * W + x]`. */
  get data(): Uint8Array {
    const [h, w] = this.orig_shape;
    const out = new Uint8Array(this.length * h * w);
    this.runs.forEach((r, i) => decodeRunsInto(r, out, i * h * w, h * w));
    return out;
  }

  /** Set pixels per mask. */
  get areas(): number[] {
    return this.runs.map(runsArea);
  }

  /** Masks `rows` (a subset or reordering), e.g. after a class filter. */
  select(rows: readonly number[]): Masks {
    const [height, width] = this.orig_shape;
    return new Masks({ height, width, runs: rows.map((i) => this.runs[i]!) });
  }

  private contours(): number[][] {
    if (this.polygons === null) {
      const [h, w] = this.orig_shape;
      this.polygons = this.runs.map((_, i) => largestOuterContour(this.mask(i), w, h));
    }
    return this.polygons;
  }

  /** Per mask, the largest outer contour as `[x, y]` pixel points (empty for an empty mask). */
  get xy(): Array<Array<[number, number]>> {
    return this.contours().map((c) => pairs(c, 1, 1));
  }

  /** `xy` divided by the original width and height. */
  get xyn(): Array<Array<[number, number]>> {
    const [h, w] = this.orig_shape;
    return this.contours().map((c) => pairs(c, 1 / w, 1 / h));
  }

  toString(): string {
    const [h, w] = this.orig_shape;
    return `Masks(n=${this.length}, shape=(${this.length}, ${h}, ${w}), orig_shape=(${h}, ${w}))`;
  }
}

function pairs(flat: number[], sx: number, sy: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let k = 0; k < flat.length; k += 2) out.push([flat[k]! * sx, flat[k + 1]! * sy]);
  return out;
}
