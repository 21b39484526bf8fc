/**
 * The reference's synthetic torch.profiler traces (profile.md §4.12 and §11.2): the analyzer must
 * reproduce the original's numbers and golden text on them.
 */
import type { ProfileSummary, TraceEvent } from '../../src/profile/schema.ts';

const x = (cat: string, name: string, ts: number, dur: number): TraceEvent => ({ ph: 'X', cat, name, ts, dur, pid: 1, tid: 1 });

function markers(): TraceEvent[] {
  return Array.from({ length: 6 }, (_, i) => x('user_annotation', `ProfilerStep#${i}`, 100 * i, 100));
}

/** §4.12: five kernels, a memcpy and two ops per step over three analysed steps. */
export function trainingTrace(): TraceEvent[] {
  const ev = markers();
  for (const b of [200, 300, 400]) {
    ev.push(
      x('user_annotation', 'step/forward', b + 10, 35), x('user_annotation', 'step/backward', b + 50, 40),
      x('kernel', 'ampere_sgemm_128x128_nt', b + 12, 10),
      x('kernel', 'void at::native::vectorized_elementwise_kernel<4, float>', b + 23, 5),
      x('kernel', '_ZN5cudnn19engines16nchwToNhwcKernel', b + 31, 8),
      x('kernel', '_ZN5cudnn21bn_bw_1C11_kernel_new', b + 55, 20),
      x('kernel', 'ampere_h16816gemm_128x128', b + 78, 15),
      x('cpu_op', 'aten::conv2d', b + 15, 40), x('cpu_op', 'aten::convolution_backward', b + 55, 50),
      x('gpu_memcpy', 'Memcpy HtoD', b + 5, 3),
    );
  }
  return ev;
}

export const TRAINING_SUMMARY: ProfileSummary = {
  meta: { model: 'YOLOv9-t', batch: 16 },
  real: { step_ms: 100, img_per_s: 10, dataload_ms: 1, dataload_frac: 0.01 },
  composition_ms: { forward: 0.05, backward: 0.06, to_device: 0.01, optimizer: 0.005 },
  bound: 'dataloader', bound_why: 'from summary', analysis: { peak_vram_mb: 1234 },
};

/** §11.2: the CLI tests' trace (three kernels per step). */
export function cliTrace(): TraceEvent[] {
  const ev = markers();
  for (const b of [200, 300, 400]) {
    ev.push(
      x('user_annotation', 'step/forward', b + 10, 35), x('user_annotation', 'step/backward', b + 50, 40),
      x('kernel', 'ampere_sgemm_128x128_nt', b + 20, 10),
      x('kernel', '_ZN5cudnn21bn_bw_1C11_kernel_new', b + 60, 20),
      x('kernel', 'ampere_h16816gemm_128x128', b + 80, 15),
      x('cpu_op', 'aten::conv2d', b + 15, 40), x('cpu_op', 'aten::convolution_backward', b + 55, 50),
    );
  }
  return ev;
}

export const CLI_SUMMARY: ProfileSummary = {
  meta: { model: 'YOLOv9-t', batch: 16 },
  real: { step_ms: 0.3, img_per_s: 53.3, dataload_ms: 0.0, dataload_frac: 0.0 },
  composition_ms: { forward: 0.05, backward: 0.06 },
  bound: 'host / launch', bound_why: 'test',
};

/** Runs `libreyolo ...args` in this process, capturing what it prints. */
export async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { main } = await import('../../src/cli/main.ts');
  const out: string[] = [];
  const err: string[] = [];
  const write = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };
  // The CLI writes strings; the test runner's own events (binary) still go through.
  process.stdout.write = ((s: string | Uint8Array, ...rest: never[]) => (typeof s === 'string' ? out.push(s) > 0 : write.out(s, ...rest))) as typeof process.stdout.write;
  process.stderr.write = ((s: string | Uint8Array, ...rest: never[]) => (typeof s === 'string' ? err.push(s) > 0 : write.err(s, ...rest))) as typeof process.stderr.write;
  try {
    const code = await main(args);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
  }
}
