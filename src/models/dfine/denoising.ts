/**
 * Contrastive denoising draws on the host (the original's
 * `get_contrastive_denoising_training_group`), as the train forward's inputs (DFINE_DN_INPUTS):
 * G_max = most gts in one image, G = max(100 div G_max, 1) groups of G_max positive then G_max
 * negative slots, each image's gts tiled into them (padding slots keep class nc). Label noise:
 * a real slot whose uniform draw is < label_noise / 2 takes a uniform class. Box noise: each xyxy
 * corner of a real slot moves by sign * r * half its size (r in [0, 1) for positives, [1, 2) for
 * negatives), clipped to [0, 1], back to cxcywh with negative sizes made positive, in logit space.
 * The draws come from a seeded generator in the original's order (label uniforms, random labels,
 * signs, magnitudes); torch's generator itself cannot be replayed, so parity tests inject the
 * fixture's stored draws instead.
 *
 * `slots` may exceed the 2 G_max G real queries: the extra slots are inert padding (no query sees
 * them, they see only themselves), so one graph serves every batch whatever its G_max.
 */
import type { HostTensor } from '../../graph/tensor.ts';
import { denoisingPositiveIdx, type ImageTargets } from './matcher.ts';
import { DFINE_DN_INPUTS, type DfineDnDraw } from './train-outputs.ts';

/** The original's denoising settings (every D-FINE size). */
export const DFINE_DENOISING = { numDenoising: 100, labelNoise: 0.5, boxNoise: 1.0, queries: 300 } as const;

/** G and the real denoising query count 2 G_max G for a batch whose largest image has `maxGt` gts. */
export function denoisingGroups(maxGt: number, numDenoising: number = DFINE_DENOISING.numDenoising): { groups: number; numDn: number } {
  if (maxGt <= 0) return { groups: 0, numDn: 0 };
  const groups = Math.max(Math.floor(numDenoising / maxGt), 1);
  return { groups, numDn: 2 * maxGt * groups };
}

/**
 * The self-attention mask over `slots + queries` queries, 1 = blocked: the matching queries see no
 * denoising slot; a denoising group sees its own slots and the matching queries; a padding slot
 * (at or after 2 G_max G) sees only itself.
 */
export function denoisingAttnMask(maxGt: number, groups: number, slots: number, queries: number = DFINE_DENOISING.queries): Uint8Array {
  const numDn = 2 * maxGt * groups;
  if (slots < numDn) throw new Error(`denoisingAttnMask: ${slots} slots for ${numDn} denoising queries`);
  const t = slots + queries;
  const mask = new Uint8Array(t * t);
  const group = (j: number): number => Math.floor(j / (2 * maxGt));
  for (let i = 0; i < t; i++) {
    const padding = i >= numDn && i < slots;
    for (let j = 0; j < t; j++) {
      const open = padding ? j === i : j >= slots || (i < numDn && j < numDn && group(j) === group(i));
      mask[i * t + j] = open ? 0 : 1;
    }
  }
  return mask;
}

/** float32 inverse_sigmoid: log(max(x', 1e-5) / max(1 - x', 1e-5)), x' = clip(x, 0, 1). */
function inverseSigmoid(x: number): number {
  const c = Math.min(Math.max(x, 0), 1);
  return Math.fround(Math.log(Math.fround(Math.max(c, 1e-5)) / Math.fround(Math.max(Math.fround(1 - c), 1e-5))));
}

export interface DenoisingOptions {
  nc: number;
  /** Uniform [0, 1) source (a seeded mulberry32 in training). */
  rand: () => number;
  /** Input slots (default: exactly 2 G_max G); more pads with inert slots. */
  slots?: number;
  numDenoising?: number;
  labelNoise?: number;
  boxNoise?: number;
  queries?: number;
}

