import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cocoEvaluate, IOU_THRESHOLDS, metricsDict, perClassAP, RECALL_THRESHOLDS, type DetBox, type GtBox } from '../../src/val/metrics.ts';

const gt = (image: number, cls: number, x1: number, y1: number, x2: number, y2: number, extra: Partial<GtBox> = {}): GtBox => ({ image, cls, x1, y1, x2, y2, ...extra });
const det = (image: number, cls: number, x1: number, y1: number, x2: number, y2: number, score: number): DetBox => ({ image, cls, x1, y1, x2, y2, score });

const close = (a: number, b: number, msg?: string): void => assert.ok(Math.abs(a - b) < 1e-12, `${msg ?? ''} ${a} != ${b}`);

function metrics(gts: GtBox[], dets: DetBox[]): Record<string, number> {
  return metricsDict(cocoEvaluate(gts, dets));
}

describe('COCO-style metrics (hand-computed)', () => {
  it('uses numpy linspace thresholds', () => {
    assert.equal(IOU_THRESHOLDS.length, 10);
    assert.equal(IOU_THRESHOLDS[0], 0.5);
    assert.equal(IOU_THRESHOLDS[5], 0.75);
    assert.equal(IOU_THRESHOLDS[9], 0.95);
    assert.equal(RECALL_THRESHOLDS.length, 101);
    assert.equal(RECALL_THRESHOLDS[50], 0.5);
    assert.equal(RECALL_THRESHOLDS[100], 1);
  });

  it('a perfect detection scores 1; other area ranges are undefined (-1)', () => {
    const r = cocoEvaluate([gt(0, 0, 0, 0, 10, 10)], [det(0, 0, 0, 0, 10, 10, 0.9)]);
    // precision is tp / (tp + fp + eps) as pycocotools computes it, so "1" is 1 - 2.2e-16
    [1, 1, 1, 1, -1, -1, 1, 1, 1, 1, -1, -1].forEach((v, i) => close(r.stats[i]!, v, `stats[${i}]`));
    const m = metricsDict(r);
    close(m['metrics/precision']!, 1);
    assert.equal(m['metrics/recall'], 1);
    close(m['metrics/mAP50-95']!, 1);
    close(m['metrics/mAP50(B)']!, 1);
  });

  it('a higher-scored false positive halves precision at every recall level', () => {
    // sorted: FP (0.9), TP (0.8): precision [0, 0.5] -> envelope [0.5, 0.5]; recall [0, 1]
    const r = cocoEvaluate([gt(0, 0, 0, 0, 50, 50)], [det(0, 0, 60, 60, 90, 90, 0.9), det(0, 0, 0, 0, 50, 50, 0.8)]);
    close(r.stats[0]!, 0.5);
    close(r.stats[1]!, 0.5);
    assert.equal(r.stats[6], 0, 'AR1: only the false positive is kept');
    assert.equal(r.stats[7], 1, 'AR10');
    const m = metricsDict(r);
    close(m['metrics/precision']!, 0.5);
    assert.equal(m['metrics/recall'], 1);
  });

  it('101-point interpolation over two objects', () => {
    // d1 (.9) matches A, d2 (.8) is a FP, d3 (.7) matches B
    // recall [.5, .5, 1], precision [1, .5, 2/3] -> envelope [1, 2/3, 2/3]
    // recall thresholds 0..0.50 (51 points) -> 1, 0.51..1.00 (50 points) -> 2/3
    const gts = [gt(0, 0, 0, 0, 100, 100), gt(0, 0, 200, 200, 300, 300)];
    const dets = [det(0, 0, 0, 0, 100, 100, 0.9), det(0, 0, 400, 400, 450, 450, 0.8), det(0, 0, 200, 200, 300, 300, 0.7)];
    const m = metrics(gts, dets);
    const ap = (51 + 50 * (2 / 3)) / 101;
    close(m['metrics/mAP50']!, ap);
    close(m['metrics/mAP50-95']!, ap);
    close(m['metrics/mAP75']!, ap);
    close(m['metrics/precision']!, ap);
    assert.equal(m['metrics/recall'], 1);
  });

  it('IoU 0.72 matches at thresholds 0.50..0.70 only', () => {
    const m = metrics([gt(0, 0, 0, 0, 100, 100)], [det(0, 0, 0, 0, 100, 72, 0.6)]);
    close(m['metrics/mAP50']!, 1);
    assert.equal(m['metrics/mAP75'], 0);
    close(m['metrics/mAP50-95']!, 0.5);
    close(m['metrics/recall']!, 0.5);
    close(m['metrics/precision']!, 0.5);
  });

  it('area ranges: small / medium / large ground truth', () => {
    // small 20x20 and large 100x100 found, medium 50x50 missed
    const gts = [gt(0, 0, 0, 0, 20, 20), gt(0, 0, 100, 100, 150, 150), gt(0, 0, 200, 200, 300, 300)];
    const dets = [det(0, 0, 0, 0, 20, 20, 0.9), det(0, 0, 200, 200, 300, 300, 0.8)];
    const r = cocoEvaluate(gts, dets);
    // all areas: recall 1/3, 2/3 with precision 1 -> thresholds 0..0.66 (67 points) at 1
    close(r.stats[0]!, 67 / 101);
    close(r.stats[3]!, 1, 'small');
    assert.equal(r.stats[4], 0, 'medium: the detections are outside the range and ignored');
    close(r.stats[5]!, 1, 'large');
    close(r.stats[8]!, 2 / 3, 'AR100');
    assert.deepEqual(r.stats.slice(9), [1, 0, 1]);
  });

  it('classes without ground truth are excluded; detections never cross classes', () => {
    const gts = [gt(0, 0, 0, 0, 40, 40), gt(1, 1, 10, 10, 60, 60)];
    const dets = [det(0, 0, 0, 0, 40, 40, 0.9), det(0, 2, 0, 0, 40, 40, 0.95), det(1, 0, 10, 10, 60, 60, 0.8)];
    const r = cocoEvaluate(gts, dets, { catIds: [0, 1, 2] });
    // class 0: TP on image 0, FP (0.8) on image 1 after it -> precision 1 up to recall 1 -> AP 1
    // class 1: missed -> AP 0; class 2: no ground truth -> -1, excluded
    const pc = perClassAP(r);
    pc.forEach((c, i) => close(c.ap, [1, 0, -1][i]!, `class ${i}`));
    close(r.stats[0]!, 0.5);
  });

  it('keeps the 100 best detections per image and class', () => {
    const gts = [gt(0, 0, 0, 0, 10, 10)];
    const dets: DetBox[] = [];
    for (let i = 0; i < 100; i++) dets.push(det(0, 0, 500 + i, 500, 520 + i, 520, 0.9 - i * 0.001));
    dets.push(det(0, 0, 0, 0, 10, 10, 0.1)); // the 101st by score: dropped
    assert.equal(cocoEvaluate(gts, dets).stats[8], 0);
    dets[dets.length - 1]!.score = 0.95;
    const r = cocoEvaluate(gts, dets);
    assert.equal(r.stats[8], 1);
    close(r.stats[0]!, 1);
  });

  it('crowd regions are neither counted nor penalised', () => {
    const gts = [gt(0, 0, 0, 0, 50, 50), gt(0, 0, 100, 100, 200, 200, { iscrowd: true })];
    const dets = [det(0, 0, 0, 0, 50, 50, 0.9), det(0, 0, 110, 110, 150, 150, 0.95)];
    const r = cocoEvaluate(gts, dets);
    close(r.stats[0]!, 1);
  });

  it('no detections at all: AP 0, precision and recall 0', () => {
    const m = metrics([gt(0, 0, 0, 0, 50, 50)], []);
    assert.equal(m['metrics/mAP50-95'], 0);
    assert.equal(m['metrics/precision'], 0);
    assert.equal(m['metrics/recall'], 0);
  });

  it("the original's precision and recall are COCO means: exactly mAP50-95 and AR100 (what val prints them as)", () => {
    // two classes, a missed object, a false positive above a true one, a loose box: nothing is 0 or 1
    const m = metrics(
      [gt(0, 0, 0, 0, 100, 100), gt(0, 0, 200, 200, 260, 260), gt(0, 1, 300, 0, 400, 90), gt(1, 1, 0, 0, 80, 80)],
      [det(0, 0, 0, 0, 100, 72, 0.6), det(0, 0, 500, 500, 560, 560, 0.9), det(0, 1, 300, 0, 400, 90, 0.8), det(1, 1, 4, 4, 80, 84, 0.7)],
    );
    assert.ok(m['metrics/mAP50-95']! > 0.2 && m['metrics/mAP50-95']! < 0.9, String(m['metrics/mAP50-95']));
    assert.ok(Math.abs(m['metrics/precision']! - m['metrics/mAP50-95']!) < 1e-12, `${m['metrics/precision']} vs ${m['metrics/mAP50-95']}`);
    assert.ok(Math.abs(m['metrics/recall']! - m['metrics/AR100']!) < 1e-12, `${m['metrics/recall']} vs ${m['metrics/AR100']}`);
  });
});
