/**
 * The float64 reference interpreter against ONNX Runtime: every op case of the autodiff suite (its
 * forward, loss and lowered gradient graph, so backward-only ops like ConvTranspose, Pad and
 * ScatterElements run too), and the whole yolo9t inference graph against the original's outputs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { f, GraphBuilder, i, s } from '../../src/graph/builder.ts';
import type { Graph } from '../../src/graph/ir.ts';
import { int64 } from '../../src/graph/nn.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { seededRandom } from '../../src/models/yolo9/init.ts';
import { interpret } from '../../src/graph/interpret/interpreter.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import type { Yolo9Network } from '../../src/models/yolo9/network.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { maxErrors } from '../helpers/compare.ts';
import { fixture } from '../helpers/fixtures.ts';
import { buildGradGraph } from '../helpers/gradcheck.ts';
import { OP_CASES } from '../helpers/op-cases.ts';

/** Runs `graph` on ORT (float32) and the interpreter; every output must agree to float32 rounding. */
async function assertAgreesWithOrt(graph: Graph, feeds: Record<string, HostTensor>, tol = 1e-4): Promise<void> {
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
    for (let k = 0; k < bd.length; k++) assert.ok(Math.abs(a.data[k]! - bd[k]!) <= tol * Math.max(1, Math.abs(bd[k]!)), `${out.name}[${k}]: ${a.data[k]} vs ORT ${bd[k]}`);
  }
}

type KernelCase = { name: string; tol?: number; inputs: Array<{ name: string; dims: number[]; scale?: number }>; emit: (b: GraphBuilder, xs: string[]) => string[] };
const idx = (b: GraphBuilder, values: number[], dims: number[]): string => b.constant('idx', int64(values, dims));

/** Forward-only kernels the gradient graphs do not reach (other reductions, extra outputs, wider ranges). */
const KERNEL_CASES: KernelCase[] = [
  { name: 'ScatterND reduction none', inputs: [{ name: 'd', dims: [4, 3] }, { name: 'u', dims: [2, 3] }], emit: (b, [d, u]) => [b.op('ScatterND', [d!, idx(b, [3, 0], [2, 1]), u!])] },
  { name: 'ScatterElements reduction none', inputs: [{ name: 'd', dims: [3, 4] }, { name: 'u', dims: [3, 2] }], emit: (b, [d, u]) => [b.op('ScatterElements', [d!, idx(b, [1, 3, 0, 2, 3, -1], [3, 2]), u!], { axis: i(1) })] },
  { name: 'LayerNormalization Mean and InvStdDev outputs', inputs: [{ name: 'x', dims: [2, 3, 16], scale: 4 }, { name: 's', dims: [16] }, { name: 'b', dims: [16] }], emit: (b, xs) => b.opMulti('LayerNormalization', xs, 3, { axis: i(-1), epsilon: f(1e-5) }) },
  { name: 'Erf over [-5, 5] (to 1e-6)', tol: 1e-6, inputs: [{ name: 'x', dims: [200], scale: 5 }], emit: (b, [x]) => [b.op('Erf', [x!])] },
  { name: 'GridSample 2x4x9x7 at 5x6 points in [-1.2, 1.2]', inputs: [{ name: 'x', dims: [2, 4, 9, 7] }, { name: 'g', dims: [2, 5, 6, 2], scale: 1.2 }], emit: (b, [x, g]) => [b.op('GridSample', [x!, g!], { mode: s('bilinear'), padding_mode: s('zeros'), align_corners: i(0) })] },
  { name: 'GatherND batch_dims 1 with index pairs', inputs: [{ name: 'x', dims: [2, 3, 4, 5] }], emit: (b, [x]) => [b.op('GatherND', [x!, idx(b, [0, 1, 2, 3, -1, -1, 1, 0], [2, 2, 2])], { batch_dims: i(1) })] },
  { name: 'Tile and Gather on a 4-D tensor', inputs: [{ name: 'x', dims: [2, 1, 3, 2] }], emit: (b, [x]) => [b.op('Gather', [b.op('Tile', [x!, idx(b, [1, 2, 1, 3], [4])]), idx(b, [2, 0, 2], [3])], { axis: i(2) })] },
];

describe('float64 reference interpreter', () => {
  for (const c of OP_CASES) {
    it(`${c.op}: ${c.name} (forward and gradient graph) agrees with ORT`, async () => {
      const { graph, feeds } = await buildGradGraph(c.inputs, c.emit);
      await assertAgreesWithOrt(graph, feeds);
    });
  }

  for (const c of KERNEL_CASES) {
    it(`${c.name} agrees with ORT`, async () => {
      const b = new GraphBuilder('kernel');
      const rand = seededRandom(3);
      const feeds: Record<string, HostTensor> = {};
      const xs = c.inputs.map(({ name, dims, scale = 1 }) => {
        feeds[name] = { dtype: 'float32', dims, data: Float32Array.from({ length: dims.reduce((p, q) => p * q, 1) }, () => (rand() * 2 - 1) * scale) };
        return b.input(name, 'float32', dims);
      });
      c.emit(b, xs).forEach((v, k) => b.output(`out${k}`, v, 'float32', []));
      await assertAgreesWithOrt(b.graph, feeds, c.tol);
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
