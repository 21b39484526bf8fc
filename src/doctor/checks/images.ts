/**
 * images.* and splits.*: what the image pass found (skipped by --fast). Near duplicates use the
 * 64-bit difference hash cut into distance+1 bands: two hashes within the distance share at least
 * one intact band (pigeonhole), so only images sharing a band value are compared bit by bit.
 */
import { basename } from 'node:path';
import { MAX_BUCKET } from '../config.ts';
import type { Finding } from '../findings.ts';
import { general } from '../format.ts';
import type { PyValue } from '../pyjson.ts';
import { modeChannels, popcount32, type ImageScan } from '../scan.ts';
import type { ImageRecord } from '../snapshot.ts';
import type { Check } from './types.ts';

type Scanned = ImageRecord & { scan: ImageScan };
const scanned = (records: readonly ImageRecord[]): Scanned[] => records.filter((r): r is Scanned => r.scan !== null);
const decoded = (records: readonly ImageRecord[]): Scanned[] => scanned(records).filter((r) => r.scan.ok);

/** Pairs of records whose hashes are at most `maxDist` bits apart; each bucket pairs its first MAX_BUCKET members. */
export function nearPairs(records: readonly Scanned[], maxDist: number): Array<[Scanned, Scanned]> {
  const bands = maxDist + 1;
  const bits = BigInt(Math.floor(64 / bands));
  const mask = (1n << bits) - 1n;
  // The hashes as 32-bit halves: the pair loop compares numbers, not BigInts.
  const hi = new Uint32Array(records.length), lo = new Uint32Array(records.length);
  const buckets = new Map<string, number[]>();
  records.forEach((r, i) => {
    const h = r.scan.dhash;
    if (h === null) return;
    hi[i] = Number(h >> 32n);
    lo[i] = Number(h & 0xffffffffn);
    for (let b = 0; b < bands; b++) {
      const key = `${b}:${(h >> (BigInt(b) * bits)) & mask}`;
      const members = buckets.get(key);
      if (members) members.push(i); else buckets.set(key, [i]);
    }
  });
  const seen = new Set<number>();
  const pairs: Array<[Scanned, Scanned]> = [];
  for (const members of buckets.values()) {
    const m = members.length > MAX_BUCKET ? members.slice(0, MAX_BUCKET) : members;
    for (let x = 0; x < m.length; x++) {
      const i = m[x]!;
      for (let y = x + 1; y < m.length; y++) {
        const j = m[y]!;
        if (popcount32(hi[i]! ^ hi[j]!) + popcount32(lo[i]! ^ lo[j]!) > maxDist) continue;
        // A pair sharing several bands meets in several buckets: count it once.
        const key = i < j ? i * records.length + j : j * records.length + i;
        if (seen.has(key)) continue;
        seen.add(key);
        pairs.push([records[i]!, records[j]!]);
      }
    }
  }
  return pairs;
}

