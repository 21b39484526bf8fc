/** balance.*: how instances spread over classes and splits. */
import type { Finding } from '../findings.ts';
import { fixed, percent, round } from '../format.ts';
import { PyFloat, type PyValue } from '../pyjson.ts';
import { isBackground, splitOf, type DatasetSnapshot } from '../snapshot.ts';
import { classCounts, className, type Check } from './types.ts';

const inRange = (snap: DatasetSnapshot, id: number): boolean => snap.nc === null || (id >= 0 && id < snap.nc);

/** The train split's class counts, or null when there is no train split or it has no images. */
function trainCounts(snap: DatasetSnapshot): Map<number, number> | null {
  const train = splitOf(snap, 'train');
  return train?.records.length ? classCounts(train.records) : null;
}

export const BALANCE_CHECKS: readonly Check[] = [
  {
    id: 'balance.class_zero_instances', scan: false,
    run: (snap) => {
      const counts = trainCounts(snap);
      if (!counts || snap.nc === null) return [];
      const missing: number[] = [];
      for (let c = 0; c < snap.nc; c++) if (!counts.get(c)) missing.push(c);
      if (!missing.length) return [];
      const listing = missing.slice(0, 10).map((c) => className(snap, c)).join(', ');
      return [{
        checkId: 'balance.class_zero_instances', severity: 'warning',
        message: `${missing.length} class(es) have zero training instances: ${listing}${missing.length > 10 ? '...' : ''}. The model can never learn them.`,
        split: 'train', count: missing.length, details: new Map<string, PyValue>([['classes', missing.map((c) => className(snap, c))]]),
      }];
    },
  },
  {
    id: 'balance.class_few_instances', scan: false,
    run: (snap, cfg) => {
      const counts = trainCounts(snap);
      if (!counts) return [];
      const few = [...counts].filter(([c, n]) => n > 0 && n < cfg.fewInstances && inRange(snap, c));
      if (!few.length) return [];
      const listing = [...few].sort(([a], [b]) => a - b).slice(0, 10).map(([c, n]) => `${className(snap, c)} (${n})`).join(', ');
      return [{
        checkId: 'balance.class_few_instances', severity: 'warning',
        message: `${few.length} class(es) have fewer than ${cfg.fewInstances} training instances: ${listing}.`,
        split: 'train', count: few.length, details: new Map<string, PyValue>([['classes', new Map<string, PyValue>(few.map(([c, n]) => [className(snap, c), n]))]]),
      }];
    },
  },
  {
    id: 'balance.imbalance', scan: false,
    run: (snap, cfg) => {
      const counts = trainCounts(snap);
      if (!counts) return [];
      const known = [...counts].filter(([c, n]) => n > 0 && inRange(snap, c));
      if (known.length < 2) return [];
      const most = known.reduce((m, x) => (x[1] > m[1] ? x : m));
      const least = known.reduce((m, x) => (x[1] < m[1] ? x : m));
      const ratio = most[1] / least[1];
      if (ratio < 1.5) return []; // near-balanced is not worth a line
      return [{
        checkId: 'balance.imbalance', severity: ratio > cfg.imbalanceWarnRatio ? 'warning' : 'info',
        message: `Class imbalance ${fixed(ratio, 1)}:1 - most: ${className(snap, most[0])} (${most[1]}), least: ${className(snap, least[0])} (${least[1]}).`,
        split: 'train', details: new Map<string, PyValue>([['ratio', new PyFloat(round(ratio, 1))]]),
      }];
    },
  },
  {
    id: 'balance.split_coverage', scan: false,
    run: (snap) => {
      const train = splitOf(snap, 'train'), val = splitOf(snap, 'val');
      if (!train?.records.length || !val?.records.length) return [];
      // Out-of-range ids are labels.class_out_of_range's finding, not coverage's.
      const known = (m: Map<number, number>): Set<number> => new Set([...m].filter(([c, n]) => n > 0 && inRange(snap, c)).map(([c]) => c));
      const t = known(classCounts(train.records)), v = known(classCounts(val.records));
      const onlyVal = [...v].filter((c) => !t.has(c)).sort((a, b) => a - b);
      const onlyTrain = [...t].filter((c) => !v.has(c)).sort((a, b) => a - b);
      const out: Finding[] = [];
      const add = (ids: number[], text: string): void => {
        if (!ids.length) return;
        out.push({
          checkId: 'balance.split_coverage', severity: 'warning',
          message: `${ids.length} class(es) appear in ${text.replace('{names}', ids.slice(0, 10).map((c) => className(snap, c)).join(', '))}`,
          count: ids.length, details: new Map<string, PyValue>([['classes', ids.map((c) => className(snap, c))]]),
        });
      };
      add(onlyVal, 'val but never in train: {names}. Validation scores them at zero.');
      add(onlyTrain, 'train but never in val: {names}. Their metrics are blind.');
      return out;
    },
  },
  {
    id: 'balance.background_ratio', scan: false,
    run: (snap, cfg) => snap.splits.flatMap((s): Finding[] => {
      if (!s.records.length) return [];
      const bg = s.records.filter(isBackground).length;
      if (!bg) return []; // no background is the unremarkable default
      const ratio = bg / s.records.length;
      return [{
        checkId: 'balance.background_ratio', severity: ratio > cfg.backgroundWarnRatio ? 'warning' : 'info',
        message: `${bg} of ${s.records.length} images (${percent(ratio, 1)}) have no annotations (background).`,
        split: s.name, count: bg, details: new Map<string, PyValue>([['ratio', new PyFloat(round(ratio, 4))]]),
      }];
    }),
  },
  {
    id: 'balance.split_skew', scan: false,
    run: (snap, cfg) => {
      const train = splitOf(snap, 'train'), val = splitOf(snap, 'val');
      if (!train || !val) return [];
      const t = classCounts(train.records), v = classCounts(val.records);
      // The totals include out-of-range ids, as the original's do.
      const tTotal = [...t.values()].reduce((a, b) => a + b, 0), vTotal = [...v.values()].reduce((a, b) => a + b, 0);
      if (!tTotal || !vTotal) return [];
      const skewed: Array<[number, number]> = [];
      for (const c of [...new Set([...t.keys(), ...v.keys()])].sort((a, b) => a - b)) {
        if (!inRange(snap, c)) continue;
        const d = Math.abs((t.get(c) ?? 0) / tTotal - (v.get(c) ?? 0) / vTotal);
        if (d > cfg.splitSkewPoints) skewed.push([c, d]);
      }
      if (!skewed.length) return [];
      const listing = [...skewed].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([c, d]) => `${className(snap, c)} (${percent(d, 0)})`).join(', ');
      return [{
        checkId: 'balance.split_skew', severity: 'info',
        message: `Class distribution differs between train and val by more than ${percent(cfg.splitSkewPoints, 0)} for ${skewed.length} class(es): ${listing}.`,
        count: skewed.length, details: new Map<string, PyValue>([['classes', new Map<string, PyValue>(skewed.map(([c, d]) => [className(snap, c), new PyFloat(round(d, 3))]))]]),
      }];
    },
  },
];
