/**
 * The profiler at scale: a trace of 2,000,000+ synthetic ORT events is written by the trace writer
 * and analysed back by streaming, with the process's peak RSS asserted under PEAK_RSS_MB (the
 * bound the README states). The reader's shapes and errors are in test/unit/json-stream.test.ts.
 * Its own file, so the peak RSS is this test's alone.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { analyzeTraceFile } from '../../src/profile/analyze-file.ts';
import { loadProfile } from '../../src/profile/load.ts';
import { TraceWriter } from '../../src/profile/trace-writer.ts';
import { NodeTimes, traceCap } from '../../src/profile/train-timeline.ts';
import { peakRssKb } from '../helpers/peak-rss.ts';

/** Peak resident set of this whole test process (MB): the README's stated budget. */
const PEAK_RSS_MB = 450;
const STEPS = 400;
const NODES_PER_STEP = 5000;
const STEP_US = 100_000;

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ly-profile-scale-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A training-like trace: per step a marker, forward/backward phase spans, and 5000 ORT node events. */
async function writeSyntheticTrace(path: string): Promise<number> {
  const w = await TraceWriter.open(path);
  const t0 = 1.7e15;
  for (let s = 0; s < STEPS; s++) {
    const base = t0 + s * STEP_US;
    await w.write({ ph: 'X', cat: 'user_annotation', name: `ProfilerStep#${s}`, ts: base, dur: STEP_US, pid: 1, tid: 1 });
    await w.write({ ph: 'X', cat: 'user_annotation', name: 'step/forward', ts: base, dur: STEP_US / 2, pid: 1, tid: 2 });
    await w.write({ ph: 'X', cat: 'user_annotation', name: 'step/backward', ts: base + STEP_US / 2, dur: STEP_US / 2, pid: 1, tid: 2 });
    for (let k = 0; k < NODES_PER_STEP; k++) {
      const backward = k >= NODES_PER_STEP / 2;
      const op = k % 3 === 0 ? 'Conv' : k % 3 === 1 ? 'Mul' : 'Sigmoid';
      await w.write({
        ph: 'X', cat: 'Node', name: `${backward ? '/backward' : ''}/model.${k % 250}/${op}`, ts: base + k * 20, dur: 10, pid: 10, tid: 0,
        args: { op_name: op, provider: 'CPUExecutionProvider' },
      });
    }
  }
  await w.close();
  return w.count;
}

describe('profile at scale', () => {
  it('writes and analyses back a trace of 2,000,000+ events in bounded memory', { timeout: 600_000 }, async () => {
    const path = join(dir, 'profile_trace.json');
    const written = await writeSyntheticTrace(path);
    assert.ok(written >= 2_000_000, `${written} events`);
    const mb = statSync(path).size / 1e6;
    const a = await analyzeTraceFile(path, { summary: { meta: { batch: 16, mode: 'train' } }, tracePath: path });
    assert.equal(a.window.real_steps, 6);
    assert.equal(a.kernels_per_step, NODES_PER_STEP);
    assert.equal(a.mean_kernel_us, 10);
    assert.deepEqual(a.phases.map((p) => [p.phase, p.kernels_per_step]), [['forward', NODES_PER_STEP / 2], ['backward', NODES_PER_STEP / 2]]);
    assert.equal(a.unique_kernels, 3);
    // The readers' loader streams a file this size too.
    const again = await loadProfile(path);
    assert.equal(again.kernels_per_step, NODES_PER_STEP);
    const peak = peakRssKb() / 1024;
    assert.ok(peak < PEAK_RSS_MB, `peak RSS ${peak.toFixed(0)} MB for a ${mb.toFixed(0)} MB trace of ${written} events (bound ${PEAK_RSS_MB} MB)`);
    process.stderr.write(`# ${written} events, ${mb.toFixed(0)} MB trace, peak RSS ${peak.toFixed(0)} MB\n`);
  });

  it('caps a trace that would be too large: the analysis window and the longest steps keep their node events', () => {
    const steps = Array.from({ length: 20 }, (_, k) => ({ index: k, ts: k * 1000, dur: k === 15 ? 900 : 500 }));
    const ts = new Float64Array(20 * 100);
    for (let k = 0; k < 20; k++) for (let i = 0; i < 100; i++) ts[k * 100 + i] = k * 1000 + i;
    const nodes = new NodeTimes(ts, new Uint8Array(ts.length));
    assert.equal(traceCap([{ nodes }], steps, 2000).keep, null, 'within the cap: everything is kept');
    const cap = traceCap([{ nodes }], steps, 1000);
    assert.ok(cap.keep && cap.note);
    const kept = steps.filter((s) => cap.keep!(s.ts + 1)).map((s) => s.index);
    // Window markers 2..7, then the longest (15), then the others in order, up to 10 steps and the cap.
    assert.deepEqual(kept, [0, 1, 2, 3, 4, 5, 6, 7, 8, 15]);
    assert.equal(traceCap([{ nodes }], steps, 650).note?.includes('steps 2, 3, 4, 5, 6, 7 '), true, 'the window is kept even when little else fits');
    assert.match(cap.note!, /^trace capped at 1000 ORT node events \(the window had 2000\): node events are kept for steps 0, 1, 2, 3, 4, 5, 6, 7, 8, 15 \(the analysis window/);
  });
});
