/** The trace analyzer against the reference's numbers, plus Python-compatible rounding and printing. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { analyzeTrace } from '../../src/profile/analyze.ts';
import { friendlyKernel, isTensorCore, kernelCategory } from '../../src/profile/classify.ts';
import { pyFixed, pyFloat, pyJson, pyRound } from '../../src/profile/pyfmt.ts';
import { percentile, pstdev } from '../../src/profile/stats.ts';
import { pickWindow } from '../../src/profile/window.ts';
import type { TraceEvent } from '../../src/profile/schema.ts';
import { TRAINING_SUMMARY, trainingTrace } from '../helpers/profile-fixtures.ts';

const marker = (name: string | undefined, ts: number, dur: number): TraceEvent => ({ ph: 'X', ...(name ? { name } : {}), ts, dur });

describe('Python-compatible numbers', () => {
  it('rounds half-to-even on the exact binary value', () => {
    assert.equal(pyRound(2.5), 2);
    assert.equal(pyRound(0.125, 2), 0.12);
    assert.equal(pyRound(0.045, 2), 0.04);
    assert.equal(pyRound(0.045000000000000005, 2), 0.05);
    assert.equal(pyFixed(0.5, 0), '0');
    assert.equal(pyFixed(2.5, 0), '2');
    assert.equal(pyFixed(-0.4, 0, true), '-0');
    assert.equal(pyFixed(28.4, 0, true), '+28');
  });
  it('prints floats like repr and JSON like json.dumps', () => {
    assert.deepEqual([100, 0.019, 1e-5, 0.1 + 0.2, 1e16].map(pyFloat), ['100.0', '0.019', '1e-05', '0.30000000000000004', '1e+16']);
    assert.equal(pyJson({ forward_kernels: 1 }), '{"forward_kernels": 1}');
    assert.equal(pyJson({ why: 'a — b', e: [] }), '{"why": "a \\u2014 b", "e": []}');
    assert.equal(pyJson({ a: [1], b: {} }, 2), '{\n  "a": [\n    1\n  ],\n  "b": {}\n}');
  });
  it('takes percentiles on a half-even index and the population stdev', () => {
    const xs = Array.from({ length: 50 }, (_, i) => i);
    assert.equal(percentile(xs, 50), 24); // round(24.5) == 24, not 25
    assert.deepEqual([50, 90, 99].map((q) => percentile([3, 1, 2], q)), [2, 3, 3]);
    assert.equal(percentile([], 50), null);
    assert.equal(pstdev([2, 4]), 1);
  });
});

describe('analysis window', () => {
  it('skips two cold markers and stops at marker 8', () => {
    const unnamed = Array.from({ length: 6 }, (_, i) => marker(undefined, i * 100, 100));
    assert.deepEqual(pickWindow(unnamed), { start: 200, end: 500, steps: 3 });
    const named = Array.from({ length: 6 }, (_, i) => marker(`ProfilerStep#${i}`, i * 100, 100));
    assert.deepEqual(pickWindow(named), { start: 200, end: 500, steps: 3 });
    const twenty = Array.from({ length: 20 }, (_, i) => marker(`ProfilerStep#${i}`, i * 100, 100));
    assert.deepEqual(pickWindow(twenty), { start: 200, end: 800, steps: 6 });
  });
  it('handles one marker, none, and duplicated CPU/GPU markers', () => {
    assert.deepEqual(pickWindow([marker('ProfilerStep#7', 0, 50)]), { start: 0, end: 50, steps: 1 });
    assert.deepEqual(pickWindow([]), { start: null, end: null, steps: 1 });
    const dup = Array.from({ length: 10 }, (_, i) => [marker(`ProfilerStep#${i}`, 100 * i, 50), marker(`ProfilerStep#${i}`, 100 * i + 30, 50)]).flat();
    assert.deepEqual(pickWindow(dup), { start: 100, end: 400, steps: 3 });
  });
});

describe('kernel classification', () => {
  it('follows the original rules for CUDA kernel names', () => {
    const rows: Array<[string, string, string, boolean]> = [
      ['_ZN5cudnn21bn_bw_1C11_kernel_new', 'reduction / norm', 'cudnn batchnorm (bwd)', false],
      ['_ZN5cudnn16nchwToNhwcKernel', 'layout / copy', 'layout nchw->nhwc', false],
      ['cudnn_implicit_convolution_nhwc', 'gemm / conv', 'cudnn_implicit_convolution_nhwc', false],
      ['ampere_sgemm_128x128_nt', 'gemm / conv', 'gemm', false],
      ['ampere_h16816gemm_128x128', 'gemm / conv', 'gemm', true],
      ['sm80_xmma_tensorop_conv', 'gemm / conv', 'sm80_xmma_tensorop_conv', true],
      ['void at::native::reduce_kernel<512, 1>', 'reduction / norm', 'reduction', false],
      ['void cub::DeviceReduceKernel', 'other', 'reduction', false],
      ['void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>', 'layout / copy', 'concat', false],
      ['void at::native::unrolled_elementwise_kernel<copy>', 'layout / copy', 'elementwise', false],
      ['triton_poi_fused_silu_0', 'elementwise', 'triton_poi_fused_silu_0', false],
      ['sm86_xmma_fprop_implicit_gemm_indexed_f16f16', 'gemm / conv', 'gemm', false],
      ['void at::native::batch_norm_collect_statistics_kernel', 'reduction / norm', 'void at::native::batch_norm_collect_stat', false],
      ['ncclKernel_AllReduce_RING_LL_Sum_float', 'other', 'reduction', false],
      ['void wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>', 'gemm / conv', 'conv wgrad', false],
      ['void at::native::upsample_nearest2d_out_frame', 'other', 'void at::native::upsample_nearest2d_out_', false],
    ];
    for (const [name, cat, friendly, tc] of rows) {
      assert.deepEqual([kernelCategory(name), friendlyKernel(name), isTensorCore(name)], [cat, friendly, tc], name);
    }
  });
  it('maps ONNX Runtime op types by table', () => {
    const rows: Array<[string, string]> = [
      ['Conv', 'gemm / conv'], ['MatMul', 'gemm / conv'], ['ReorderInput', 'layout / copy'], ['Concat', 'layout / copy'],
      ['BatchNormalization', 'reduction / norm'], ['Softmax', 'reduction / norm'], ['QuickGelu', 'elementwise'],
      ['Add', 'elementwise'], ['Sigmoid', 'elementwise'], ['MaxPool', 'pool / resize'], ['Upsample', 'pool / resize'],
      ['NonMaxSuppression', 'other'], ['Conv [CUDA]', 'gemm / conv'],
    ];
    for (const [op, cat] of rows) assert.equal(kernelCategory(op), cat, op);
    assert.equal(friendlyKernel('QuickGelu'), 'QuickGelu');
    assert.equal(isTensorCore('Conv'), false);
  });
});

describe('analyzeTrace on the reference training fixture', () => {
  it('reproduces the original numbers without a summary', () => {
    const a = analyzeTrace(trainingTrace());
    assert.deepEqual(a.window, { wall_ms: 0.3, real_steps: 3 });
    assert.equal(a.step_ms, 0.1);
    assert.equal(a.gpu_busy_ms_per_step, 0.06);
    assert.equal(a.gpu_util, 0.58);
    assert.equal(a.bound, 'host / launch');
    assert.equal(a.bound_why, 'GPU only ~58% busy — tiny kernels / host overhead (dataloader stall not measurable from trace alone)');
    assert.equal(a.host_overhead_ms_per_step, 0.04);
    assert.equal(a.launches_per_step, 5);
    assert.equal(a.kernels_per_step, 5);
    assert.equal(a.mean_kernel_us, 11.6);
    assert.equal(a.unique_kernels, 5);
    assert.equal(a.memcpy_ms_per_step, 0.003);
    assert.equal(a.tensorcore_pct, 25.9);
    assert.equal(a.metrics.ops_per_step, 2);
    assert.equal(a.memory_pressure, false);
    assert.equal(a.peak_vram_mb, null);
    assert.deepEqual(a.categories, [
      { name: 'gemm / conv', pct: 43.1, ms_per_step: 0.025 },
      { name: 'reduction / norm', pct: 34.5, ms_per_step: 0.02 },
      { name: 'layout / copy', pct: 13.8, ms_per_step: 0.008 },
      { name: 'elementwise', pct: 8.6, ms_per_step: 0.005 },
    ]);
    assert.deepEqual(a.phases, [
      { phase: 'forward', gpu_ms_per_step: 0.023, wall_ms_per_step: null, kernels_per_step: 3, ops_per_step: 1, unique_kernels: 3 },
      { phase: 'backward', gpu_ms_per_step: 0.035, wall_ms_per_step: null, kernels_per_step: 2, ops_per_step: 1, unique_kernels: 2 },
    ]);
    assert.deepEqual(a.kernels_by_phase.forward!.map((k) => [k.kernel, k.pct_of_gpu]), [['gemm', 43.48], ['layout nchw->nhwc', 34.78], ['elementwise', 21.74]]);
    assert.deepEqual(a.kernels_by_phase.backward!.map((k) => [k.kernel, k.pct_of_gpu]), [['cudnn batchnorm (bwd)', 57.14], ['gemm', 42.86]]);
    assert.equal(a.top_kernels[0]!.kernel, 'cudnn batchnorm (bwd)');
    assert.equal(a.top_kernels[0]!.pct_of_gpu, 34.48);
    assert.equal(a.metrics.forward_kernels, 3);
    assert.equal(a.metrics.host_overhead_ms, a.host_overhead_ms_per_step);
    assert.equal('mode' in a, false);
  });
  it('takes timing, verdict and memory from the summary', () => {
    const a = analyzeTrace({ traceEvents: trainingTrace() }, { summary: TRAINING_SUMMARY });
    assert.equal(a.step_ms, 100);
    assert.equal(a.img_per_s, 10);
    assert.equal(a.gpu_util, 0.001);
    assert.equal(a.host_overhead_ms_per_step, 98.94);
    assert.equal(a.bound, 'dataloader');
    assert.equal(a.peak_vram_mb, 1234);
    assert.deepEqual(a.phases.map((p) => p.wall_ms_per_step), [0.05, 0.06]);
    assert.equal(a.model, 'YOLOv9-t');
    assert.deepEqual(a.config, TRAINING_SUMMARY.meta);
  });
  it('flags allocator thrash as memory pressure', () => {
    const ev = trainingTrace();
    for (let i = 0; i < 20; i++) ev.push({ ph: 'X', cat: 'cuda_runtime', name: 'cudaMalloc', ts: 250 + i, dur: 1 });
    const a = analyzeTrace(ev);
    assert.equal(a.memory_pressure, true);
    assert.equal(a.cuda_mallocs_per_step, 6);
    assert.equal(a.bound, 'memory-pressure');
  });
  it('rejects what is not a trace, naming the field: no traceEvents, traceEvents not a list, no complete events', () => {
    assert.throws(() => analyzeTrace({ hello: 1 }), /no 'traceEvents' field/);
    assert.throws(() => analyzeTrace({ traceEvents: 'nope' }), /traceEvents must be an array of events, got string/);
    assert.throws(() => analyzeTrace([]), /no complete \('ph': 'X'\) events/);
    assert.throws(() => analyzeTrace(42), /JSON object or an array/);
  });
});
