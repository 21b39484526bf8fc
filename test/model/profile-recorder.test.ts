/**
 * The recorder on a real ORT session, driven the way a training loop would drive it (its own phases,
 * steps and mode), and the repeat aggregates.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LibreYOLO } from '../../src/load.ts';
import type { LibreYOLOModel } from '../../src/model.ts';
import { aggregateInferTrials, aggregateRunTrials } from '../../src/profile/aggregate.ts';
import { loadProfile } from '../../src/profile/load.ts';
import { ortClockOffset } from '../../src/profile/ort-events.ts';
import { ORT_DIR_PREFIX, ProfileRecorder } from '../../src/profile/recorder.ts';
import type { ProfileAnalysis, TraceEvent } from '../../src/profile/schema.ts';
import { finalizeProfile } from '../../src/profile/write.ts';
import { recordSpan, span } from '../../src/runtime/spans.ts';
import { fixture } from '../helpers/fixtures.ts';

let dir: string;
let model: LibreYOLOModel;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ly-profile-rec-'));
  model = await LibreYOLO(fixture('yolo9t_ref.pt'));
});
after(async () => {
  await model?.close();
  await rm(dir, { recursive: true, force: true });
});

const ortTempDirs = async (): Promise<string[]> => (await readdir(tmpdir())).filter((n) => n.startsWith(`${ORT_DIR_PREFIX}${process.pid}-`)).sort();

describe('ProfileRecorder', () => {
  it('records a training-style loop: its phases, steps and mode, ORT kernels on the host clock', async () => {
    const tempBefore = await ortTempDirs();
    const x = { dtype: 'float32' as const, dims: [1, 3, 64, 64], data: new Float32Array(3 * 64 * 64).fill(0.5) };
    const rec = await ProfileRecorder.start([model.engine]);
    assert.equal((await ortTempDirs()).length, tempBefore.length + 1);
    await model.engine.forward(x); // creates the profiled session outside the measured steps
    rec.beginMeasurement();
    for (let i = 0; i < 6; i++) {
      await rec.step(i, async () => {
        await span('next(batch)', 'dataload', () => new Promise((r) => setTimeout(r, 3)));
        const r = await span('forward', 'forward', () => model.engine.forward(x));
        // A loop that runs sessions itself reports each run's worker interval, as predict does.
        recordSpan('session.run (worker)', 'forward', r.startEpochMs, r.runMs);
        span('step', 'optimizer', () => { const t = performance.now(); while (performance.now() - t < 1); });
      });
    }
    const saveDir = join(dir, 'train');
    const a = await finalizeProfile({
      saveDir, writeTrace: (path) => rec.finish(path), summary: { meta: { model: 'fixture', batch: 1, mode: 'training' } },
      fallback: () => { throw new Error('traced'); },
    });
    const trace = JSON.parse(readFileSync(join(saveDir, 'profile_trace.json'), 'utf8')) as { traceEvents: TraceEvent[] };
    assert.deepEqual(await ortTempDirs(), tempBefore, 'ORT profile files are removed');
    assert.deepEqual(await model.engine.profiledSessions(), [], 'profiling is off again');

    const ev = trace.traceEvents;
    const markers = ev.filter((e) => e.name?.startsWith('ProfilerStep#'));
    assert.equal(markers.length, 6);
    const nodes = ev.filter((e) => e.cat === 'Node');
    assert.ok(nodes.length >= 6 * 100, `${nodes.length} ORT node events`);
    const runs = ev.filter((e) => e.name === 'model_run');
    const workers = ev.filter((e) => e.name === 'session.run (worker)');
    assert.equal(runs.length, 6);
    for (const [k, r] of runs.entries()) {
      const w = workers[k]!;
      assert.ok(r.ts! >= w.ts! && r.ts! + r.dur! <= w.ts! + w.dur! + 0.5, `model_run ${k} inside its worker run`);
    }
    for (const m of ev.filter((e) => e.ph === 'M')) assert.ok(['process_name', 'thread_name', 'process_sort_index'].includes(m.name!));
    for (const e of ev.filter((x): x is TraceEvent & { ph: 'X' } => x.ph === 'X')) {
      assert.ok(Number.isFinite(e.ts) && Number.isFinite(e.dur) && Number.isFinite(e.pid as number) && Number.isFinite(e.tid as number), JSON.stringify(e));
    }

    assert.equal(a.mode, 'training');
    assert.deepEqual(a.phases.map((p) => p.phase), ['dataload', 'forward', 'optimizer']);
    assert.equal(a.window.real_steps, 3);
    assert.equal(a.phases[1]!.kernels_per_step, a.kernels_per_step, 'every kernel falls in the forward phase');
    assert.equal(a.phases[0]!.kernels_per_step, 0);
    assert.ok(a.kernels_by_phase.forward!.length > 0);
    assert.deepEqual(a.ops_by_phase.dataload!.map((o) => o.op), ['next(batch)']);
    assert.equal(a.tensorcore_pct, 0);
    assert.ok(a.peak_vram_mb! > 0 && a.peak_rss_mb! > 0);
    for (const f of ['profile.json', 'profile_trace.json', 'profile_summary.json']) assert.ok(existsSync(join(saveDir, f)), f);
    // The raw trace, analysed on the fly with its sibling summary, gives the same profile.
    const again = await loadProfile(join(saveDir, 'profile_trace.json'));
    assert.deepEqual({ ...again, trace: null }, { ...a, trace: null });
  });
});

describe("ORT's clock", () => {
  it('is aligned by matching model_run starts with worker runs, outvoting unrelated runs', () => {
    // ORT started 17 ms after the host's timestamp; each run starts 20-90 µs after the worker's.
    const base = 1_700_000_000_000;
    const delay = [20, 90, 35, 60, 25];
    const events: TraceEvent[] = delay.map((_, k) => ({ ph: 'X', cat: 'Session', name: 'model_run', ts: 5_000 + 20_000 * k, dur: 15_000 }));
    const workers = delay.map((d, k) => ({ ts: base * 1000 + 17_000 + 5_000 + 20_000 * k - d, dur: 15_800 }));
    workers.push({ ts: base * 1000 + 31_000, dur: 4_000 }); // another session's run
    const offset = ortClockOffset({ startEpochMs: base, runs: events }, workers);
    assert.equal(offset, base * 1000 + 17_000 - 20);
    for (const [k, e] of events.entries()) assert.ok(e.ts! + offset >= workers[k]!.ts, `run ${k} starts inside its worker run`);
    assert.equal(ortClockOffset({ startEpochMs: base, runs: events }, []), base * 1000, 'no worker runs: the creation timestamp');
  });
});

describe('repeat aggregates', () => {
  const base = (over: Partial<ProfileAnalysis>): ProfileAnalysis => ({
    schema: 'libreyolo.profile.analysis/v1', trace: 't', model: 'm', config: {}, bound: 'compute', bound_why: '', step_ms: 10,
    img_per_s: 100, dataload_ms: 0, dataload_frac: 0, gpu_util: 0.9, gpu_util_raw: 0.9, memory_pressure: false, cuda_mallocs_per_step: 0,
    host_overhead_ms_per_step: 1, launches_per_step: 10, gpu_busy_ms_per_step: 9, mean_kernel_us: 900, kernels_per_step: 10, unique_kernels: 3,
    memcpy_ms_per_step: 0, tensorcore_pct: 0, peak_vram_mb: null, window: { wall_ms: 60, real_steps: 6 }, metrics: { img_per_s: 100, throughput_img_s: 100 },
    categories: [], phases: [], phases_gpu: [], kernels_by_phase: {}, ops_by_phase: {}, top_kernels: [], kernels: [], ops: [], ...over,
  });

  it('infer: mean img/s with its population std and n; the rest from the last trial', () => {
    const agg = aggregateInferTrials(base({ step_ms: 12 }), [100, 104]);
    assert.equal(agg.img_per_s, 102);
    assert.equal(agg.img_per_s_std, 2);
    assert.equal(agg.img_per_s_n, 2);
    assert.deepEqual(agg.img_per_s_trials, [100, 104]);
    assert.equal(agg.metrics.throughput_img_s, 102);
    assert.equal(agg.step_ms, 12);
  });

  it('run: scalars averaged (counts stay whole), mixed verdicts called mixed', () => {
    const agg = aggregateRunTrials([base({ step_ms: 10, launches_per_step: 10 }), base({ step_ms: 11, launches_per_step: 13, bound: 'host / launch' })], ['a', 'b'], [100, 90]);
    assert.equal(agg.step_ms, 10.5);
    assert.equal(agg.launches_per_step, 12); // round(11.5) half-even
    assert.equal(agg.metrics.host_overhead_ms, 1);
    assert.equal(agg.bound, 'mixed');
    assert.equal(agg.metrics.bound, 'mixed');
    assert.equal(agg.img_per_s, 95);
    assert.deepEqual(agg.aggregation?.profiles, ['a', 'b']);
  });
});
