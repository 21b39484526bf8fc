/**
 * Training D-FINE from scratch the way `libreyolo train model=dfinen data=<6 classes>` does: a fresh
 * model (no checkpoint), its class layers adapted to the dataset's nc by the family's hooks, one
 * train-mode loss on a batch of contract targets. Fresh weights must carry the original's
 * initialisation (score-head bias at the 0.01 prior, PyTorch's default init elsewhere): with an
 * all-zero model every one of the 300 queries scores sigmoid(0) = 0.5 on every class and the
 * trainer's first VFL was ~790 on a synth batch (vs ~3.6 with the init), barely falling after.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { dfineFamily } from '../../src/models/dfine/family.ts';
import { trainingHooks, type DetectionNetwork } from '../../src/models/registry.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { lossAndGradients, releaseCheckSessions } from '../../src/train/check.ts';
import { mulberry32 } from '../../src/util/random.ts';

describe('D-FINE n trained from fresh weights on a 6-class batch', () => {
  let net: DetectionNetwork | null = null;
  after(async () => { if (net) await releaseCheckSessions(net); });

  it('adapts to 6 classes with the prior score bias and gives a VFL in the fresh range', async () => {
    const hooks = trainingHooks(dfineFamily);
    const fresh = dfineFamily.create({ size: 'n' });
    const sd = new Map([...fresh.namedTensors()].map(([k, p]) => [k, p.value]));
    net = hooks.adaptClasses(sd, 'n', 6, 0);
    assert.equal(net.nc, 6);
    const bias = [...net.namedTensors()].find(([k]) => k === 'decoder.dec_score_head.0.bias')![1];
    assert.deepEqual(bias.dims, [6]);
    for (const v of bias.value.data as Float32Array) assert.ok(Math.abs(v - -Math.log(99)) < 1e-5, `score bias ${v}, expected the 0.01 prior`);

    const [B, S, M] = [2, 320, 8];
    const rand = mulberry32(7);
    const images = { data: Float32Array.from({ length: B * 3 * S * S }, () => rand()), dims: [B, 3, S, S] };
    const rows = [
      [3, 0.675, 0.496, 0.94, 0.762], [2, 0.337, 0.35, 0.407, 0.42], // image 0
      [5, 0.405, 0.549, 0.531, 0.755], [0, 0.1, 0.1, 0.3, 0.35], [4, 0.5, 0.6, 0.9, 0.95], // image 1
    ];
    const targets = new Float32Array(B * M * 5);
    for (let i = 0; i < B; i++) for (let r = 0; r < M; r++) targets[(i * M + r) * 5] = -1;
    [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]].forEach(([img, r], k) => targets.set(rows[k]!, (img! * M + r!) * 5));
    const { loss } = await lossAndGradients(dfineFamily, net, parseDevice('cpu'), images, { data: targets, dims: [B, M, 5] }, { threads: 2 });
    for (const [k, v] of Object.entries(loss)) assert.ok(Number.isFinite(v), `loss ${k} = ${v}`);
    // Fresh init: ~3-5 over the decoder layers, encoder and denoising terms; all-zero weights: hundreds.
    assert.ok(loss.vfl! > 0.5 && loss.vfl! < 50, `vfl ${loss.vfl}`);
    assert.ok(loss.total < 100, `total ${loss.total}`);
  });
});
