/** Segment parity fixtures (../shared/fixtures/*_seg_ref_io): reference detections with run-length masks, compared as sets. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadCheckpointFile, saveCheckpointPt, type CheckpointMetadata } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fixture } from './fixtures.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { runsXorCount } from '../../src/data/masks/rle.ts';

/** The reference detections of one case, masks as runs. */
export function referenceDetections(io: Map<string, HostTensor>, prefix: string, suffix: string): Array<{ box: Float32Array; cls: number; score: number; runs: Int32Array }> {
  const boxes = io.get(`${prefix}boxes_xyxy${suffix}`)!.data as Float32Array;
  const scores = io.get(`${prefix}scores${suffix}`)!.data as Float32Array;
  const classes = io.get(`${prefix}classes${suffix}`)!.data as BigInt64Array;
  const rle = io.get(`${prefix}masks_rle${suffix}`)!.data as Int32Array;
  const offsets = io.get(`${prefix}masks_rle_offsets${suffix}`)!.data as BigInt64Array;
  return Array.from(scores, (score, i) => ({
    box: boxes.subarray(4 * i, 4 * i + 4), cls: Number(classes[i]), score, runs: rle.subarray(Number(offsets[i]), Number(offsets[i + 1])),
  }));
}

/**
 * Matches our detections to the reference's as sets (same class, nearest box), then counts the
 * differing pixels of each matched mask; returns per reference row [box error, differing pixels].
 */
export function compareAsSets(got: { xyxy: Float32Array; cls: Float32Array; runs: readonly Int32Array[] }, ref: ReturnType<typeof referenceDetections>): Array<{ box: number; pixels: number }> {
  assert.equal(got.cls.length, ref.length, 'detection count');
  const used = new Set<number>();
  const out: Array<{ box: number; pixels: number }> = new Array(ref.length);
  for (let i = 0; i < got.cls.length; i++) {
    let best = -1, err = Infinity;
    ref.forEach((r, j) => {
      if (used.has(j) || r.cls !== got.cls[i]) return;
      let d = 0;
      for (let q = 0; q < 4; q++) d = Math.max(d, Math.abs(r.box[q]! - got.xyxy[4 * i + q]!));
      if (d < err) { err = d; best = j; }
    });
    assert.ok(best >= 0, `detection ${i} (class ${got.cls[i]}) has no reference partner`);
    used.add(best);
    out[best] = { box: err, pixels: runsXorCount(got.runs[i]!, ref[best]!.runs) };
  }
  return out;
}

export function assertWithinFloors(label: string, cmp: Array<{ box: number; pixels: number }>, allowed: number[], diagnostic: (m: string) => void): void {
  diagnostic(`${label}: differing pixels per mask ${cmp.map((c) => c.pixels).join(',')} (allowed ${allowed.join(',')}); max box error ${Math.max(...cmp.map((c) => c.box)).toExponential(2)} px`);
  cmp.forEach((c, i) => {
    assert.ok(c.box <= 1e-2, `${label} detection ${i}: box error ${c.box} px`);
    assert.ok(c.pixels <= allowed[i]!, `${label} mask ${i}: ${c.pixels} pixels differ, more than its ${allowed[i]} near-threshold pixels`);
  });
}


/**
 * RF-DETR-seg nano rebuilt as the fixtures README says: `rfdetrn_ref.pt` plus the int8 delta
 * (float32(q) * 2^k), the query tables' rows [300g, 300g + 100) per group, the other tensors as they
 * are; checked against the delta's SHA-256 of the merged state, then saved as the original's v1.0
 * checkpoint (its checkpoint fields) at `path`.
 */
export async function mergeRfdetrSegNano(path: string): Promise<{ stateDict: Map<string, HostTensor>; sha256: string; expected: string }> {
  const delta = readSafetensors(new Uint8Array(readFileSync(fixture('rfdetrn_seg_delta.safetensors'))), 'rfdetrn_seg_delta');
  const md = delta.metadata;
  const detPath = fixture(md.det_checkpoint!);
  assert.equal(createHash('sha256').update(readFileSync(detPath)).digest('hex'), md.det_checkpoint_sha256, 'rfdetrn_ref.pt is the file the delta was made against');
  const det = (await loadCheckpointFile(detPath)).stateDict;
  const exp2 = JSON.parse(md.int8_exp2!) as Record<string, number>;
  const keys = JSON.parse(md.state_dict_keys!) as string[];
  const derived = new Set(JSON.parse(md.derived!) as string[]);
  const out = new Map<string, HostTensor>();
  const hash = createHash('sha256');
  for (const key of keys) {
    let t: HostTensor;
    const q = delta.tensors.get(key);
    if (q) {
      assert.equal(q.dtype, 'int8', key);
      const scale = 2 ** exp2[key]!;
      t = { dtype: 'float32', dims: [...q.dims], data: Float32Array.from(q.data as Int8Array, (v) => v * scale) };
    } else if (derived.has(key)) {
      const src = det.get(key)!;
      const width = src.dims[1]!;
      const data = new Float32Array(13 * 100 * width);
      for (let g = 0; g < 13; g++) data.set((src.data as Float32Array).subarray(300 * g * width, (300 * g + 100) * width), 100 * g * width);
      t = { dtype: 'float32', dims: [1300, width], data };
    } else {
      t = det.get(key)!;
      assert.ok(t, `${key} is neither in the delta nor in rfdetrn_ref.pt`);
    }
    const f = t.data as Float32Array;
    hash.update(new Uint8Array(f.buffer, f.byteOffset, f.byteLength));
    out.set(key, t);
  }
  const fields = JSON.parse(md.checkpoint_fields!) as CheckpointMetadata;
  await saveCheckpointPt(path, out, fields);
  return { stateDict: out, sha256: hash.digest('hex'), expected: md.merged_state_sha256! };
}
