/** files.*: how images and label files pair up on disk. */
import { readdirSync, opendirSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { DATASET_IMAGE_SUFFIXES } from '../../data/dataset.ts';
import type { Finding } from '../findings.ts';
import type { Check } from './types.ts';

/** Files that legitimately live beside images and labels. */
const COMPANION_LABELS = new Set(['classes.txt', 'labels.txt']);
const COMPANION_SUFFIXES = new Set(['.txt', '.cache', '.json', '.xml', '.yaml', '.yml', '.csv']);

const byPath = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const isDir = (p: string): boolean => { try { return statSync(p).isDirectory(); } catch { return false; } };

/** Every regular file below `dir` (links to files included, linked folders not entered), one folder listing at a time. */
function* walkFiles(dir: string): Generator<string> {
  const stack = [dir];
  while (stack.length) {
    const d = stack.pop()!;
    let handle;
    try { handle = opendirSync(d); } catch { continue; }
    try {
      for (let e = handle.readSync(); e !== null; e = handle.readSync()) {
        const full = join(d, e.name);
        if (e.isDirectory()) stack.push(full);
        else if (e.isFile()) yield full;
        else if (e.isSymbolicLink()) { try { if (statSync(full).isFile()) yield full; } catch { /* dangling */ } }
      }
    } finally {
      handle.closeSync();
    }
  }
}

export const FILES_CHECKS: readonly Check[] = [
  {
    id: 'files.missing_label', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const missing = s.records.filter((r) => !r.labelExists && r.imageExists);
      return missing.length ? [{
        checkId: 'files.missing_label', severity: 'info',
        message: `${missing.length} of ${s.records.length} images have no label file (treated as background during training).`,
        split: s.name, paths: missing.slice(0, cfg.maxExamples).map((r) => r.path), count: missing.length,
      }] : [];
    }),
  },
  {
    id: 'files.missing_image', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const missing = s.records.filter((r) => !r.imageExists);
      return missing.length ? [{
        checkId: 'files.missing_image', severity: 'error',
        message: `${missing.length} image(s) are listed in the split but missing on disk; training crashes when it tries to read them.`,
        split: s.name, paths: missing.slice(0, cfg.maxExamples).map((r) => r.path), count: missing.length,
      }] : [];
    }),
  },
  {
    id: 'files.orphan_label', scan: false,
    run: (snap, cfg) => {
      // Splits may share one labels folder, so a label is an orphan only when no split's image claims it.
      const expected = new Set<string>();
      const labelDirs = new Set<string>();
      for (const s of snap.splits) for (const r of s.records) { expected.add(resolve(r.labelPath)); labelDirs.add(dirname(r.labelPath)); }
      const orphans: string[] = [];
      for (const d of labelDirs) {
        if (!isDir(d)) continue;
        for (const name of readdirSync(d)) {
          if (!name.endsWith('.txt') || COMPANION_LABELS.has(name)) continue;
          const p = join(d, name);
          if (!expected.has(resolve(p))) orphans.push(p);
        }
      }
      if (!orphans.length) return [];
      return [{
        checkId: 'files.orphan_label', severity: 'warning',
        message: `${orphans.length} label file(s) have no matching image; they are silently ignored by training.`,
        paths: orphans.sort(byPath).slice(0, cfg.maxExamples), count: orphans.length,
      }];
    },
  },
  {
    id: 'files.unsupported_ext', scan: false,
    run: (snap, cfg) => {
      const out: Finding[] = [];
      for (const [split, entries] of Object.entries(snap.entries)) {
        const offenders: string[] = [];
        for (const e of entries ?? []) {
          if (!e.isDir) continue;
          for (const f of walkFiles(e.path)) {
            const suffix = extname(f).toLowerCase();
            if (DATASET_IMAGE_SUFFIXES.has(suffix) || COMPANION_SUFFIXES.has(suffix) || basename(f).startsWith('.')) continue;
            offenders.push(f);
          }
        }
        if (offenders.length) {
          out.push({
            checkId: 'files.unsupported_ext', severity: 'warning',
            message: `${offenders.length} non-image file(s) in the image directory are ignored by the loader.`,
            split, paths: offenders.sort(byPath).slice(0, cfg.maxExamples), count: offenders.length,
          });
        }
      }
      return out;
    },
  },
  {
    id: 'files.case_collision', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      const groups = new Map<string, string[]>();
      for (const r of s.records) {
        const k = r.labelPath.toLowerCase();
        const g = groups.get(k);
        if (g) g.push(r.path); else groups.set(k, [r.path]);
      }
      const collisions = [...groups.values()].filter((g) => g.length > 1);
      if (!collisions.length) return [];
      return [{
        checkId: 'files.case_collision', severity: 'warning',
        message: `${collisions.length} group(s) of images map to the same label file (same stem, different case or extension); their annotations are ambiguous.`,
        split: s.name, paths: collisions.flat().slice(0, cfg.maxExamples), count: collisions.length,
      }];
    }),
  },
];
