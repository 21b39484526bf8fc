/**
 * Graph capture (`cuda_graph`, `capture_graph`, `graph_info`, `release_graphs`) and device moves.
 * Each GPU test first probes what the machine has (test/helpers/gpu.ts: one real forward on the
 * device) and asserts that branch: with a WebGPU adapter, capture, replay and outputs equal to the
 * eager run; with CUDA, eager outputs equal to the CPU's (onnxruntime-node cannot reach CUDA graphs,
 * so capture is refused either way); without them, the exact device error. The CPU provider has no
 * graphs. scripts/gpu-checks.sh runs these on a GPU machine with the GPU branches required.
 * The WebGPU capture's own check is run against a real CPU session to show that runs which executed
 * kernels are never counted as replays.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { LibreYOLO, SAMPLE_IMAGE, type LibreYOLOModel, type Results } from '../../src/index.ts';
import { unregisterFamily } from '../../src/models/registry.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { captureWebGpu, kernelsPerRun } from '../../src/runtime/graph-capture-webgpu.ts';
import { decide, GraphRunner, normalizeGraphMode } from '../../src/runtime/graph-capture.ts';
import { GraphEngine } from '../../src/runtime/graph-engine.ts';
import { probeDevice } from '../helpers/gpu.ts';
import { FIXTURE_MODEL, loadAs, registerTestFamily } from '../helpers/test-families.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';

/** A fixed, non-constant input: 1x3xSxS of a smooth pattern in [0, 1]. */
function probeInput(S: number): HostTensor {
  const data = new Float32Array(3 * S * S);
  for (let i = 0; i < data.length; i++) data[i] = 0.5 + 0.5 * Math.sin(i * 0.001);
  return { dtype: 'float32', dims: [1, 3, S, S], data };
}

/** GPU kernels (TF32 convolutions included) differ from the CPU's in the last bits, not more. */
function assertClose(a: HostTensor, b: HostTensor, label: string): void {
  assert.deepEqual(a.dims, b.dims);
  const x = a.data as Float32Array, y = b.data as Float32Array;
  for (let i = 0; i < x.length; i++) {
    if (!(Math.abs(x[i]! - y[i]!) <= 1e-2 + 1e-2 * Math.abs(y[i]!))) assert.fail(`${label}: element ${i} ${x[i]} vs ${y[i]}`);
  }
}

const MISSING = '/nonexistent/never-read.jpg';
const CPU_REASON = /cuda_graph cannot capture on device 'cpu': the CPU execution provider has no graph capture/;

describe('cuda_graph modes', () => {
  it('accepts false/null, true and auto (any case); anything else is the original error', () => {
    assert.equal(normalizeGraphMode(false), 'off');
    assert.equal(normalizeGraphMode(null), 'off');
    assert.equal(normalizeGraphMode(undefined), 'off');
    assert.equal(normalizeGraphMode(true), 'on');
    assert.equal(normalizeGraphMode('AUTO'), 'auto');
    assert.throws(() => normalizeGraphMode('on'), /^LibreYOLOError: Invalid cuda_graph='on'\. Expected true, false or 'auto'\.$/m);
    assert.throws(() => normalizeGraphMode('yes'), /Invalid cuda_graph='yes'\./);
    assert.throws(() => normalizeGraphMode(1), /Invalid cuda_graph=1\./);
  });

  it('decides replay / eager / capture like the original runner (auto captures on the 3rd sighting)', () => {
    const s = { captured: false, seen: 0, auto: false, captureFailed: false, captureOnMiss: true, graphs: 0, maxGraphs: 8, autoThreshold: 3 };
    assert.equal(decide({ ...s, captured: true }), 'replay');
    assert.equal(decide(s), 'capture');
    assert.equal(decide({ ...s, auto: true, seen: 1 }), 'eager-counting');
    assert.equal(decide({ ...s, auto: true, seen: 2 }), 'eager-counting');
    assert.equal(decide({ ...s, auto: true, seen: 3 }), 'capture');
    assert.equal(decide({ ...s, captureFailed: true }), 'eager-miss');
    assert.equal(decide({ ...s, captureOnMiss: false }), 'eager-miss');
    assert.equal(decide({ ...s, graphs: 8 }), 'eager-limit');
  });
});

