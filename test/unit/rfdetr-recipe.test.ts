/**
 * RF-DETR's recipe as values (src/models/rfdetr/recipe.ts, head-reinit.ts): the AdamW groups over
 * the real nano keys with the original's checked LRs, lrMult against lr0, the step schedule, the
 * per-step multi-scale sizes (CPython's random.Random(step).choice), the train canvas, and the
 * class-head tiling for a new nc.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RfdetrNetwork } from '../../src/models/rfdetr/network.ts';
import { resizeClassHeads } from '../../src/models/rfdetr/head-reinit.ts';
import {
  RFDETR_TRAIN_DEFAULTS, rfdetrEncoderLr, rfdetrMultiScales, rfdetrParamGroups, rfdetrSchedule, rfdetrStepScale, rfdetrTrainCanvas,
} from '../../src/models/rfdetr/recipe.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { resolveTrainConfig, TRAIN_DEFAULTS } from '../../src/train/config.ts';
import { Optimizer } from '../../src/train/optimizer.ts';

const net = new RfdetrNetwork({ size: 'n', nc: 80 });
const keys = [...net.namedTensors()].filter(([, p]) => p.kind === 'parameter').map(([k]) => k);
const E = 'backbone.0.encoder.encoder.';
const rel = (a: number, b: number, tol: number, what: string): void => assert.ok(Math.abs(a - b) <= tol * Math.abs(b), `${what}: ${a} vs ${b}`);

describe('RF-DETR parameter groups', () => {
  const groups = rfdetrParamGroups(keys, { weightDecay: 1e-4, lr0: 1e-4 });
  const groupOf = (key: string) => groups.find((g) => g.keys.includes(key))!;
  const lrOf = (key: string, lr0 = 1e-4) => groupOf(key).lrMult * lr0;

  it('cover every trainable key once', () => {
    const all = groups.flatMap((g) => g.keys);
    assert.equal(all.length, keys.length);
    assert.equal(new Set(all).size, keys.length);
  });

  it('encoder LRs as the original (embeddings 3.23e-6, layer 0 4.04e-6, layer 11 4.70e-5, layernorm 7.35e-5)', () => {
    rel(lrOf(`${E}embeddings.patch_embeddings.projection.weight`), 3.23e-6, 2e-3, 'embeddings');
    rel(lrOf(`${E}embeddings.position_embeddings`), 3.23e-6, 2e-3, 'position table');
    rel(lrOf(`${E}encoder.layer.0.attention.attention.query.weight`), 4.04e-6, 2e-3, 'layer 0');
    rel(lrOf(`${E}encoder.layer.11.mlp.fc2.weight`), 4.70e-5, 2e-3, 'layer 11');
    rel(lrOf(`${E}layernorm.weight`), 7.35e-5, 2e-3, 'layernorm');
    rel(lrOf(`${E}encoder.layer.5.norm1.bias`), 1.5e-4 * 0.8 ** 8 * 0.49, 1e-12, 'layer 5 exactly');
  });

  it('the encoder keeps its absolute LR whatever lr0; the decoder is lr0 x 0.7, the rest lr0', () => {
    const g2 = rfdetrParamGroups(keys, { weightDecay: 1e-4, lr0: 3e-4 });
    const at = (key: string) => g2.find((g) => g.keys.includes(key))!.lrMult * 3e-4;
    rel(at(`${E}encoder.layer.11.mlp.fc2.weight`), 4.70e-5, 2e-3, 'layer 11 at lr0 3e-4');
    rel(at('transformer.decoder.layers.0.linear1.weight'), 2.1e-4, 1e-12, 'decoder');
    rel(at('class_embed.weight'), 3e-4, 1e-12, 'class head');
    rel(at('backbone.0.projector.stages.0.0.cv1.conv.weight'), 3e-4, 1e-12, 'projector');
  });

  it('no weight decay in the encoder for gamma/pos_embed/rel_pos/bias/norm/embeddings; LayerScale and the rest decay', () => {
    assert.equal(groupOf(`${E}embeddings.cls_token`).weightDecay, 0);
    assert.equal(groupOf(`${E}encoder.layer.3.norm2.weight`).weightDecay, 0);
    assert.equal(groupOf(`${E}encoder.layer.3.mlp.fc1.bias`).weightDecay, 0);
    assert.equal(groupOf(`${E}layernorm.bias`).weightDecay, 0);
    assert.equal(groupOf(`${E}encoder.layer.3.layer_scale1.lambda1`).weightDecay, 1e-4);
    assert.equal(groupOf(`${E}encoder.layer.3.mlp.fc1.weight`).weightDecay, 1e-4);
    // Outside the encoder norms and biases decay too.
    assert.equal(groupOf('transformer.decoder.layers.0.norm1.bias').weightDecay, 1e-4);
    assert.equal(groupOf('transformer.enc_output_norm.0.weight').weightDecay, 1e-4);
    assert.equal(groupOf('class_embed.bias').weightDecay, 1e-4);
  });

  it('a bad lr0 is refused', () => {
    assert.throws(() => rfdetrParamGroups(keys, { weightDecay: 1e-4, lr0: 0 }), /lr0 must be > 0/);
  });

  it('rfdetrEncoderLr: 0.8^(14 - id) x 0.7^2 x 1.5e-4', () => {
    rel(rfdetrEncoderLr(`${E}encoder.layer.0.norm1.weight`), 1.5e-4 * 0.8 ** 13 * 0.49, 1e-12, 'id 1');
  });
});

describe('RF-DETR step schedule', () => {
  const c = { lr0: 1e-4, epochs: 100, stepsPerEpoch: 10, warmupEpochs: 0, warmupLrStart: 1e-4, minLrRatio: 0.01, noAugEpochs: 0, lrDrop: 100 };
  it('constant lr0 with the defaults (the drop at epoch 100 never comes)', () => {
    for (const k of [0, 1, 500, 999]) assert.equal(rfdetrSchedule(c).lr(k), 1e-4);
  });
  it('x0.1 from lr_drop epochs on, per optimizer step', () => {
    const s = rfdetrSchedule({ ...c, lrDrop: 3 });
    assert.equal(s.lr(29), 1e-4);
    rel(s.lr(30), 1e-5, 1e-12, 'step 30');
  });
  it('linear warm-up when warmup_epochs > 0', () => {
    const s = rfdetrSchedule({ ...c, warmupEpochs: 2, warmupLrStart: 1e-6 });
    assert.equal(s.lr(0), 1e-6);
    rel(s.lr(10), 1e-6 + (1e-4 - 1e-6) / 2, 1e-12, 'half-way');
    assert.equal(s.lr(20), 1e-4);
  });
});

describe('RF-DETR multi-scale', () => {
  it('11 sizes around S; n 224..544, the train canvas the largest', () => {
    assert.deepEqual(rfdetrMultiScales(384), [224, 256, 288, 320, 352, 384, 416, 448, 480, 512, 544]);
    assert.deepEqual({ n: rfdetrTrainCanvas(384), s: rfdetrTrainCanvas(512), m: rfdetrTrainCanvas(576), l: rfdetrTrainCanvas(704) }, { n: 544, s: 672, m: 736, l: 864 });
    assert.deepEqual(rfdetrMultiScales(96), [64, 96, 128, 160, 192, 224, 256]);
    assert.throws(() => rfdetrMultiScales(100), /multiple of 32/);
  });
  it('step k takes random.Random(k).choice(scales), as CPython', () => {
    // python3: [random.Random(s).choice(list(range(224,545,32))) for s in range(20)]
    assert.deepEqual(Array.from({ length: 20 }, (_, k) => rfdetrStepScale(k, 384)),
      [416, 288, 224, 320, 320, 512, 512, 384, 320, 448, 512, 448, 448, 352, 256, 320, 384, 480, 288, 544]);
  });
  it('the defaults are the original\'s', () => {
    assert.deepEqual([RFDETR_TRAIN_DEFAULTS.lr0, RFDETR_TRAIN_DEFAULTS.batch, RFDETR_TRAIN_DEFAULTS.nbs, RFDETR_TRAIN_DEFAULTS.ema_decay, RFDETR_TRAIN_DEFAULTS.ema_tau,
      RFDETR_TRAIN_DEFAULTS.lr_drop, RFDETR_TRAIN_DEFAULTS.clip_max_norm, RFDETR_TRAIN_DEFAULTS.crop_resize_prob], [1e-4, 4, 16, 0.993, 100, 100, 0.1, 0.5]);
  });
});

describe('RF-DETR class-head re-initialisation', () => {
  const head = (rows: number, width: number): HostTensor => ({
    dtype: 'float32', dims: width ? [rows, width] : [rows], data: Float32Array.from({ length: rows * (width || 1) }, (_, i) => i),
  });
  const sd = new Map<string, HostTensor>([
    ['class_embed.weight', head(4, 2)], ['class_embed.bias', head(4, 0)],
    ['transformer.enc_out_class_embed.0.weight', head(4, 2)], ['transformer.enc_out_class_embed.12.bias', head(4, 0)],
    ['bbox_embed.layers.2.bias', head(4, 0)],
  ]);
  it('truncates to nc + 1 rows (a COCO head to 2 classes keeps rows 0..2)', () => {
    const out = resizeClassHeads(sd, 2);
    assert.deepEqual(out.get('class_embed.weight')!.dims, [3, 2]);
    assert.deepEqual([...out.get('class_embed.weight')!.data], [0, 1, 2, 3, 4, 5]);
    assert.deepEqual([...out.get('transformer.enc_out_class_embed.12.bias')!.data], [0, 1, 2]);
    assert.equal(out.get('bbox_embed.layers.2.bias'), sd.get('bbox_embed.layers.2.bias'));
  });
  it('tiles the old rows to a larger nc', () => {
    const out = resizeClassHeads(sd, 5);
    assert.deepEqual([...out.get('class_embed.bias')!.data], [0, 1, 2, 3, 0, 1]);
    assert.deepEqual([...out.get('transformer.enc_out_class_embed.0.weight')!.data], [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3]);
    assert.deepEqual(out.get('transformer.enc_out_class_embed.0.weight')!.dims, [6, 2]);
  });
  it('refuses a bad nc and a state dict without a class head', () => {
    assert.throws(() => resizeClassHeads(sd, 0), /nc >= 1/);
    assert.throws(() => resizeClassHeads(new Map([['bbox_embed.layers.2.bias', head(4, 0)]]), 3), /no RF-DETR class head/);
  });
  it('works on the real network\'s 14 class heads', () => {
    const out = resizeClassHeads(new Map([...net.namedTensors()].map(([k, p]) => [k, p.value])), 3);
    const resized = [...out].filter(([k, t]) => /class_embed/.test(k) && t.dims[0] === 4);
    assert.equal(resized.length, 28);
  });
});

describe('RF-DETR groups in the core optimizer, and the recipe\'s train options', () => {
  it('the schedule\'s lr0 times lrMult gives each group its own LR', () => {
    const opt = Optimizer.create(net.namedTensors(), { optimizer: 'adamw', lr0: 2e-4, weightDecay: 1e-4 }, (k) => rfdetrParamGroups(k, { weightDecay: 1e-4, lr0: 2e-4 }));
    opt.setLr(2e-4);
    const lr = (name: string) => opt.groups.find((g) => g.name === name)!.lr;
    rel(lr('encoder.0.no_wd'), 3.23e-6, 2e-3, 'embeddings');
    rel(lr('encoder.14.no_wd'), 7.35e-5, 2e-3, 'layernorm');
    rel(lr('decoder'), 1.4e-4, 1e-12, 'decoder');
    rel(lr('other'), 2e-4, 1e-12, 'other');
  });

  it('the new options leave the other families as they were, and are checked', () => {
    assert.deepEqual([TRAIN_DEFAULTS.ema_tau, TRAIN_DEFAULTS.lr_drop, TRAIN_DEFAULTS.crop_resize_prob, TRAIN_DEFAULTS.expanded_scales], [2000, null, 0, true]);
    const warn = () => undefined;
    const cfg = resolveTrainConfig({ data: 'x.yaml', multi_scale: false }, warn, RFDETR_TRAIN_DEFAULTS);
    assert.deepEqual([cfg.ema_tau, cfg.lr_drop, cfg.crop_resize_prob, cfg.ema_decay, cfg.nbs], [100, 100, 0.5, 0.993, 16]);
    assert.throws(() => resolveTrainConfig({ data: 'x.yaml', expanded_scales: false }, warn), /expanded_scales=false is not supported/);
    assert.throws(() => resolveTrainConfig({ data: 'x.yaml', ema_tau: 0 }, warn), /ema_tau/);
    assert.throws(() => resolveTrainConfig({ data: 'x.yaml', crop_resize_prob: 2 }, warn), /crop_resize_prob/);
    assert.throws(() => resolveTrainConfig({ data: 'x.yaml', lr_drop: -1 }, warn), /lr_drop/);
    // multi_scale, the original's default, is on (the family's per-step multi-scale).
    assert.equal(resolveTrainConfig({ data: 'x.yaml' }, warn, RFDETR_TRAIN_DEFAULTS).multi_scale, true);
  });
});
