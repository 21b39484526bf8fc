/**
 * Run-length masks: a mask of `height x width` pixels, flattened row-major, is the lengths of
 * alternating runs of unset and set pixels, starting with a (possibly empty) unset run. Masks stay
 * in this form until someone asks for pixels.
 */

/** Builds one mask's runs from its set spans, given in increasing row-major order. */
export class RunBuilder {
  private runs = new Int32Array(16);
  private count = 0;
  /** End (exclusive) of the last set span. */
  private end = 0;
  private area = 0;

  constructor(private readonly total: number) {}

  /** Marks pixels [start, stop) set; `start` must be at or after the previous span's end. */
  set(start: number, stop: number): void {
    if (stop <= start) return;
    this.area += stop - start;
    if (start === this.end && this.count > 0) {
      this.runs[this.count - 1]! += stop - start;
    } else {
      this.push(start - this.end);
      this.push(stop - start);
    }
    this.end = stop;
  }

  private push(v: number): void {
    if (this.count === this.runs.length) {
      const grown = new Int32Array(this.runs.length * 2);
      grown.set(this.runs);
      this.runs = grown;
    }
    this.runs[this.count++] = v;
  }

  /** The runs, ending with the trailing unset run (omitted when empty). */
  finish(): Int32Array {
    if (this.count === 0) return Int32Array.of(this.total);
    if (this.end < this.total) this.push(this.total - this.end);
    return this.runs.slice(0, this.count);
  }

  get setPixels(): number {
    return this.area;
  }
}

/** Runs of a 0/1 (or 0/nonzero) pixel array. */
export function encodeRuns(pixels: ArrayLike<number>): Int32Array {
  const b = new RunBuilder(pixels.length);
  let k = 0;
  while (k < pixels.length) {
    if (!pixels[k]) { k++; continue; }
    const start = k;
    while (k < pixels.length && pixels[k]) k++;
    b.set(start, k);
  }
  return b.finish();
}

/** Writes a mask's runs as 0/1 bytes into `out` at `offset` (`total` pixels). */
export function decodeRunsInto(runs: Int32Array, out: Uint8Array, offset: number, total: number): void {
  let p = 0;
  for (let k = 0; k < runs.length; k++) {
    const len = runs[k]!;
    if (p + len > total || len < 0) throw new RangeError(`mask runs cover more than ${total} pixels`);
    if (k & 1) out.fill(1, offset + p, offset + p + len);
    p += len;
  }
  if (p !== total) throw new RangeError(`mask runs cover ${p} pixels, expected ${total}`);
}

/** Number of set pixels of a mask. */
export function runsArea(runs: Int32Array): number {
  let a = 0;
  for (let k = 1; k < runs.length; k += 2) a += runs[k]!;
  return a;
}

/** Pixels where two masks of the same size differ. */
export function runsXorCount(a: Int32Array, b: Int32Array): number {
  let ia = 0, ib = 0, ea = a[0] ?? 0, eb = b[0] ?? 0, va = 0, vb = 0, pos = 0, diff = 0;
  const total = a.reduce((s, v) => s + v, 0);
  while (pos < total) {
    while (ea <= pos && ia < a.length - 1) { ia++; ea += a[ia]!; va ^= 1; }
    while (eb <= pos && ib < b.length - 1) { ib++; eb += b[ib]!; vb ^= 1; }
    const next = Math.min(ea, eb);
    if (next <= pos) break;
    if (va !== vb) diff += next - pos;
    pos = next;
  }
  return diff;
}

/** A `width x height` mask's runs mirrored left-right. */
export function flipRuns(runs: Int32Array, width: number, height: number): Int32Array {
  const px = new Uint8Array(width * height);
  decodeRunsInto(runs, px, 0, width * height);
  for (let y = 0; y < height; y++) px.subarray(y * width, (y + 1) * width).reverse();
  return encodeRuns(px);
}

/** Pixels set in both of two masks of the same size (intersection area, without decoding). */
export function runsIntersection(a: Int32Array, b: Int32Array): number {
  let ia = 0, ib = 0, ea = a[0] ?? 0, eb = b[0] ?? 0, pos = 0, both = 0;
  // ia / ib index the current run; a run with an odd index is set. ea / eb: where it ends.
  for (;;) {
    while (ea <= pos && ia < a.length - 1) ea += a[++ia]!;
    while (eb <= pos && ib < b.length - 1) eb += b[++ib]!;
    const next = Math.min(ea, eb);
    if (next <= pos) return both;
    if (ia & 1 && ib & 1) both += next - pos;
    pos = next;
  }
}