describe('graph capture on a real model', () => {
  let model: LibreYOLOModel;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ly-graph-'));
    model = await LibreYOLO(FIXTURE_MODEL(), { progress: false });
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('graph_info before any capture: not supported on CPU, which cannot capture', () => {
    assert.deepEqual(model.graph_info(), { family: 'yolo9', supported: false, captured: [], graph_count: 0, eager_fallbacks: 0, fallback_reason: null });
  });

  it('refuses an invalid cuda_graph value before reading the source', async () => {
    await assert.rejects(model.predict(MISSING, { cuda_graph: 'yes' }), /Invalid cuda_graph='yes'\. Expected true, false or 'auto'\./);
  });

  it('a family without SUPPORTS_CUDA_GRAPH raises NotImplementedError instead of running eagerly', async () => {
    registerTestFamily('test_nograph', { SUPPORTS_CUDA_GRAPH: false });
    const m = await loadAs('test_nograph', dir);
    try {
      const message = /^NotImplementedError: cuda_graph is not supported for the 'test_nograph' family yet\. Capture requires a forward with no host-visible work, which is verified per family\. Run without cuda_graph=true, or export to ONNX\/TensorRT for a fused deployment path\.$/m;
      await assert.rejects(m.predict(MISSING, { cuda_graph: true }), message);
      await assert.rejects(m.predict(MISSING, { cuda_graph: 'auto' }), message);
      await assert.rejects(m.capture_graph(), message);
      assert.equal(m.graph_info().supported, false);
      assert.equal((await m.predict(SAMPLE_IMAGE, { imgsz: 320, cuda_graph: false }) as Results).path, SAMPLE_IMAGE, 'false is fine');
    } finally {
      await m.close();
      unregisterFamily('test_nograph');
    }
  });

  it('on CPU, capture_graph and predict(cuda_graph) fail saying why, before reading the source', async () => {
    await assert.rejects(model.capture_graph({ imgsz: 320 }), (e: Error) => e.name === 'CudaGraphUnavailable' && CPU_REASON.test(e.message));
    await assert.rejects(model.predict(MISSING, { cuda_graph: true }), CPU_REASON);
    await assert.rejects(model.predict(MISSING, { cuda_graph: 'auto' }), CPU_REASON);
    assert.equal(model.graph_info().graph_count, 0);
    assert.equal(model.graph_info().supported, false, 'a failed capture on CPU does not leave supported: true');
  });

  it('validates capture_graph arguments', async () => {
    await assert.rejects(model.capture_graph({ batch: 0 }), /batch must be >= 1, got 0/);
    await assert.rejects(model.capture_graph({ dtype: 'float16' as 'float32' }), /capture_graph dtype must be 'float32'/);
  });

  it('on CUDA: capture is refused with the onnxruntime-node limitation; eager runs match the CPU where CUDA exists, else the exact device error', async () => {
    const cuda = await probeDevice('cuda:0');
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false, device: 'cuda:0' });
    try {
      await assert.rejects(m.capture_graph(), /cuda_graph cannot capture on device 'cuda:0': onnxruntime-node cannot capture CUDA graphs: its binding passes only deviceId to the CUDA execution provider/);
      await assert.rejects(m.predict(MISSING, { cuda_graph: true }), /onnxruntime-node cannot capture CUDA graphs/);
      assert.deepEqual(m.engine.sessionKeys(), [], 'nothing was created');
      if (cuda.available) {
        const x = probeInput(320);
        assertClose((await m.engine.forward(x)).output, (await model.engine.forward(x)).output, 'cuda:0 vs cpu');
        assert.deepEqual(m.engine.sessionKeys(), ['cuda:0|float32|1x3x320x320']);
      } else {
        await assert.rejects(m.predict(SAMPLE_IMAGE, { imgsz: 320 }), (e: Error) => e.name === 'LibreYOLOError' &&
          /^Device 'cuda:0' is not available: .+\nonnxruntime-node's CUDA execution provider is not installed \(it is skipped at install so `npm ci` works offline\)\. To use CUDA, run `ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node` on a machine with CUDA 12, or pass device=cpu\.$/s.test(e.message));
      }
    } finally {
      await m.close();
    }
  });

  it('on WebGPU: capture, replay and equal outputs where an adapter exists; elsewhere the runtime reason, latched until release_graphs()', async () => {
    const gpu = await probeDevice('webgpu');
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false, device: 'webgpu' });
    try {
      if (gpu.available) {
        await m.capture_graph({ imgsz: 320 });
        let info = m.graph_info();
        assert.equal(info.supported, true);
        assert.deepEqual(info.captured, [{ shape: [1, 3, 320, 320], dtype: 'float32', device: 'webgpu', replays: 0 }]);
        const opts = { imgsz: 320, conf: 0.00016, max_det: 20 } as const;
        const eager = await m.predict(SAMPLE_IMAGE, opts) as Results;
        const replayed = await m.predict(SAMPLE_IMAGE, { ...opts, cuda_graph: true }) as Results;
        info = m.graph_info();
        assert.equal(info.captured[0]!.replays, 1, 'the predict replayed the captured graph');
        assert.equal(info.eager_fallbacks, 0);
        assert.ok(eager.length > 0);
        assert.deepEqual(replayed.boxes.data, eager.boxes.data, 'a replay computes what the eager run computes');
        await m.release_graphs();
        assert.equal(m.graph_info().max_graphs, undefined, 'the cache is gone');
      } else {
        await assert.rejects(m.capture_graph({ imgsz: 320 }), (e: Error) =>
          e.name === 'CudaGraphUnavailable' && /^Graph capture failed for yolo9 at shape \(1, 3, 320, 320\): Device 'webgpu' is not available: .*WebGPU adapter/s.test(e.message));
        const info = m.graph_info();
        assert.equal(info.max_graphs, 8);
        assert.deepEqual(info.captured, []);
        assert.equal(info.supported, false, 'latched after the failed capture');
        await assert.rejects(m.capture_graph({ imgsz: 320 }), /a previous capture failed for yolo9; not retrying \(call release_graphs\(\) to reset\)/);
        await m.release_graphs();
        assert.equal(m.graph_info().max_graphs, undefined, 'the cache is gone');
        await assert.rejects(m.capture_graph({ imgsz: 320 }), /Graph capture failed for yolo9/);
      }
      // Moving the model drops its graphs (a graph records device addresses).
      await m.to('cpu');
      assert.equal(m.graph_info().max_graphs, undefined);
      assert.equal(m.device.id, 'cpu');
    } finally {
      await m.close();
    }
  });

  it('quantize drops captured graphs too', async () => {
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false, device: 'webgpu', warn: () => undefined });
    try {
      if ((await probeDevice('webgpu')).available) {
        await m.capture_graph({ imgsz: 320 });
        assert.equal(m.graph_info().captured.length, 1);
      } else {
        await assert.rejects(m.capture_graph({ imgsz: 320 }), /Device 'webgpu' is not available/);
      }
      assert.equal(m.graph_info().max_graphs, 8);
      await m.quantize({ recipe: 'fp16' });
      assert.equal(m.graph_info().max_graphs, undefined);
    } finally {
      await m.close();
    }
  });

  it('never counts a run that executed kernels as a replay (checked by ORT\'s profiler on a real session)', async () => {
    const engine = new GraphEngine(model.network!, { device: parseDevice('cpu'), threads: 1 });
    try {
      const x = { dtype: 'float32' as const, dims: [1, 3, 64, 64], data: new Float32Array(3 * 64 * 64).fill(0.25) };
      // The CPU provider accepts the WebGPU capture config entry and simply runs every kernel.
      await assert.rejects(captureWebGpu(engine, x, 2), /ORT did not replay a captured graph: the runs after 2 warm-up runs still executed \d+ and \d+ kernels/);
    } finally {
      await engine.close();
    }
    assert.deepEqual(kernelsPerRun([
      { cat: 'Session', name: 'model_run', ts: 0, dur: 10 }, { cat: 'Node', name: 'a', ts: 2, dur: 1 }, { cat: 'Node', name: 'b', ts: 5, dur: 1 },
      { cat: 'Session', name: 'model_run', ts: 20, dur: 5 },
    ]), [2, 0]);
  });

  it('a runner that cannot capture runs eager, warns once and reports the reason (no replays)', async () => {
    const warnings: string[] = [];
    const runner = new GraphRunner(model.engine, 'yolo9', captureWebGpu, (w) => warnings.push(w));
    const x = { dtype: 'float32' as const, dims: [1, 3, 64, 64], data: new Float32Array(3 * 64 * 64).fill(0.5) };
    const eager = await model.engine.forward(x);
    const viaRunner = await runner.run(x, false);
    await runner.run(x, true);
    assert.deepEqual(Array.from(viaRunner.output.data as Float32Array), Array.from(eager.output.data as Float32Array));
    const info = runner.info();
    assert.equal(info.eager_fallbacks, 2);
    assert.match(info.fallback_reason!, /CPU execution provider has no graph capture/);
    assert.deepEqual(info.captured, []);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^cuda_graph requested but running eager for yolo9 \(the CPU execution provider/);
    await runner.release();
    assert.equal(runner.info().eager_fallbacks, 0);
  });
});

