/**
 * `libreyolo profile infer` for real on the CPU: the fixture model, the sample image, real ORT
 * sessions and files. A normal run, then every reader on its profile and on its raw trace; three
 * scripted scenarios with three different verdicts; --repeat; and the argument errors.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { ORT_DIR_PREFIX } from '../../src/profile/recorder.ts';
import { SCHEMA, type ChromeTrace, type ProfileAnalysis } from '../../src/profile/schema.ts';
import { runCli } from '../helpers/cli.ts';
import { fixture } from '../helpers/fixtures.ts';
import { probeDevice } from '../helpers/gpu.ts';
import { cli } from '../helpers/profile-fixtures.ts';

let base: string;
let weights: string;
/** The normal run's profile.json and profile_trace.json. */
let pj: string;
let tj: string;

before(async () => {
  base = await mkdtemp(join(tmpdir(), 'ly-profile-infer-'));
  weights = fixture('yolo9t_ref.pt');
});
after(async () => { await rm(base, { recursive: true, force: true }); });

const read = <T = ProfileAnalysis>(p: string): T => JSON.parse(readFileSync(p, 'utf8')) as T;
const ortTempDirs = async (): Promise<string[]> => (await readdir(tmpdir())).filter((n) => n.startsWith(`${ORT_DIR_PREFIX}${process.pid}-`)).sort();

/** Keys of the original's profile.json, all present in ours. */
const ORIGINAL_KEYS = [
  'schema', 'mode', 'trace', 'model', 'config', 'bound', 'bound_why', 'step_ms', 'img_per_s', 'dataload_ms', 'dataload_frac', 'gpu_util',
  'gpu_util_raw', 'memory_pressure', 'cuda_mallocs_per_step', 'host_overhead_ms_per_step', 'launches_per_step', 'gpu_busy_ms_per_step',
  'mean_kernel_us', 'kernels_per_step', 'unique_kernels', 'memcpy_ms_per_step', 'tensorcore_pct', 'peak_vram_mb', 'window', 'latency',
  'stages_ms', 'metrics', 'categories', 'phases', 'phases_gpu', 'kernels_by_phase', 'ops_by_phase', 'top_kernels', 'kernels', 'ops',
];

