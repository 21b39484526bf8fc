/** Every gradient rule checked by central finite differences through ONNX Runtime. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { registeredOps } from '../../src/graph/autodiff/rules.ts';
import { gradCheck } from '../helpers/gradcheck.ts';
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
