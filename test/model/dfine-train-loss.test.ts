/**
 * D-FINE's criterion on the original's train step (dfinen_ref_train.safetensors): the IR train
 * forward on ONNX Runtime with the stored denoising draws injected, then the host matchings and the
 * loss graph on its outputs. The main matching equals match_final.img* (through the row pairing of
 * near-tied proposals), and every one of the 38 loss.* and loss_total within 1e-4 relative.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { interpret } from '../../src/graph/interpret/interpreter.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { lowerComposites } from '../../src/graph/passes/lower-composites.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import type { DfineLossContext } from '../../src/models/dfine/loss-targets.ts';
import { DfineNetwork } from '../../src/models/dfine/network.ts';
import { loadDfineStateDict } from '../../src/models/dfine/state-dict.ts';
import { emitDfineTrainForward } from '../../src/models/dfine/train-forward.ts';
import { DFINE_DN_INPUTS, dfineTrainOutputRecord } from '../../src/models/dfine/train-outputs.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fedLossGraph, type FedLossGraph } from '../helpers/dfine-loss-graph.ts';
import { fixtureTargets } from '../helpers/dfine-targets.ts';
import { fixture } from '../helpers/fixtures.ts';

describe('D-FINE n criterion on the original\'s train step', () => {
  let train: Map<string, HostTensor>;
  let preds: Record<string, HostTensor>;
  let fed: FedLossGraph;
  let got: Record<string, number>;

  before(async () => {
    train = readSafetensors(new Uint8Array(readFileSync(fixture('dfinen_ref_train.safetensors'))), 'dfine train fixture').tensors;
    const net = new DfineNetwork({ size: 'n', nc: 80 });
    loadDfineStateDict(net, (await loadCheckpointFile(fixture('dfinen_ref.pt'))).stateDict);
    const b = new GraphBuilder('dfine_train_forward');
    b.training = true;
    const images = b.input('images', 'float32', [2, 3, 640, 640]);
    const record = emitDfineTrainForward(b, net, images, 2, { height: 640, width: 640, dnSlots: 198 });
    for (const [name, { value, dims }] of Object.entries(dfineTrainOutputRecord(record))) b.output(name, value, 'float32', dims);
    lowerComposites(b.graph);
    const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
    const u8 = train.get('input_u8_2x3x640x640')!;
    const feeds: Record<string, ort.Tensor> = { images: new ort.Tensor('float32', Float32Array.from(u8.data as Uint8Array, (v) => Math.fround(v / 255)), u8.dims) };
    for (const name of Object.values(DFINE_DN_INPUTS)) { const t = train.get(name)!; feeds[name] = new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims); }
    const outputs = await session.run(feeds);
    await session.release();
    preds = {};
    for (const [name, t] of Object.entries(outputs)) preds[name] = { dtype: 'float32', dims: [...t.dims], data: t.data as Float32Array };
    const ctx: DfineLossContext = {
      batch: 2, nc: 80, layers: 3, queries: 300, regMax: record.regMax, regScale: record.regScale, project: record.project,
      dn: { slots: 198, numDn: 198, numGroup: 33, positiveIdx: [0, 1].map((i) => Array.from(train.get(`dn.positive_idx.img${i}`)!.data as BigInt64Array, Number)) },
    };
    fed = fedLossGraph(preds, fixtureTargets(train.get('targets_2x4x5')!, 640), ctx, { up: record.up });
    const values = interpret(fed.b.graph, fed.feeds);
    got = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v.data[0]!]));
  });

  it('the main matching is match_final.img0/img1 (row of each matched query paired by its box)', () => {
    const boxes = preds['layer2.pred_boxes']!.data as Float32Array;
    const want = train.get('pred_boxes_train')!.data as Float32Array;
    fed.matchings.byTerm['']!.forEach((m, img) => {
      const wantQ = Array.from(train.get(`match_final.img${img}.query`)!.data as BigInt64Array, Number);
      const wantT = Array.from(train.get(`match_final.img${img}.target`)!.data as BigInt64Array, Number);
      assert.deepEqual(m.targets, wantT, `img${img} gts`);
      m.queries.forEach((q, k) => {
        const r = img * 300 + wantQ[k]!;
        const o = img * 300 + q;
        for (let c = 0; c < 4; c++) assert.ok(Math.abs(boxes[o * 4 + c]! - want[r * 4 + c]!) < 1e-4, `img${img}: our query ${q} is the reference's ${wantQ[k]}`);
      });
    });
  });

  it('every loss.* within 1e-4 relative, and loss_total', () => {
    const worst: Array<[string, number]> = [];
    for (const k of fed.keys) {
      const want = (train.get(`loss.${k}`)!.data as Float32Array)[0]!;
      const rel = Math.abs(got[k]! - want) / Math.max(Math.abs(want), 1e-6);
      worst.push([k, rel]);
      if (want === 0) assert.equal(got[k], 0, k); else assert.ok(rel <= 1e-4, `${k}: ${got[k]} vs ${want} (rel ${rel.toExponential(2)})`);
    }
    assert.equal(fed.keys.length, 38);
    const total = (train.get('loss_total')!.data as Float32Array)[0]!;
    assert.ok(Math.abs(got.total! - total) <= 1e-4 * total, `loss_total ${got.total} vs ${total}`);
    worst.sort((a, b) => b[1] - a[1]);
    console.log(`worst loss rel errors: ${worst.slice(0, 4).map(([k, r]) => `${k} ${r.toExponential(2)}`).join(', ')}; total ${got.total} vs ${total}`);
  });
});