describe('profile infer: a normal CPU run', () => {
  // The run happens once, here, so each test below (and the readers' test on its files) stands alone.
  let r: Awaited<ReturnType<typeof cli>>;
  let tempBefore: string[];
  before(async () => {
    tempBefore = await ortTempDirs();
    r = await cli('profile', 'infer', '--device', 'cpu', '--warmup', '2', '--runs', '10', '--weights', weights, '--project', join(base, 'p'));
    pj = join(base, 'p', 'infer', 'profile.json');
    tj = join(base, 'p', 'infer', 'profile_trace.json');
  });

  it('--device cpu --warmup 2 --runs 10 on the sample image: compute-bound, full schema, merged trace', async () => {
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const out = r.stdout.trimEnd().split('\n');
    assert.equal(out.length, 6);
    assert.match(out[0]!, /^latency {2}p50 [\d.]+ ms \| p90 [\d.]+ ms \| p99 [\d.]+ ms {2}\| {2}[\d.]+ img\/s$/);
    assert.match(out[1]!, /^stages {3}preprocess [\d.]+ ms \| forward [\d.]+ ms \| postprocess\/NMS [\d.]+ ms$/);
    assert.match(out[2]!, /^>> COMPUTE: forward dominates the step \([\d.]+ ms\) — CPU-bound; ORT kernels fill ~\d+% of the forward call$/);
    assert.deepEqual(out.slice(3), [`profile: ${pj}`, `timeline: ${join(base, 'p', 'infer', 'timeline.html')}  (open it in a browser)`, `next:    libreyolo profile summary ${pj}`]);
    assert.deepEqual(await ortTempDirs(), tempBefore, "ORT's own profile files are cleaned up");

    const a = read(pj);
    for (const k of ORIGINAL_KEYS) assert.ok(k in a, `profile.json has ${k}`);
    assert.equal(a.schema, SCHEMA);
    assert.equal(a.mode, 'inference');
    assert.equal(a.trace, tj);
    assert.equal(a.model, weights);
    assert.deepEqual(a.config, { model: weights, batch: 1, imgsz: 640, half: false, amp_dtype: 'float16', device: 'cpu', conf: 0.25, iou: 0.45, max_det: 300, mode: 'inference' });
    assert.equal(a.bound, 'compute');
    assert.equal(a.latency!.n, 10);
    assert.ok(a.latency!.p50_ms! <= a.latency!.p90_ms! && a.latency!.p90_ms! <= a.latency!.p99_ms!);
    assert.deepEqual(Object.keys(a.stages_ms!), ['preprocess', 'forward', 'postprocess']);
    assert.ok(a.stages_ms!.forward > a.stages_ms!.preprocess && a.stages_ms!.forward > a.stages_ms!.postprocess);
    assert.ok(a.img_per_s! > 0);
    assert.equal(a.metrics.throughput_img_s, a.img_per_s);
    assert.equal(a.metrics.nms_ms, a.stages_ms!.postprocess);
    assert.equal(a.metrics.latency_p50_ms, a.latency!.p50_ms);
    // ORT kernels: node executions on the CPU provider, all inside the forward phase.
    assert.ok(a.kernels_per_step > 100, `${a.kernels_per_step} kernels/step`);
    assert.equal(a.launches_per_step, a.kernels_per_step);
    assert.deepEqual(a.phases.map((p) => p.phase), ['preprocess', 'forward', 'postprocess']);
    assert.equal(a.phases[1]!.kernels_per_step, a.kernels_per_step);
    assert.equal(a.categories[0]!.name, 'gemm / conv');
    assert.equal(a.top_kernels[0]!.kernel, 'Conv');
    assert.ok(a.gpu_util > 0 && a.gpu_util <= 1 && !a.memory_pressure);
    assert.equal(a.tensorcore_pct, 0);
    assert.ok(a.peak_vram_mb! > 0 && a.peak_rss_mb! > 0);
    assert.ok(a.notes!.some((n) => n.includes('no Tensor Cores')));
    assert.equal(a.trace_window?.steps, 10);
    assert.deepEqual(a.ops_by_phase.preprocess!.map((o) => o.op).sort(), ['decode', 'letterbox']);
    assert.ok(a.ops.some((o) => o.op === 'session.run (worker)') && a.ops.some((o) => o.op === 'model_run'));
    assert.equal(read<{ bound: string }>(join(base, 'p', 'infer', 'profile_summary.json')).bound, 'compute');

    const t = read<ChromeTrace>(tj);
    const names = t.traceEvents.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => String(e.args!.name));
    assert.ok(names.some((n) => n.startsWith('libreyolo host')) && names.some((n) => n.startsWith('onnxruntime session cpu|float32|1x3x640x640')));
    assert.equal(t.traceEvents.filter((e) => e.name?.startsWith('ProfilerStep#')).length, 10);
    assert.equal(t.traceEvents.filter((e) => e.cat === 'Node').length, 10 * a.kernels_per_step);
  });

  it('every reader, in text and --json, on profile.json and on the raw trace', async () => {
    assert.equal(r.code, 0, r.stderr);
    for (const p of [pj, tj]) {
      const s = await cli('profile', 'summary', p);
      assert.equal(s.code, 0);
      assert.match(s.stdout, /^model .+ {2}\| {2}[\d.]+ img\/s {2}\| {2}step [\d.]+ ms {2}\| {2}\d+ kernels\/step @ ~\d+us\n/);
      assert.match(s.stdout, /\nlatency {2}p50 [\d.]+ ms \| p90 [\d.]+ ms \| p99 [\d.]+ ms {2}\(10 samples\)\n/);
      assert.match(s.stdout, /\nstages {3}preprocess /);
      assert.match(s.stdout, /\nGPU util \d+% {2}\([\d.]+ ms busy\) {2}\| {2}Tensor Cores 0% {2}\| {2}peak VRAM [\d.]+ MB/);
      assert.match(s.stdout, /\n>> COMPUTE: /);
      assert.match(s.stdout, /\nkernel mix:\n {2}gemm \/ conv {7}/);
      assert.match(s.stdout, /\ntop kernels\/step:\n +[\d.]+% +[\d.]+ ms {2}x\d+ +Conv\n/);
      assert.match(s.stdout, /\nnote: cpu: no Tensor Cores/);
      const sj = JSON.parse((await cli('profile', 'summary', p, '--json')).stdout);
      assert.equal(sj.mode, 'inference');
      assert.equal(sj.latency.n, 10);
      assert.equal(sj.bound, 'compute');

      const list = await cli('profile', 'get', p);
      for (const k of ['latency_p50_ms', 'throughput_img_s', 'forward_ms', 'nms_ms', 'forward_kernels', 'peak_rss_mb']) assert.match(list.stdout, new RegExp(`\n {2}${k}\n`));
      const kps = (await cli('profile', 'get', p, 'kernels_per_step')).stdout.trim();
      assert.match(kps, /^\d+$/);
      assert.equal((await cli('profile', 'get', p, 'bound')).stdout, 'compute\n');
      assert.deepEqual(JSON.parse((await cli('profile', 'get', p, 'forward_kernels', '--json')).stdout), { forward_kernels: Number(kps) });

      const ph = (await cli('profile', 'phases', p)).stdout.trimEnd().split('\n');
      assert.equal(ph.length, 4);
      assert.match(ph[2]!, new RegExp(`^forward +[\\d.]+ +[\\d.]+ +${kps} +\\d+$`));
      assert.equal(JSON.parse((await cli('profile', 'phases', p, '--json')).stdout).phases.length, 3);

      const k = (await cli('profile', 'kernels', p, '--top', '3')).stdout.trimEnd().split('\n');
      assert.equal(k[0], '  %GPU   ms/step  x/step TC  kernel  [category]');
      assert.equal(k.length, 4);
      const gemm = JSON.parse((await cli('profile', 'kernels', p, '--category', 'gemm', '--json')).stdout);
      assert.ok(gemm.kernels.length >= 1 && gemm.kernels.every((x: { category: string }) => x.category === 'gemm / conv'));
      const byCount = JSON.parse((await cli('profile', 'kernels', p, '--sort', 'count', '--phase', 'forward', '--json')).stdout).kernels;
      assert.ok(byCount.every((x: { count_per_step: number }, i: number) => i === 0 || byCount[i - 1].count_per_step >= x.count_per_step));
      assert.deepEqual(JSON.parse((await cli('profile', 'kernels', p, '--grep', '^conv$', '--json')).stdout).kernels.map((x: { kernel: string }) => x.kernel), ['Conv']);
      const bad = await cli('profile', 'kernels', p, '--phase', 'backward');
      assert.equal(bad.code, 2);
      assert.equal(bad.stderr, "Error: unknown phase 'backward'. available: preprocess, forward, postprocess\n");

      const ops = (await cli('profile', 'ops', p, '--phase', 'postprocess')).stdout;
      assert.match(ops, /^ {2}%cpu {3}ms\/step {2}x\/step {2}op\n/);
      assert.match(ops, / nms\n/);
      assert.ok(JSON.parse((await cli('profile', 'ops', p, '--top', '2', '--json')).stdout).ops.length === 2);

      const cmp = await cli('profile', 'compare', pj, p);
      assert.match(cmp.stdout, /^img\/s {10}[\d.]+ -> [\d.]+ \(\+0%\) {2}\[single run, use 'infer --repeat N' for a significance call\]\n/);
      assert.match(cmp.stdout, /\nverdict {8}compute -> compute\n$/);
      assert.equal(JSON.parse((await cli('profile', 'compare', pj, p, '--json')).stdout).img_per_s.significant, null);

      const wi = await cli('profile', 'what-if', p, '--remove-launches', '100');
      assert.match(wi.stdout, /^what-if \[compute\]: (host\/launch-bound: ~100 fewer launches x ~\d+us host cost|compute-bound: ~0\.0 ms less GPU work)\n/);
      const wj = JSON.parse((await cli('profile', 'what-if', p, '--remove-category', 'gemm', '--json')).stdout);
      assert.ok(wj.removed.gpu_ms > 0 && wj.step_ms.projected < wj.step_ms.now && wj.caveat);
    }
    const fromTrace = JSON.parse((await cli('profile', 'summary', tj, '--json')).stdout);
    const fromProfile = JSON.parse((await cli('profile', 'summary', pj, '--json')).stdout);
    assert.deepEqual({ ...fromTrace, trace: null }, { ...fromProfile, trace: null });
  });
});

