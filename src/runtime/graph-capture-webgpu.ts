/**
 * Graph capture through the WebGPU execution provider: a dedicated session per shape with the
 * provider's `enableGraphCapture` config entry. ORT captures after a few regular runs and replays
 * every later run of that session.
 *
 * Nothing here is taken on trust. The capture session runs with ORT's profiler on; a run counts as
 * a replay only if ORT executed no kernels on the host executor for it, and the capture is accepted
 * only if replays at two different inputs reproduce the eager outputs bit for bit (a replay that
 * kept reading the first input's device buffer would be caught here). Unverified on GPU hardware so
 * far: the project's machines have no WebGPU adapter.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HostTensor } from '../graph/tensor.ts';
import type { ForwardResult, SessionEngine } from './engine.ts';
import type { CaptureBackend, Replayer } from './graph-capture.ts';

export const WEBGPU_GRAPH_CAPTURE_KEY = 'ep.webgpuexecutionprovider.enableGraphCapture';

interface TraceEvent { cat?: string; name?: string; ts?: number; dur?: number }

/** Kernel executions ORT recorded inside each `model_run`, in run order. */
export function kernelsPerRun(events: TraceEvent[]): number[] {
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts! - b.ts!);
  const nodes = events.filter((e) => e.cat === 'Node');
  return runs.map((r) => nodes.filter((n) => n.ts! >= r.ts! && n.ts! <= r.ts! + r.dur!).length);
}

function sameBits(a: HostTensor, b: HostTensor): boolean {
  if (a.dims.join() !== b.dims.join() || a.data.length !== b.data.length) return false;
  const x = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  const y = new Uint8Array(b.data.buffer, b.data.byteOffset, b.data.byteLength);
  return x.every((v, i) => v === y[i]);
}

/** A second probe input from a different distribution than `x` (its photographic negative). */
function otherProbe(x: HostTensor): HostTensor {
  const src = x.data as Float32Array;
  return { dtype: 'float32', dims: [...x.dims], data: src.map((v) => 1 - v) };
}

export const captureWebGpu: CaptureBackend = async (engine: SessionEngine, x: HostTensor, warmupIters: number): Promise<Replayer> => {
  const dir = await mkdtemp(join(tmpdir(), 'libreyolo-capture-'));
  const session = await engine.dedicatedSession(x.dims, {
    configEntries: { [WEBGPU_GRAPH_CAPTURE_KEY]: '1' },
    profileFilePrefix: join(dir, 'capture'),
  });
  try {
    const y = otherProbe(x);
    const eagerX = (await engine.forward(x)).output;
    const eagerY = (await engine.forward(y)).output;
    for (let k = 0; k < warmupIters; k++) await session.run(x);
    const replayY = (await session.run(y)).output;
    const replayX = (await session.run(x)).output;
    await session.endProfiling();
    const file = (await readdir(dir)).find((f) => f.endsWith('.json'));
    const events = file ? JSON.parse(await readFile(join(dir, file), 'utf8')) as TraceEvent[] : [];
    const kernels = kernelsPerRun(events);
    const probes = kernels.slice(-2);
    if (probes.length < 2 || probes.some((n) => n > 0)) {
      throw new Error(`ORT did not replay a captured graph: the runs after ${warmupIters} warm-up runs still executed ${probes.join(' and ')} kernels `
        + '(some nodes are not on the WebGPU provider, or this ORT build ignores enableGraphCapture)');
    }
    if (sameBits(replayX, replayY) && !sameBits(eagerX, eagerY)) {
      throw new Error('the replayed graph ignored its new input (it reads the captured input buffer; onnxruntime-node cannot bind inputs to device memory)');
    }
    if (!sameBits(replayX, eagerX) || !sameBits(replayY, eagerY)) throw new Error('replayed outputs differ from eager outputs');
  } catch (err) {
    await session.release().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  await rm(dir, { recursive: true, force: true });
  return {
    replay: (input: HostTensor): Promise<ForwardResult> => session.run(input),
    release: () => session.release(),
  };
};