export const IMAGES_CHECKS: readonly Check[] = [
  {
    id: 'images.corrupt', scan: true,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const bad = scanned(s.records).filter((r) => !r.scan.ok);
      if (!bad.length) return [];
      const sample = bad.slice(0, 3).map((r) => `${basename(r.path)} (${r.scan.error})`).join('; ');
      return [{
        checkId: 'images.corrupt', severity: 'error', message: `${bad.length} image(s) cannot be decoded, e.g. ${sample}.`,
        split: s.name, paths: bad.slice(0, cfg.maxExamples).map((r) => r.path), count: bad.length,
      }];
    }),
  },
  {
    id: 'images.exif_orientation', scan: true,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const rotated = decoded(s.records).filter((r) => r.scan.orientation >= 2 && r.scan.orientation <= 8);
      return rotated.length ? [{
        checkId: 'images.exif_orientation', severity: 'warning',
        message: `${rotated.length} image(s) carry an EXIF orientation flag; annotations drawn on the rotated view will be misaligned in loaders that ignore EXIF. Bake the rotation into the pixels.`,
        split: s.name, paths: rotated.slice(0, cfg.maxExamples).map((r) => r.path), count: rotated.length,
      }] : [];
    }),
  },
  {
    id: 'images.odd_mode', scan: true,
    run: (snap, cfg) => {
      const records = snap.splits.flatMap((s) => decoded(s.records));
      const channels = new Map<number, number>();
      for (const r of records) {
        const c = modeChannels(r.scan.mode);
        if (c !== undefined) channels.set(c, (channels.get(c) ?? 0) + 1);
      }
      if (channels.size < 2) return [];
      // The majority layout; on a tie the first one seen.
      const majority = [...channels].reduce((m, x) => (x[1] > m[1] ? x : m))[0];
      const odd = records.filter((r) => { const c = modeChannels(r.scan.mode); return c !== undefined && c !== majority; });
      const modes = new Map<string, number>();
      for (const r of odd) modes.set(r.scan.mode, (modes.get(r.scan.mode) ?? 0) + 1);
      const listing = [...modes].sort((a, b) => b[1] - a[1]).map(([m, n]) => `${m} x${n}`).join(', ');
      return [{
        checkId: 'images.odd_mode', severity: 'warning',
        message: `${odd.length} image(s) have a different channel layout than the rest of the dataset (${listing}); they are converted implicitly and may train inconsistently.`,
        paths: odd.slice(0, cfg.maxExamples).map((r) => r.path), count: odd.length, details: new Map<string, PyValue>([['modes', new Map<string, PyValue>(modes)]]),
      }];
    },
  },
  {
    id: 'images.tiny_or_extreme', scan: true,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const bad = decoded(s.records).filter(({ scan: { width: w, height: h } }) =>
        w > 0 && h > 0 && (Math.min(w, h) < cfg.minImageSide || Math.max(w, h) / Math.min(w, h) > cfg.extremeImageAspect));
      return bad.length ? [{
        checkId: 'images.tiny_or_extreme', severity: 'warning',
        message: `${bad.length} image(s) are smaller than ${cfg.minImageSide} px a side or have an aspect ratio beyond ${general(cfg.extremeImageAspect)}:1.`,
        split: s.name, paths: bad.slice(0, cfg.maxExamples).map((r) => r.path), count: bad.length,
      }] : [];
    }),
  },
  {
    id: 'images.uniform', scan: true,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const flat = decoded(s.records).filter((r) => r.scan.uniform);
      return flat.length ? [{
        checkId: 'images.uniform', severity: 'warning',
        message: `${flat.length} image(s) are a single flat color (often failed downloads or padding artifacts).`,
        split: s.name, paths: flat.slice(0, cfg.maxExamples).map((r) => r.path), count: flat.length,
      }] : [];
    }),
  },
  {
    id: 'images.exact_duplicates', scan: true,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const groups = new Map<string, string[]>();
      for (const r of scanned(s.records)) {
        if (r.scan.sha1 === null) continue;
        const g = groups.get(r.scan.sha1);
        if (g) g.push(r.path); else groups.set(r.scan.sha1, [r.path]);
      }
      const dups = [...groups.values()].filter((g) => g.length > 1);
      if (!dups.length) return [];
      const extra = dups.reduce((k, g) => k + g.length - 1, 0);
      return [{
        checkId: 'images.exact_duplicates', severity: 'warning',
        message: `${extra} duplicate image(s) across ${dups.length} group(s) of byte-identical files; duplicates skew training statistics.`,
        split: s.name, paths: dups.flat().slice(0, cfg.maxExamples), count: extra,
      }];
    }),
  },
  {
    id: 'images.near_duplicates', scan: true,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      // Byte-identical copies are images.exact_duplicates' finding.
      const pairs = nearPairs(decoded(s.records), cfg.nearDuplicateDistance).filter(([a, b]) => a.scan.sha1 !== b.scan.sha1);
      return pairs.length ? [{
        checkId: 'images.near_duplicates', severity: 'info',
        message: `${pairs.length} pair(s) of visually near-identical images (perceptual hash); common with extracted video frames.`,
        split: s.name, paths: pairs.flatMap(([a, b]) => [a.path, b.path]).slice(0, cfg.maxExamples), count: pairs.length,
      }] : [];
    }),
  },
  {
    id: 'splits.leakage_exact', scan: true,
    run: (snap, cfg) => {
      const bySplit = snap.splits.map((s) => {
        const m = new Map<string, string>();
        for (const r of scanned(s.records)) if (r.scan.sha1 !== null) m.set(r.scan.sha1, r.path);
        return { name: s.name, bySha: m };
      });
      const out: Finding[] = [];
      for (let i = 0; i < bySplit.length; i++) {
        for (let j = i + 1; j < bySplit.length; j++) {
          const a = bySplit[i]!, b = bySplit[j]!;
          const shared = [...a.bySha.keys()].filter((h) => b.bySha.has(h)).map((h) => [a.bySha.get(h)!, b.bySha.get(h)!] as const);
          if (!shared.length) continue;
          shared.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
          out.push({
            checkId: 'splits.leakage_exact', severity: 'error',
            message: `${shared.length} identical image(s) appear in both ${a.name} and ${b.name}; validation metrics are inflated.`,
            paths: shared.flat().slice(0, cfg.maxExamples), count: shared.length, details: new Map<string, PyValue>([['splits', [a.name, b.name]]]),
          });
        }
      }
      return out;
    },
  },
  {
    id: 'splits.leakage_near', scan: true,
    run: (snap, cfg) => {
      const splitOfRecord = new Map<ImageRecord, string>();
      const all: Scanned[] = [];
      for (const s of snap.splits) for (const r of decoded(s.records)) { splitOfRecord.set(r, s.name); all.push(r); }
      const cross = nearPairs(all, cfg.nearDuplicateDistance).filter(([a, b]) => splitOfRecord.get(a) !== splitOfRecord.get(b) && a.scan.sha1 !== b.scan.sha1);
      return cross.length ? [{
        checkId: 'splits.leakage_near', severity: 'warning',
        message: `${cross.length} pair(s) of visually near-identical images span different splits; validation may be leaking.`,
        paths: cross.flatMap(([a, b]) => [a.path, b.path]).slice(0, cfg.maxExamples), count: cross.length,
      }] : [];
    },
  },
];