describe('profile infer: scripted CPU scenarios', () => {
  it('a very low --conf with a huge --max-det is NMS-bound (and --half on CPU warns, runs fp32)', async () => {
    const r = await cli('profile', 'infer', '--device', 'cpu', '--warmup', '1', '--runs', '3', '--imgsz', '320', '--conf', '0.000001',
      '--max-det', '100000', '--half', '--no-trace', '--weights', weights, '--project', join(base, 'nms'), '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, 'Warning: --half: fp16 autocast is CUDA-only; cpu runs fp32.\n');
    const j = JSON.parse(r.stdout);
    assert.equal(j.bound, 'nms / postprocess');
    assert.deepEqual(Object.keys(j), ['profile', 'mode', 'img_per_s', 'img_per_s_std', 'img_per_s_n', 'latency_p50_ms', 'latency_p90_ms', 'latency_p99_ms', 'bound', 'stages_ms']);
    assert.ok(j.stages_ms.postprocess > j.stages_ms.forward);
    const a = read(j.profile);
    assert.match(a.bound_why, /^postprocess \(NMS\) is ~\d+% of the step .* try lower max_det/);
    // Untraced: timing and stage split only.
    assert.equal(a.trace, null);
    assert.deepEqual(a.kernels, []);
    assert.deepEqual(a.phases.map((p) => [p.phase, p.wall_ms_per_step]), Object.entries(a.stages_ms!));
    assert.equal(a.config.half, false);
    assert.ok(a.notes!.some((n) => n.includes('--half')));
    assert.equal(existsSync(join(base, 'nms', 'infer', 'profile_trace.json')), false);
  });

  it('a very large source image at a small --imgsz is preprocess-bound', async () => {
    const big = join(base, 'big.jpg');
    const [w, h] = [4000, 3000];
    const px = Buffer.alloc(w * h * 3);
    for (let i = 0; i < px.length; i++) px[i] = (i * 7 + Math.floor(i / (w * 3)) * 3) & 255 ^ ((i * 2654435761) >>> 27);
    await sharp(px, { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 90 }).toFile(big);
    const r = await cli('profile', 'infer', big, '--device', 'cpu', '--warmup', '1', '--runs', '3', '--imgsz', '320', '--no-trace',
      '--weights', weights, '--project', join(base, 'pre'));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout.split('\n')[2]!, /^>> PREPROCESS: preprocess is ~\d+% of the step/);
    assert.equal(read(join(base, 'pre', 'infer', 'profile.json')).bound, 'preprocess');
  });
});

