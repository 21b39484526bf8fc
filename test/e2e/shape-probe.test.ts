/**
 * probeShapes (the autodiff's source of static shapes) costs one forward's live memory, not the sum
 * of every value: static dims come from ORT's inference without a run, data-dependent ones from a
 * run with only their Shape as outputs. Measured in a child process so the bound is its own peak RSS.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../helpers/fixtures.ts';

const DEPTH = 40;
const VALUE_MB = 32;
// Node + tsx + ORT take ~150 MB; a forward's live values here are a few 32 MB tensors. Keeping all
// 40 chain values (the old probe) needs >= 1280 MB on top, copied to JS as well.
const PEAK_RSS_BOUND_MB = 600;

describe('probeShapes', () => {
  it(`probes a ${DEPTH}-value chain of ${VALUE_MB} MB tensors without holding its values (peak RSS < ${PEAK_RSS_BOUND_MB} MB)`, () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'test', 'helpers', 'shape-probe-child.ts'), String(DEPTH)], {
      cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000,
    });
    const r = JSON.parse(out.trim().split('\n').pop()!) as {
      peakRssMb: number; chain: Array<{ dims: number[]; dtype: string }>; mask: { dims: number[]; dtype: string }; shape: { dims: number[]; dtype: string }; nonzero: { dims: number[]; dtype: string };
    };
    assert.equal(r.chain.length, DEPTH);
    for (const m of r.chain) assert.deepEqual(m, { dims: [8, 1024, 1024], dtype: 'float32' });
    assert.deepEqual(r.mask, { dims: [8, 1024, 1024], dtype: 'bool' });
    assert.deepEqual(r.shape, { dims: [3], dtype: 'int64' });
    assert.deepEqual(r.nonzero, { dims: [1, 3], dtype: 'int64' }, 'a data-dependent shape comes from a run');
    assert.ok(r.peakRssMb < PEAK_RSS_BOUND_MB, `peak RSS ${r.peakRssMb.toFixed(0)} MB >= ${PEAK_RSS_BOUND_MB} MB`);
    console.log(`# probeShapes peak RSS ${r.peakRssMb.toFixed(0)} MB`);
  });
});
