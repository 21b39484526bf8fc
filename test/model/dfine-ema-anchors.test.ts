/**
 * D-FINE checkpoints written by a training run load back: the EMA rounds every float buffer on
 * each update (`d a + (1 - d) a` in float32), so the stored 640 anchors walk away from the
 * generated ones by ulps, past 1e-6 relative within a few dozen updates at a constant decay (a
 * 30-epoch DEIM run failed its last validation that way); anchors of another layout are refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stateDictOf } from '../../src/graph/state-dict.ts';
import { generateAnchors } from '../../src/models/dfine/decoder.ts';
import { dfineFamily } from '../../src/models/dfine/family.ts';
import { ModelEMA } from '../../src/train/ema.ts';

const ANCHORS = 'decoder.anchors';

function worstRelative(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let k = 0; k < a.length; k++) if (Number.isFinite(a[k]!)) worst = Math.max(worst, Math.abs(a[k]! - b[k]!) / Math.max(1, Math.abs(b[k]!)));
  return worst;
}

describe('D-FINE anchors through the training EMA', () => {
  const net = dfineFamily.create({ size: 'n', nc: 6 });
  const generated = stateDictOf(net).get(ANCHORS)!.data as Float32Array;

  it('loads EMA weights whose anchors drifted by rounding', () => {
    // D-FINE's EMA after its restart: a constant 0.9999, where the rounding walks an ulp per update.
    // Only the anchors go through the 3000 updates (the EMA treats each entry alone).
    const anchors = [...net.namedTensors()].filter(([k]) => k === ANCHORS);
    const ema = new ModelEMA(anchors, 0.9999, 2000);
    ema.setConstantDecay(0.9999);
    for (let u = 0; u < 3000; u++) ema.update(anchors);
    const drift = worstRelative(ema.state.get(ANCHORS)!.data as Float32Array, generated);
    assert.ok(drift > 1e-4 && drift < 1e-3, `anchors drift ${drift} after 3000 EMA updates`);
    const back = dfineFamily.create({ size: 'n', stateDict: new Map([...stateDictOf(net), ...ema.state]) });
    assert.equal(back.nc, 6);
  });

  it('refuses anchors of another layout', () => {
    const sd = stateDictOf(net);
    // The anchors of a 512x800 input: as many tokens (2000 at strides 16 and 32, D-FINE n) as 640x640, another grid.
    const other = generateAnchors([[32, 50], [16, 25]]).anchors;
    assert.equal(other.length, generated.length);
    sd.set(ANCHORS, { dtype: 'float32', dims: sd.get(ANCHORS)!.dims, data: other });
    assert.throws(() => dfineFamily.create({ size: 'n', stateDict: sd }), /decoder\.anchors in the checkpoint differs from the 640x640 buffers/);
  });
});