describe('profile infer: --repeat and output folders', () => {
  it('--repeat 2 writes the aggregate (mean, std, n) in a new folder; compare makes the significance call', async () => {
    const args = ['profile', 'infer', '--device', 'cpu', '--warmup', '0', '--runs', '2', '--imgsz', '320', '--repeat', '2', '--no-trace', '--weights', weights, '--project', join(base, 'p')];
    const r = await cli(...args, '--json');
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    // The normal run took runs/profile/infer; this one never overwrites it.
    const dir = join(base, 'p', 'infer2');
    assert.equal(j.profile, join(dir, 'infer_repeat.json'));
    assert.equal(j.img_per_s_n, 2);
    assert.equal(typeof j.img_per_s_std, 'number');
    for (const t of ['infer_0', 'infer_1']) assert.ok(existsSync(join(dir, t, 'profile.json')), t);
    const agg = read(j.profile);
    assert.equal(agg.img_per_s_trials!.length, 2);
    assert.equal(agg.metrics.throughput_img_s, agg.img_per_s);
    const text = await cli(...args);
    assert.match(text.stdout, /^latency .* {2}\| {2}[\d.]+ \+\/- [\d.]+ \(n=2\) img\/s\n/);
    assert.match(text.stdout, new RegExp(`\nprofile: ${join(base, 'p', 'infer3', 'infer_repeat.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`));
    const cmp = JSON.parse((await cli('profile', 'compare', j.profile, join(base, 'p', 'infer3', 'infer_repeat.json'), '--json')).stdout);
    assert.equal(typeof cmp.img_per_s.significant, 'boolean');
    assert.match(cmp.img_per_s.significance, /^\|d\|=[\d.]+ vs 2\*SE=[\d.]+$/);
  });
});

