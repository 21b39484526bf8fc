/** Every gradient rule checked by central finite differences through ONNX Runtime. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { registeredOps } from '../../src/graph/autodiff/rules.ts';
import * as ort from 'onnxruntime-node';
import { i, s } from '../../src/graph/builder.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { buildGradGraph, gradCheck } from '../helpers/gradcheck.ts';
import { OP_CASES } from '../helpers/op-cases.ts';

const TOL = 2e-3;

describe('autodiff rules (finite differences through ORT)', () => {
  for (const c of OP_CASES) {
    it(`${c.op}: ${c.name}`, async () => {
      const r = await gradCheck(c.inputs, c.emit, { eps: c.eps ?? 1e-2 });
      assert.ok(r.samples > 0);
      assert.ok(r.maxRelError <= TOL, `max relative error ${r.maxRelError}`);
    });
  }

  it('every registered rule has a finite-difference case', () => {
    const covered = new Set(OP_CASES.map((c) => c.op));
    assert.deepEqual(registeredOps().filter((op) => !covered.has(op)), []);
  });
});

describe('GridSample gradient on a NaN coordinate (a diverged forward)', () => {
  it('samples nothing there, as torch: finite input gradient, zero grid gradient, no invalid index', async () => {
    const grid = Float32Array.from({ length: 2 * 2 * 2 * 2 }, (_, k) => ((k * 7) % 11) / 11 - 0.5);
    grid[2] = Number.NaN; // image 0, sample (0, 1), x
    const { graph, feeds } = await buildGradGraph(
      [{ name: 'x', dims: [2, 3, 4, 5] }, { name: 'grid', dims: [2, 2, 2, 2], data: grid }],
      (b, [x, g]) => b.op('GridSample', [x!, g!], { mode: s('bilinear'), padding_mode: s('zeros'), align_corners: i(0) }),
    );
    const session = await ort.InferenceSession.create(serializeModel(graph));
    try {
      const out = await session.run(Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, new ort.Tensor('float32', t.data as Float32Array, t.dims)])));
      const dx = out.grad_x!.data as Float32Array;
      const dGrid = out.grad_grid!.data as Float32Array;
      assert.ok(dx.every(Number.isFinite), 'input gradient is finite');
      assert.ok(dGrid[2] === 0 && dGrid[3] === 0, `the NaN sample has no grid gradient: ${dGrid[2]}, ${dGrid[3]}`);
      assert.ok(dGrid.some((v, k) => k > 3 && v !== 0), 'the other samples keep theirs');
    } finally {
      await session.release();
    }
  });
});
