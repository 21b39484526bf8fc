/**
 * RF-DETR's training recipe: the AdamW groups on the real RF-DETR-n key list (rfdetrn_ref.pt), every
 * parameter's lr and weight decay as the original computes them (one group per parameter: the other
 * parameters, then the DINOv2 encoder with its layer-wise decay, then the decoder at lr0 x 0.7).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { RfdetrNetwork } from '../../src/models/rfdetr/network.ts';
import { rfdetrParamGroups } from '../../src/models/rfdetr/param-groups.ts';
import { Optimizer } from '../../src/train/optimizer.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { fixture } from '../helpers/fixtures.ts';

/** The spec's rule, written out again: layer id 0 for embeddings, i + 1 in encoder.layer.i, 14 otherwise. */
function expectedEncoderLr(key: string): number {
  const m = /\.encoder\.layer\.(\d+)\./.exec(key);
  const id = key.includes('.embeddings.') ? 0 : m ? Number(m[1]) + 1 : 14;
  return 1.5e-4 * 0.8 ** (14 - id) * 0.7 ** 2;
}

const close = (a: number, b: number, what: string): void => assert.ok(Math.abs(a - b) <= 1e-15 * Math.abs(b), `${what}: ${a} vs ${b}`);

describe('RF-DETR optimizer groups', () => {
  let keys: string[];
  before(async () => {
    keys = [...(await loadCheckpointFile(fixture('rfdetrn_ref.pt'))).stateDict.keys()];
  });

  it("the network's state_dict order is the original's (the optimizer's parameter indices follow it)", () => {
    const net = new RfdetrNetwork({ size: 'n', nc: 80, task: 'detect' });
    assert.deepEqual([...net.namedTensors()].map(([k]) => k), keys);
  });

  it('every one of the 465 parameters: its own group, lr and weight decay as the original computes them (lr0 1e-4, wd 1e-4)', () => {
    assert.equal(keys.length, 465);
    const lr0 = 1e-4, wd = 1e-4;
    const groups = rfdetrParamGroups(keys, { weightDecay: wd, lr0 });
    assert.equal(groups.length, 465);
    assert.ok(groups.every((g) => g.keys.length === 1 && g.name === g.keys[0]));
    const isEncoder = (k: string): boolean => k.startsWith('backbone.0.encoder.');
    const isDecoder = (k: string): boolean => k.startsWith('transformer.decoder.');
    // The original's order: the rest, then the encoder, then the decoder, each in state_dict order.
    const want = [...keys.filter((k) => !isEncoder(k) && !isDecoder(k)), ...keys.filter(isEncoder), ...keys.filter(isDecoder)];
    assert.deepEqual(groups.map((g) => g.keys[0]), want);
    let encoder = 0;
    for (const g of groups) {
      const k = g.keys[0]!;
      const lr = lr0 * g.lrMult;
      if (isEncoder(k)) {
        encoder++;
        close(lr, expectedEncoderLr(k), k);
        const noDecay = /gamma|pos_embed|rel_pos|bias|norm|embeddings/.test(k);
        assert.equal(g.weightDecay, noDecay ? 0 : wd, k);
      } else {
        close(lr, isDecoder(k) ? lr0 * 0.7 : lr0, k);
        assert.equal(g.weightDecay, wd, `${k}: groups outside the encoder take the run's decay, norms and biases too`);
      }
    }
    // 5 embedding tensors (cls, mask, position, patch conv weight and bias), 18 per ViT layer, the final LayerNorm's 2.
    assert.equal(encoder, 5 + 12 * 18 + 2);
  });

  it('hand-checked keys: the decay table of the spec (embeddings 3.23e-6, layer 0 4.04e-6, layer 11 4.70e-5, final layernorm 7.35e-5)', () => {
    const groups = rfdetrParamGroups(keys, { weightDecay: 1e-4, lr0: 1e-4 });
    const of = (k: string): { lr: number; wd: number } => {
      const g = groups.find((x) => x.keys[0] === k);
      assert.ok(g, k);
      return { lr: 1e-4 * g.lrMult, wd: g.weightDecay };
    };
    const E = 'backbone.0.encoder.encoder.';
    // Python's 1.5e-4 * 0.8 ** (14 - id) * 0.7 ** 2 for id 0, 1, 12, 14.
    close(of(`${E}embeddings.patch_embeddings.projection.weight`).lr, 3.232564185661442e-06, 'embeddings');
    close(of(`${E}encoder.layer.0.mlp.fc1.weight`).lr, 4.040705232076802e-06, 'layer 0');
    close(of(`${E}encoder.layer.11.attention.attention.query.weight`).lr, 4.7040000000000004e-05, 'layer 11');
    close(of(`${E}layernorm.weight`).lr, 7.349999999999998e-05, 'final layernorm');
    assert.equal(of(`${E}embeddings.patch_embeddings.projection.weight`).wd, 0, 'embeddings take no decay');
    assert.equal(of(`${E}embeddings.cls_token`).wd, 0);
    assert.equal(of(`${E}encoder.layer.3.layer_scale1.lambda1`).wd, 1e-4, 'LayerScale keeps its decay');
    assert.equal(of(`${E}encoder.layer.3.norm2.weight`).wd, 0);
    assert.equal(of(`${E}encoder.layer.3.mlp.fc2.bias`).wd, 0);
    assert.equal(of(`${E}encoder.layer.3.mlp.fc2.weight`).wd, 1e-4);
    assert.equal(of(`${E}layernorm.bias`).wd, 0);
    assert.deepEqual(of('transformer.decoder.layers.1.norm3.weight'), { lr: 1e-4 * 0.7, wd: 1e-4 });
    assert.deepEqual(of('class_embed.bias'), { lr: 1e-4, wd: 1e-4 });
    assert.deepEqual(of('backbone.0.projector.stages.0.1.weight'), { lr: 1e-4, wd: 1e-4 });
    assert.deepEqual(of('transformer.enc_out_class_embed.12.weight'), { lr: 1e-4, wd: 1e-4 });
  });

  it("the encoder's lr is absolute: at lr0 2e-4 its multipliers halve and the optimizer's lr stays; the rest scale with lr0", () => {
    const net = new RfdetrNetwork({ size: 'n', nc: 80, task: 'detect' });
    const opt = Optimizer.create(net.namedTensors(), { optimizer: 'adamw', lr0: 2e-4, weightDecay: 1e-4 }, (k) => rfdetrParamGroups(k, { weightDecay: 1e-4, lr0: 2e-4 }));
    opt.setLr(2e-4);
    const lr = (k: string): number => opt.groups.find((g) => g.name === k)!.lr;
    close(lr('backbone.0.encoder.encoder.layernorm.weight'), 7.349999999999998e-05, 'encoder');
    close(lr('transformer.decoder.norm.weight'), 1.4e-4, 'decoder');
    close(lr('query_feat.weight'), 2e-4, 'queries');
    // The step schedule's x0.1 reaches every group alike.
    opt.setLr(2e-5);
    close(lr('backbone.0.encoder.encoder.layernorm.weight'), 7.349999999999998e-06, 'encoder after the drop');
  });
});
