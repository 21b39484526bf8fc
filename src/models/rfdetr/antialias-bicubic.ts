/**
 * PyTorch's antialiased bicubic resize (`F.interpolate(mode="bicubic", antialias=True,
 * align_corners=False)`) as a per-axis weight matrix, computed on the host: the position-embedding
 * grid is resized by two constant MatMuls, once per input size.
 *
 * Per output i: centre c = s*(i+0.5) with s = n_in/n_out; taps j in [max(trunc(c-support+0.5),0),
 * min(trunc(c+support+0.5),n_in)) with support = 2*max(s,1); weight k((j-c+0.5)*invscale) with the
 * a = -0.5 cubic and invscale = 1/s when downscaling; taps outside the input are dropped (not
 * clamped) and the weights renormalised to sum 1.
 */

function cubic(x: number): number {
  const a = -0.5;
  const t = Math.abs(x);
  if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((t - 5) * t + 8) * t * a - 4 * a;
  return 0;
}

/** `[nOut, nIn]` row-major weights; row i holds output i's taps. */
export function antialiasBicubicWeights(nIn: number, nOut: number): Float64Array {
  const w = new Float64Array(nOut * nIn);
  const s = nIn / nOut;
  const support = 2 * Math.max(s, 1);
  const invscale = s > 1 ? 1 / s : 1;
  for (let o = 0; o < nOut; o++) {
    const c = s * (o + 0.5);
    const lo = Math.max(Math.trunc(c - support + 0.5), 0);
    const hi = Math.min(Math.trunc(c + support + 0.5), nIn);
    let total = 0;
    for (let j = lo; j < hi; j++) total += cubic((j - c + 0.5) * invscale);
    for (let j = lo; j < hi; j++) w[o * nIn + j] = cubic((j - c + 0.5) * invscale) / total;
  }
  return w;
}
