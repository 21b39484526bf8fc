/** config.*: the YAML itself (names, nc, splits and their paths). */
import type { Finding } from '../findings.ts';
import { pyRepr } from '../format.ts';
import { PyFloat, type PyValue } from '../pyjson.ts';
import { SPLITS, splitOf } from '../snapshot.ts';
import type { Check } from './types.ts';

/** Python truthiness of a YAML value (a missing, empty or zero split counts as not given). */
const given = (v: unknown): boolean => !(v === undefined || v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && v.length === 0)
  || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0));

export const CONFIG_CHECKS: readonly Check[] = [
  {
    id: 'config.missing_names', scan: false,
    run: (snap) => (snap.names.size === 0
      ? [{ checkId: 'config.missing_names', severity: 'error', message: "The YAML defines no class names ('names' is missing or empty)." }]
      : []),
  },
  {
    id: 'config.nc_names_mismatch', scan: false,
    run: (snap) => {
      const raw = snap.raw.nc;
      if (typeof raw !== 'number' || snap.names.size === 0 || raw === snap.names.size) return [];
      const ncValue: PyValue = snap.ncText?.includes('.') ? new PyFloat(raw) : raw;
      return [{
        checkId: 'config.nc_names_mismatch', severity: 'error', message: `nc=${snap.ncText ?? raw} but 'names' defines ${snap.names.size} classes.`,
        details: new Map<string, PyValue>([['nc', ncValue], ['names', snap.names.size]]),
      }];
    },
  },
  {
    id: 'config.missing_split', scan: false,
    run: (snap) => {
      const out: Finding[] = [];
      if (!given(snap.raw.train)) out.push({ checkId: 'config.missing_split', severity: 'error', message: "The YAML defines no 'train' split." });
      if (!given(snap.raw.val)) out.push({ checkId: 'config.missing_split', severity: 'warning', message: "The YAML defines no 'val' split; training cannot be evaluated." });
      return out;
    },
  },
  {
    id: 'config.path_not_found', scan: false,
    run: (snap, cfg) => {
      const out: Finding[] = [];
      for (const split of SPLITS) {
        if (!given(snap.raw[split])) continue;
        const entries = snap.entries[split] ?? [];
        const missing = entries.filter((e) => !e.exists).map((e) => e.path);
        const empty = entries.filter((e) => e.isDir && e.images === 0).map((e) => e.path);
        if (missing.length) out.push({ checkId: 'config.path_not_found', severity: 'error', message: `'${split}' path(s) do not exist.`, split, paths: missing.slice(0, cfg.maxExamples), count: missing.length });
        if (empty.length) out.push({ checkId: 'config.path_not_found', severity: 'error', message: `'${split}' path(s) exist but contain no images.`, split, paths: empty.slice(0, cfg.maxExamples), count: empty.length });
        // A .txt list of comments passes both tests above and still gives no images.
        if (!missing.length && !empty.length && !splitOf(snap, split)?.records.length) {
          out.push({ checkId: 'config.path_not_found', severity: 'error', message: `'${split}' resolves to no images.`, split, paths: entries.map((e) => e.path).slice(0, cfg.maxExamples) });
        }
      }
      return out;
    },
  },
  {
    id: 'config.duplicate_names', scan: false,
    run: (snap) => {
      const counts = new Map<string, number>();
      for (const n of snap.names.values()) counts.set(n, (counts.get(n) ?? 0) + 1);
      const dup = new Map([...counts].filter(([, n]) => n > 1));
      if (dup.size === 0) return [];
      const listing = [...dup].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, n]) => `${pyRepr(name)} x${n}`).join(', ');
      return [{
        checkId: 'config.duplicate_names', severity: 'warning', message: `Multiple class ids share the same name: ${listing}.`,
        details: new Map<string, PyValue>([['duplicates', new Map<string, PyValue>(dup)]]),
      }];
    },
  },
];