describe('profile infer: argument errors', () => {
  it('the default --device 0: profiles on CUDA where it exists, else exits 1 (as predict) and names the flags that work here (a real process)', async () => {
    const r = await runCli(['profile', 'infer', '--weights', weights, '--project', join(base, 'cuda')], base);
    if ((await probeDevice('cuda:0')).available) {
      assert.equal(r.code, 0, r.stderr);
      assert.match(String(read(join(base, 'cuda', 'infer', 'profile.json')).config.device), /^(0|cuda(:0)?)$/);
      return;
    }
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    // One line; --weights is given, so only the device flag is named.
    assert.equal(r.stderr, "Error: device 'cuda:0' is not available (onnxruntime-node's CUDA execution provider is not installed on this machine); the profiler never switches devices on its own: pass --device cpu to profile on the CPU.\n");
    assert.doesNotMatch(r.stderr, /\n\s+at /);
    assert.equal(existsSync(join(base, 'cuda')), false, 'nothing written');
  });

  it('no images, a bad --amp-dtype and a bad value exit 2; missing weights exit 4 as in predict; key=value is a flag', async () => {
    const none = await cli('profile', 'infer', join(base, 'nothing.jpg'), '--device', 'cpu');
    assert.equal(none.code, 2);
    assert.equal(none.stderr, `Error: no images found at: ${join(base, 'nothing.jpg')}\n`);
    const kv = await cli('profile', 'infer', 'weights=x.pt', 'device=cpu');
    assert.equal(kv.code, 4, kv.stderr);
    assert.match(kv.stderr, /^Error: Model weights file not found: x\.pt\./);
    const amp = await cli('profile', 'infer', '--amp-dtype', 'fp8', '--device', 'cpu');
    assert.equal(amp.code, 2);
    assert.equal(amp.stderr, 'Error: amp_dtype must be one of: bf16, bfloat16, float16, fp16; got fp8\n');
    const missing = await cli('profile', 'infer', '--weights', join(base, 'missing.pt'), '--device', 'cpu', '--project', join(base, 'm'));
    assert.equal(missing.code, 4);
    assert.match(missing.stderr, /missing\.pt/);
    assert.equal(existsSync(join(base, 'm')), false, 'no empty run folder');
    const runs = await cli('profile', 'infer', '--runs', 'many', '--device', 'cpu');
    assert.equal(runs.code, 2);
    for (const r of [none, kv, amp, missing, runs]) assert.doesNotMatch(r.stderr, /\n\s+at /);
  });
});
