/**
 * Every gradient rule checked by central finite differences in exact arithmetic: the lowered
 * gradient graph of each op case runs on the float64 reference interpreter (eps 1e-6), so the
 * tolerance can sit far below what float32 differences allow (test/model/autodiff-rules.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gradCheck64 } from '../helpers/gradcheck.ts';
import { OP_CASES } from '../helpers/op-cases.ts';

const TOL = 1e-6;

describe('autodiff rules (finite differences in float64 through the interpreter)', () => {
  for (const c of OP_CASES) {
    it(`${c.op}: ${c.name}`, async () => {
      const r = await gradCheck64(c.inputs, c.emit);
      assert.ok(r.samples > 0);
      assert.ok(r.maxRelError <= TOL, `max relative error ${r.maxRelError}`);
    });
  }
});