/** One batch's denoising draws for `targets` (per image: classes and cxcywh boxes normalised 0..1). */
export function drawDenoising(targets: readonly ImageTargets[], o: DenoisingOptions): DfineDnDraw {
  const f = Math.fround;
  const batch = targets.length;
  const queries = o.queries ?? DFINE_DENOISING.queries;
  const numGts = targets.map((t) => t.labels.length);
  const { positiveIdx, maxGts: maxGt } = denoisingPositiveIdx(numGts);
  const { groups, numDn } = denoisingGroups(maxGt, o.numDenoising);
  const slots = o.slots ?? numDn;
  if (slots < numDn) throw new Error(`drawDenoising: ${slots} slots cannot hold ${numDn} denoising queries (G_max ${maxGt}, ${groups} groups)`);
  const n = batch * slots;
  const cls = new BigInt64Array(n).fill(BigInt(o.nc));
  const unact = new Float32Array(n * 4);
  const real = (b: number, j: number): boolean => j < numDn && j % maxGt < numGts[b]!;
  // The original draws every tensor over all 2 G_max G slots, in this order.
  const slot = (k: number): [number, number] => [Math.floor(k / numDn), k % numDn];
  const count = batch * numDn;
  const labelU = Array.from({ length: count }, () => o.rand());
  const labelNew = Array.from({ length: count }, () => Math.floor(o.rand() * o.nc));
  const signs = Array.from({ length: count * 4 }, () => (o.rand() < 0.5 ? -1 : 1));
  const parts = Array.from({ length: count * 4 }, () => o.rand());
  const noise = (o.labelNoise ?? DFINE_DENOISING.labelNoise) * 0.5;
  const scale = o.boxNoise ?? DFINE_DENOISING.boxNoise;
  for (let k = 0; k < count; k++) {
    const [b, j] = slot(k);
    const out = b * slots + j;
    const g = j % maxGt;
    const isReal = real(b, j);
    if (isReal) cls[out] = BigInt(labelU[k]! < noise ? labelNew[k]! : targets[b]!.labels[g]!);
    const box = isReal ? Array.from(targets[b]!.boxes.subarray(g * 4, g * 4 + 4)) : [0, 0, 0, 0];
    const [cx, cy, w, h] = box as [number, number, number, number];
    const negative = j % (2 * maxGt) >= maxGt;
    const half = [f(w * 0.5), f(h * 0.5), f(w * 0.5), f(h * 0.5)];
    const xyxy = [f(cx - half[0]!), f(cy - half[1]!), f(cx + half[2]!), f(cy + half[3]!)].map((v, c) => {
      const r = negative ? f(parts[k * 4 + c]! + 1) : f(parts[k * 4 + c]!);
      return Math.min(Math.max(f(v + f(signs[k * 4 + c]! * f(r * f(half[c]! * scale)))), 0), 1);
    });
    const [x1, y1, x2, y2] = xyxy as [number, number, number, number];
    const cxcywh = [f(f(x1 + x2) / 2), f(f(y1 + y2) / 2), f(x2 - x1), f(y2 - y1)].map(Math.abs);
    cxcywh.forEach((v, c) => { unact[out * 4 + c] = inverseSigmoid(v); });
  }
  const inputs: Record<string, HostTensor> = slots === 0 ? {} : {
    [DFINE_DN_INPUTS.queryClass]: { dtype: 'int64', dims: [batch, slots], data: cls },
    [DFINE_DN_INPUTS.queryBboxUnact]: { dtype: 'float32', dims: [batch, slots, 4], data: unact },
    [DFINE_DN_INPUTS.attnMask]: { dtype: 'bool', dims: [slots + queries, slots + queries], data: denoisingAttnMask(maxGt, groups, slots, queries) },
  };
  return { inputs, maxGt, numGroup: groups, numDn, slots, positiveIdx: positiveIdx.map((p) => Int32Array.from(p)) };
}

/**
 * Pads stored draws (the fixture's, or drawDenoising's) to `slots` inert slots: class nc, reference
 * 0 in logit space, and the mask extended as denoisingAttnMask builds it.
 */
export function padDenoisingInputs(inputs: Record<string, HostTensor>, maxGt: number, groups: number, slots: number, nc: number, queries: number = DFINE_DENOISING.queries): Record<string, HostTensor> {
  const cls = inputs[DFINE_DN_INPUTS.queryClass]!;
  const [batch, have] = cls.dims as [number, number];
  if (slots < have) throw new Error(`padDenoisingInputs: ${slots} slots < the ${have} stored`);
  const outCls = new BigInt64Array(batch * slots).fill(BigInt(nc));
  const outRef = new Float32Array(batch * slots * 4);
  const ref = inputs[DFINE_DN_INPUTS.queryBboxUnact]!.data as Float32Array;
  for (let b = 0; b < batch; b++) {
    outCls.set((cls.data as BigInt64Array).subarray(b * have, (b + 1) * have), b * slots);
    outRef.set(ref.subarray(b * have * 4, (b + 1) * have * 4), b * slots * 4);
  }
  return {
    [DFINE_DN_INPUTS.queryClass]: { dtype: 'int64', dims: [batch, slots], data: outCls },
    [DFINE_DN_INPUTS.queryBboxUnact]: { dtype: 'float32', dims: [batch, slots, 4], data: outRef },
    [DFINE_DN_INPUTS.attnMask]: { dtype: 'bool', dims: [slots + queries, slots + queries], data: denoisingAttnMask(maxGt, groups, slots, queries) },
  };
}
