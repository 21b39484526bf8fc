/**
 * The float64 reference interpreter against ONNX Runtime: every op case of the autodiff suite (its
 * forward, loss and lowered gradient graph, so backward-only ops like ConvTranspose, Pad and
 * ScatterElements run too), and the whole yolo9t inference graph against the original's outputs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../src/graph/builder.ts';
import { interpret } from '../src/graph/interpret/interpreter.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { yolo9Family } from '../src/models/yolo9/family.ts';
import type { Yolo9Network } from '../src/models/yolo9/network.ts';
import { loadCheckpointFile } from '../src/weights/checkpoint.ts';
import { readSafetensors } from '../src/weights/safetensors.ts';
import { maxErrors } from './helpers/compare.ts';
import { fixture } from './helpers/fixtures.ts';
import { buildGradGraph } from './helpers/gradcheck.ts';
import { OP_CASES } from './helpers/op-cases.ts';

describe('float64 reference interpreter', () => {
  for (const c of OP_CASES) {
    it(`${c.op}: ${c.name} (forward and gradient graph) agrees with ORT`, async () => {
      const { graph, feeds } = await buildGradGraph(c.inputs, c.emit);
      const session = await ort.InferenceSession.create(serializeModel(graph), { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
      const ortFeeds = Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, new ort.Tensor('float32', t.data as Float32Array, t.dims)]));
      const want = await session.run(ortFeeds);
      await session.release();
      const got = interpret(graph, feeds);
      for (const out of graph.outputs) {
        const a = got[out.name]!;
        const b = want[out.name]!;
        assert.deepEqual(a.dims, [...b.dims], `${out.name} dims`);
        const bd = b.data as Float32Array;
        for (let k = 0; k < bd.length; k++) assert.ok(Math.abs(a.data[k]! - bd[k]!) <= 1e-4 * Math.max(1, Math.abs(bd[k]!)), `${out.name}[${k}]: ${a.data[k]} vs ORT ${bd[k]}`);
      }
    });
  }

  it('fails loudly on an op it has no kernel for', () => {
    const b = new GraphBuilder('t');
    const x = b.input('x', 'float32', [2]);
    b.output('y', b.op('Det', [x]), 'float32', [2]);
    assert.throws(() => interpret(b.graph, { x: { dtype: 'float32', dims: [2], data: new Float32Array(2) } }), /no kernel for Det/);
  });

  it('runs the yolo9t inference graph to the original outputs', async () => {
    const io = readSafetensors(new Uint8Array(readFileSync(fixture('yolo9t_ref_io.safetensors'))), 'io fixture').tensors;
    const net = yolo9Family.create({ size: 't', stateDict: (await loadCheckpointFile(fixture('yolo9t_ref.pt'))).stateDict }) as Yolo9Network;
    const b = new GraphBuilder('t');
    net.emitInference(b, { batch: 2, height: 320, width: 256, rawOutputs: false });
    const y = interpret(b.graph, { images: io.get('input_2x3x320x256')! }).output!;
    const { box, score } = maxErrors({ dtype: 'float64', dims: y.dims, data: y.data }, io.get('predictions_2x3x320x256')!);
    assert.ok(box <= 1e-3 && score <= 1e-4, `max error boxes ${box} px, scores ${score}`);
  });
});