describe('predict(source, {device})', () => {
  it('moves the model first: new sessions there, old ones released; the same device is a no-op', async () => {
    const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false });
    try {
      await m.predict(SAMPLE_IMAGE, { imgsz: 320, device: 'cpu' });
      assert.deepEqual(m.engine.sessionKeys(), ['cpu|float32|1x3x320x320']);
      await m.predict(SAMPLE_IMAGE, { imgsz: 320, device: 'CPU' });
      assert.deepEqual(m.engine.sessionKeys(), ['cpu|float32|1x3x320x320'], 'same device, sessions kept');
      // Each GPU either runs (its own session) or refuses with the device error; the CPU sessions go either way.
      if ((await probeDevice('webgpu')).available) {
        await m.predict(SAMPLE_IMAGE, { imgsz: 320, device: 'webgpu' });
        assert.deepEqual(m.engine.sessionKeys(), ['webgpu|float32|1x3x320x320'], 'the CPU sessions were released');
      } else {
        await assert.rejects(m.predict(SAMPLE_IMAGE, { imgsz: 320, device: 'webgpu' }), /Device 'webgpu' is not available/);
        assert.deepEqual(m.engine.sessionKeys(), [], 'the CPU sessions were released');
      }
      assert.equal(m.device.id, 'webgpu');
      if ((await probeDevice('cuda:0')).available) {
        await m.predict(SAMPLE_IMAGE, { imgsz: 320, device: 0 });
        assert.deepEqual(m.engine.sessionKeys(), ['cuda:0|float32|1x3x320x320']);
      } else {
        await assert.rejects(m.predict(SAMPLE_IMAGE, { imgsz: 320, device: 0 }), /Device 'cuda:0' is not available/);
      }
      await m.to('cuda');
      assert.equal(m.device.id, 'cuda:0', "'cuda' is 'cuda:0'");
      const r = await m.predict(SAMPLE_IMAGE, { imgsz: 320, device: 'cpu' }) as Results;
      assert.equal(r.path, SAMPLE_IMAGE);
      assert.deepEqual(m.engine.sessionKeys(), ['cpu|float32|1x3x320x320']);
    } finally {
      await m.close();
    }
  });
});
