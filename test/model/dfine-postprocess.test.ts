/**
 * D-FINE's top-k postprocess against the original's (dfinen_ref_io: topk_* with conf -1 and max_det
 * 300 at the stored original sizes, det_* with conf 0.5), fed the reference network outputs so only
 * the postprocess is under test: equal as sets matched by class and box (boxes within 1e-3 px).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { dfineTopk } from '../../src/models/dfine/postprocess.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { assertSameDetectionSet } from '../helpers/detr-rows.ts';
import { fixture } from '../helpers/fixtures.ts';

const io: Map<string, HostTensor> = readSafetensors(new Uint8Array(readFileSync(fixture('dfinen_ref_io.safetensors'))), 'dfine io fixture').tensors;
const get = (name: string): HostTensor => {
  const t = io.get(name);
  assert.ok(t, `fixture has ${name}`);
  return t;
};

describe('D-FINE postprocess (top-k over queries x classes)', () => {
  const cases: Array<{ shape: string; img: number; h: number; w: number }> = [
    { shape: '1x3x640x640', img: 0, h: 480, w: 640 },
    { shape: '2x3x640x640', img: 0, h: 427, w: 640 },
    { shape: '2x3x640x640', img: 1, h: 300, w: 200 },
  ];
  for (const c of cases) {
    it(`topk_${c.shape}[${c.img}]: all 300 (conf -1) at original ${c.w}x${c.h}`, () => {
      const got = dfineTopk(get(`pred_logits_${c.shape}`).data as Float32Array, get(`pred_boxes_${c.shape}`).data as Float32Array,
        c.img * 300, 300, 80, { conf: -1, maxDet: 300, origWidth: c.w, origHeight: c.h });
      const suffix = `${c.shape}[${c.img}]`;
      assertSameDetectionSet(got, get(`topk_boxes_xyxy_${suffix}`).data as Float32Array, get(`topk_scores_${suffix}`).data as Float32Array, get(`topk_labels_${suffix}`).data as BigInt64Array, 1e-3, 1e-6);
    });
  }

  it('det_1x3x640x640: conf 0.5 keeps the original\'s 54 detections', () => {
    const got = dfineTopk(get('pred_logits_1x3x640x640').data as Float32Array, get('pred_boxes_1x3x640x640').data as Float32Array,
      0, 300, 80, { conf: 0.5, maxDet: 300, origWidth: 640, origHeight: 480 });
    assertSameDetectionSet(got, get('det_boxes_xyxy_1x3x640x640').data as Float32Array, get('det_scores_1x3x640x640').data as Float32Array, get('det_classes_1x3x640x640').data as BigInt64Array, 1e-3, 1e-6);
  });

  it('image_det_*: the 29 detections of predict(parkour.jpg, conf 0.5) from the stored network outputs', () => {
    const got = dfineTopk(get('image_pred_logits').data as Float32Array, get('image_pred_boxes').data as Float32Array,
      0, 300, 80, { conf: 0.5, maxDet: 300, origWidth: 1280, origHeight: 852 });
    assertSameDetectionSet(got, get('image_det_boxes_xyxy').data as Float32Array, get('image_det_scores').data as Float32Array, get('image_det_classes').data as BigInt64Array, 1e-3, 1e-6);
  });
});
