/**
 * Numerical parity of YOLOX-n with the Python original (../shared/fixtures/yoloxn_ref_*): network
 * maps, decoded output and final detections at both fixture shapes, through the predict sessions and
 * through an exported ONNX reloaded by LibreYOLO(), plus preprocessing and postprocess in isolation.
 *
 * Tolerances are 2x the reference's own float32-vs-float64 distance: decoded boxes and scores from
 * the io file's `fp32_vs_fp64` metadata (measured on input A); input B and the photo from the floors
 * yolox.md 6 lists for them. Random-weight class ids are tie-sensitive (sigmoid saturates, top-2
 * class scores within an ulp), so detections on A and B are matched as sets and a row may differ only
 * where the reference's own top-2 gap or distance to `conf` is below the score tolerance.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { LibreYOLO, type LibreYOLOModel } from '../../src/index.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { serializeModel, summarizeModel } from '../../src/graph/onnx.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { loadImageFile } from '../../src/data/image.ts';
import { yoloxPreprocess } from '../../src/models/yolox/preprocess.ts';
import { yoloxCandidates } from '../../src/models/yolox/postprocess.ts';
import { decodeLevels, type YoloxNetwork } from '../../src/models/yolox/network.ts';
import { familyDetections } from '../../src/predict/merge.ts';
import type { Detections } from '../../src/predict/postprocess.ts';
import { buildInferenceGraph } from '../../src/runtime/graph-engine.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { tempDir } from '../helpers/temp.ts';

const PHOTO = join(REPO_ROOT, 'test/assets/parkour.jpg');
const CONF = 0.25;
const IOU = 0.45;

interface Floors { boxRelToMax: number; obj: number; cls: number }
interface Shape { tag: string; batch: number; h: number; w: number; floors: Floors }

let io: Map<string, HostTensor>;
let shapes: Shape[];

function data(name: string): Float32Array {
  const t = io.get(name);
  if (!t) throw new Error(`fixture tensor ${name} is missing`);
  return t.data as Float32Array;
}

/** Max errors of a decoded `[B,N,5+nc]` tensor: boxes as abs and relative to the reference's largest box value. */
function decodedErrors(got: Float32Array, ref: Float32Array, cols: number): { boxAbs: number; boxRelToMax: number; obj: number; cls: number } {
  assert.equal(got.length, ref.length);
  let boxAbs = 0, boxMax = 0, obj = 0, cls = 0;
  for (let k = 0; k < ref.length; k++) {
    const c = k % cols;
    const d = Math.abs(got[k]! - ref[k]!);
    if (Number.isNaN(d)) throw new Error(`NaN at ${k}`);
    if (c < 4) { boxAbs = Math.max(boxAbs, d); boxMax = Math.max(boxMax, Math.abs(ref[k]!)); } else if (c === 4) obj = Math.max(obj, d); else cls = Math.max(cls, d);
  }
  return { boxAbs, boxRelToMax: boxAbs / boxMax, obj, cls };
}

function assertDecoded(got: Float32Array, ref: Float32Array, floors: Floors, what: string): void {
  const e = decodedErrors(got, ref, 85);
  assert.ok(e.boxRelToMax <= 2 * floors.boxRelToMax, `${what}: box error ${e.boxAbs} px = ${e.boxRelToMax} of the largest box value (limit ${2 * floors.boxRelToMax})`);
  assert.ok(e.obj <= 2 * floors.obj, `${what}: objectness error ${e.obj} (limit ${2 * floors.obj})`);
  assert.ok(e.cls <= 2 * floors.cls, `${what}: class score error ${e.cls} (limit ${2 * floors.cls})`);
}

/** Max abs error per channel group of eval level maps `[B, 85, h, w]`: reg, obj, cls. */
function levelErrors(got: Float32Array, ref: Float32Array, hw: number): [number, number, number] {
  const e: [number, number, number] = [0, 0, 0];
  for (let k = 0; k < ref.length; k++) {
    const c = Math.floor(k / hw) % 85;
    const g = c < 4 ? 0 : c === 4 ? 1 : 2;
    e[g] = Math.max(e[g], Math.abs(got[k]! - ref[k]!));
  }
  return e;
}

/** The rows of one predict result. */
async function predictRows(model: LibreYOLOModel, source: string): Promise<Detections> {
  const r = await model.predict(source, { conf: CONF, iou: IOU });
  assert.ok(!Array.isArray(r));
  return { xyxy: r.boxes.xyxyData, conf: r.boxes.confData, cls: r.boxes.clsData };
}

function detections(decoded: Float32Array, image: number, anchors: number, ratio: number, w: number, h: number): Detections {
  return familyDetections(yoloxCandidates(decoded, image * anchors * 85, anchors, 85, { conf: CONF, ratio, origWidth: w, origHeight: h }), { iou: IOU, maxDet: 300 });
}

interface RefRows { boxes: Float32Array; scores: Float32Array; classes: BigInt64Array }

function refRows(prefix: string, suffix: string): RefRows {
  return {
    boxes: data(`${prefix}boxes_xyxy${suffix}`),
    scores: data(`${prefix}scores${suffix}`),
    classes: io.get(`${prefix}classes${suffix}`)!.data as BigInt64Array,
  };
}

/** Same rows in the same order: count, classes exact, boxes and scores within the given tolerances. */
function assertSameRows(det: Detections, ref: RefRows, boxTol: number, scoreTol: number, what: string): void {
  assert.equal(det.conf.length, ref.scores.length, `${what}: ${det.conf.length} detections, reference ${ref.scores.length}`);
  for (let k = 0; k < ref.scores.length; k++) {
    assert.equal(det.cls[k], Number(ref.classes[k]), `${what}: row ${k} class`);
    assert.ok(Math.abs(det.conf[k]! - ref.scores[k]!) <= scoreTol, `${what}: row ${k} score ${det.conf[k]} vs ${ref.scores[k]}`);
    for (let j = 0; j < 4; j++) {
      const d = Math.abs(det.xyxy[4 * k + j]! - ref.boxes[4 * k + j]!);
      assert.ok(d <= boxTol * Math.max(1, Math.abs(ref.boxes[4 * k + j]!)), `${what}: row ${k} box coordinate ${j} off by ${d}`);
    }
  }
}

/**
 * Per anchor of the reference's decoded output: whether its detection is tie-sensitive, i.e. its two
 * best class scores, or its best score and `conf`, are closer than `tol`.
 */
function fragileAnchors(decoded: Float32Array, image: number, anchors: number, tol: number): { fragile: Uint8Array; best: Float32Array } {
  const fragile = new Uint8Array(anchors);
  const best = new Float32Array(anchors);
  for (let a = 0; a < anchors; a++) {
    const base = (image * anchors + a) * 85;
    const obj = decoded[base + 4]!;
    let s1 = -Infinity, s2 = -Infinity;
    for (let c = 0; c < 80; c++) {
      const s = Math.fround(obj * decoded[base + 5 + c]!);
      if (s > s1) { s2 = s1; s1 = s; } else if (s > s2) s2 = s;
    }
    best[a] = s1;
    fragile[a] = s1 - s2 < tol || Math.abs(s1 - CONF) < tol ? 1 : 0;
  }
  return { fragile, best };
}

/**
 * Matches our detections to the reference's by class and box (greedy by reference row); every row
 * left unmatched on either side must come from a tie-sensitive anchor of the reference. Returns the
 * number of unmatched rows.
 */
function assertSetMatch(det: Detections, ref: RefRows, refDecoded: Float32Array, image: number, anchors: number, ratio: number, scoreTol: number, boxTol: number, what: string): number {
  const { fragile } = fragileAnchors(refDecoded, image, anchors, scoreTol);
  // Each reference candidate's box in output coordinates, to find the anchor behind a row.
  const cand = refCandidateBoxes(refDecoded, image, anchors, ratio);
  const anchorOf = (box: ArrayLike<number>): number => {
    let bestA = -1, bestD = Infinity;
    for (const [a, b] of cand) {
      const d = boxDistance(box, b);
      if (d < bestD) { bestD = d; bestA = a; }
    }
    return bestD <= boxTol ? bestA : -1;
  };
  const used = new Uint8Array(det.conf.length);
  let unmatched = 0;
  const explain = (box: ArrayLike<number>, side: string): void => {
    unmatched++;
    const a = anchorOf(box);
    assert.ok(a >= 0 && fragile[a] === 1, `${what}: ${side} row [${Array.from(box).map((v) => v.toFixed(2)).join(', ')}] has no counterpart and its anchor (${a}) is not tie-sensitive`);
  };
  for (let r = 0; r < ref.scores.length; r++) {
    const rb = ref.boxes.subarray(4 * r, 4 * r + 4);
    let hit = -1;
    for (let k = 0; k < det.conf.length && hit < 0; k++) {
      if (used[k] || det.cls[k] !== Number(ref.classes[r])) continue;
      if (Math.abs(det.conf[k]! - ref.scores[r]!) <= scoreTol && boxDistance(det.xyxy.subarray(4 * k, 4 * k + 4), rb) <= boxTol) hit = k;
    }
    if (hit >= 0) used[hit] = 1; else explain(rb, 'reference');
  }
  for (let k = 0; k < det.conf.length; k++) if (!used[k]) explain(det.xyxy.subarray(4 * k, 4 * k + 4), 'our');
  return unmatched;
}

/**
 * Largest coordinate difference relative to the box's own scale (its largest coordinate, at least
 * 1): x1 = cx - w/2 can be small while cx and w carry the decode's relative error.
 */
function boxDistance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0, scale = 1;
  for (let j = 0; j < 4; j++) {
    d = Math.max(d, Math.abs(a[j]! - b[j]!));
    scale = Math.max(scale, Math.abs(b[j]!));
  }
  return d / scale;
}

/** [anchor, xyxy in output pixels] for every anchor whose best score passes conf in the reference. */
function refCandidateBoxes(decoded: Float32Array, image: number, anchors: number, ratio: number): Array<[number, Float32Array]> {
  const out: Array<[number, Float32Array]> = [];
  const r = Math.fround(ratio);
  for (let a = 0; a < anchors; a++) {
    const base = (image * anchors + a) * 85;
    const [cx, cy, w, h] = [decoded[base]!, decoded[base + 1]!, decoded[base + 2]!, decoded[base + 3]!];
    const box = Float32Array.of(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2);
    if (ratio !== 1) for (let j = 0; j < 4; j++) box[j] = box[j]! / r;
    out.push([a, box]);
  }
  return out;
}

describe('parity with the original YOLOX-n', () => {
  let model: LibreYOLOModel;
  const dir = tempDir();

  before(async () => {
    const file = readSafetensors(new Uint8Array(readFileSync(fixture('yoloxn_ref_io.safetensors'))), 'io');
    io = file.tensors;
    const floor = JSON.parse(file.metadata.fp32_vs_fp64!) as Record<string, { max_abs: number; rel_to_max: number }>;
    shapes = [
      { tag: '1x3x416x416', batch: 1, h: 416, w: 416, floors: { boxRelToMax: floor.decoded_boxes!.rel_to_max, obj: floor.decoded_obj!.max_abs, cls: floor.decoded_cls!.max_abs } },
      // yolox.md 6: B's float32 floor is 0.76 px on boxes up to ~8.6e3 px (8.8e-5 of the largest), obj 2.9e-4, cls 7.4e-4.
      { tag: '2x3x320x256', batch: 2, h: 320, w: 256, floors: { boxRelToMax: 8.8e-5, obj: 2.9e-4, cls: 7.4e-4 } },
    ];
    model = await LibreYOLO(fixture('yoloxn_ref.pt'), { progress: false });
  });
  after(async () => {
    await model.close();
  });

  const input = (tag: string): HostTensor => {
    const u8 = io.get(`input_u8_bgr_${tag}`)!;
    return { dtype: 'float32', dims: u8.dims, data: Float32Array.from(u8.data as Uint8Array) };
  };

  it('loads the reference checkpoint as yolox-n with every key in the original order', async () => {
    assert.equal(model.family.name, 'yolox');
    assert.equal(model.size, 'n');
    assert.equal(model.nc, 80);
    assert.equal(model.names[0], 'person');
    assert.deepEqual(model.imgsz, [416, 416]);
    assert.equal(model.parameterCount(), 912_159);
    const { loadCheckpointFile } = await import('../../src/weights/checkpoint.ts');
    const keys = [...(await loadCheckpointFile(fixture('yoloxn_ref.pt'))).stateDict.keys()];
    assert.equal(keys.length, 642);
    assert.deepEqual([...(model.network as YoloxNetwork).namedTensors()].map(([k]) => k), keys);
  });

  it('letterboxes the photo bit for bit like the original (Pillow bilinear, top-left 114, BGR 0..255)', async () => {
    const image = await loadImageFile(PHOTO);
    const plan = yoloxPreprocess(image, [416, 416]);
    assert.equal(plan.ratio, 0.325);
    const out = new Float32Array(3 * 416 * 416);
    plan.write(out, 0);
    const ref = io.get('image_letterboxed_u8_bgr_1x3x416x416')!.data as Uint8Array;
    let diff = 0;
    for (let k = 0; k < ref.length; k++) if (out[k] !== ref[k]) diff++;
    assert.equal(diff, 0, `${diff} of ${ref.length} input values differ`);
  });

  it('predict-path sessions reproduce decoded_* at both shapes', async () => {
    for (const s of shapes) {
      const out = await model.forward(input(s.tag));
      assert.deepEqual(out.dims, io.get(`decoded_${s.tag}`)!.dims);
      assertDecoded(out.data as Float32Array, data(`decoded_${s.tag}`), s.floors, `decoded_${s.tag}`);
    }
  });

  it('raw level maps and PAFPN outputs match raw_level* and fpn_out*', async () => {
    const net = model.network as YoloxNetwork;
    for (const s of shapes) {
      const graph = buildInferenceGraph(net, { batch: s.batch, height: s.h, width: s.w, rawOutputs: true });
      const session = await ort.InferenceSession.create(serializeModel(graph), { intraOpNumThreads: 2 });
      const x = input(s.tag);
      const out = await session.run({ images: new ort.Tensor('float32', x.data as Float32Array, x.dims) });
      for (let k = 0; k < 3; k++) {
        const ref = io.get(`raw_level${k}_${s.tag}`)!;
        assert.deepEqual([...out[`raw_level${k}`]!.dims], ref.dims);
        const [reg, obj, cls] = levelErrors(out[`raw_level${k}`]!.data as Float32Array, ref.data as Float32Array, ref.dims[2]! * ref.dims[3]!);
        // yolox.md 6: raw reg floor up to 1.1e-3; obj and cls as the decoded scores.
        assert.ok(reg <= 2.2e-3 && obj <= 2 * s.floors.obj && cls <= 2 * s.floors.cls, `${s.tag} level ${k}: reg ${reg}, obj ${obj}, cls ${cls}`);
      }
      await session.release();
    }
    // PAFPN outputs for A (floor 4.8e-4 .. 2.3e-3 abs: limit 2x the largest).
    const b = new GraphBuilder('fpn');
    const images = b.input('images', 'float32', [1, 3, 416, 416]);
    net.features(b, images).forEach((v, k) => b.output(`fpn${k}`, v, 'float32', [1, [64, 128, 256][k]!, 52 >> k, 52 >> k]));
    const session = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2 });
    const x = input('1x3x416x416');
    const out = await session.run({ images: new ort.Tensor('float32', x.data as Float32Array, x.dims) });
    for (let k = 0; k < 3; k++) {
      const ref = data(`fpn_out${k}_1x3x416x416`);
      const got = out[`fpn${k}`]!.data as Float32Array;
      let m = 0;
      for (let j = 0; j < ref.length; j++) m = Math.max(m, Math.abs(got[j]! - ref[j]!));
      assert.ok(m <= 4.6e-3, `fpn_out${k}: max error ${m}`);
    }
    await session.release();
  });

  it('decode alone turns the stored raw maps into decoded_* (exp and sigmoid-free ops, ulp level)', async () => {
    for (const s of shapes) {
      const b = new GraphBuilder('decode');
      const levels = [8, 16, 32].map((st, k) => b.input(`l${k}`, 'float32', [s.batch, 85, s.h / st, s.w / st]));
      b.output('output', decodeLevels(b, levels, 80, { batch: s.batch, height: s.h, width: s.w }), 'float32', [s.batch, 'n', 85]);
      const session = await ort.InferenceSession.create(serializeModel(b.graph));
      const feeds = Object.fromEntries([0, 1, 2].map((k) => {
        const t = io.get(`raw_level${k}_${s.tag}`)!;
        return [`l${k}`, new ort.Tensor('float32', t.data as Float32Array, t.dims)];
      }));
      const got = (await session.run(feeds)).output!.data as Float32Array;
      const ref = data(`decoded_${s.tag}`);
      let m = 0;
      for (let k = 0; k < ref.length; k++) m = Math.max(m, Math.abs(got[k]! - ref[k]!) / Math.max(1, Math.abs(ref[k]!)));
      assert.ok(m <= 1e-6, `decoded_${s.tag} from stored raw maps: max relative error ${m}`);
      await session.release();
    }
  });

  it('postprocess alone reproduces det_* exactly from the stored decoded output (clamp only when ratio != 1)', () => {
    assertSameRows(detections(data('decoded_1x3x416x416'), 0, 3549, 0.65, 640, 480), refRows('det_', '_1x3x416x416'), 0, 0, 'det A');
    for (const b of [0, 1]) {
      assertSameRows(detections(data('decoded_2x3x320x256'), b, 1680, 1, 256, 320), refRows('det_', `_2x3x320x256[${b}]`), 0, 0, `det B[${b}]`);
    }
  });

  it('final detections on the random inputs match the reference as sets, except tie-sensitive rows', async () => {
    const a = await model.forward(input('1x3x416x416'));
    const floorsA = shapes[0]!.floors;
    const tolA = 2 * (floorsA.obj + floorsA.cls);
    const missA = assertSetMatch(detections(a.data as Float32Array, 0, 3549, 0.65, 640, 480), refRows('det_', '_1x3x416x416'), data('decoded_1x3x416x416'), 0, 3549, 0.65, tolA, 6e-3, 'A');
    const bOut = await model.forward(input('2x3x320x256'));
    const floorsB = shapes[1]!.floors;
    const tolB = 2 * (floorsB.obj + floorsB.cls);
    let missB = 0;
    for (const b of [0, 1]) {
      missB += assertSetMatch(detections(bOut.data as Float32Array, b, 1680, 1, 256, 320), refRows('det_', `_2x3x320x256[${b}]`), data('decoded_2x3x320x256'), b, 1680, 1, tolB, 6e-3, `B[${b}]`);
    }
    // Nearly every row matches; the few that do not were shown to be ties above.
    assert.ok(missA <= 10 && missB <= 20, `unmatched rows: A ${missA}, B ${missB}`);
  });

  it('predict on the photo reproduces image_det_* (count, order, classes exact; boxes 0.05 px, scores 5e-4)', async () => {
    assertSameRows(await predictRows(model, PHOTO), refRows('image_det_', ''), 0.05, 5e-4, 'photo');
  });

  it('exported dynamic ONNX has the original layout and metadata, reloads through LibreYOLO() and reproduces both shapes and the photo', async () => {
    const path = await model.export({ format: 'onnx', dynamic: true, output_path: join(dir, 'yoloxn_dynamic.onnx') });
    const summary = summarizeModel(new Uint8Array(readFileSync(path)));
    assert.equal(summary.opset, 13);
    assert.equal(summary.inputs[0]!.name, 'images');
    assert.equal(summary.outputs[0]!.name, 'output');
    assert.equal(summary.outputs[0]!.shape.length, 3);
    assert.equal(summary.outputs[0]!.shape[2], 85);
    const md = summary.metadata;
    for (const [k, v] of Object.entries({ model_family: 'yolox', size: 'n', model_size: 'n', task: 'detect', nc: '80', imgsz: '416', dynamic: 'True', precision: 'fp32', half: 'False' })) {
      assert.equal(md.get(k), v, `metadata ${k}`);
    }
    assert.equal(JSON.parse(md.get('names')!)['0'], 'person');
    const exported = await LibreYOLO(path);
    try {
      assert.equal(exported.family.name, 'yolox');
      assert.equal(exported.size, 'n');
      assert.deepEqual(exported.imgsz, [416, 416]);
      for (const s of shapes) {
        assertDecoded((await exported.forward(input(s.tag))).data as Float32Array, data(`decoded_${s.tag}`), s.floors, `exported ${s.tag}`);
      }
      const a = (await exported.forward(input('1x3x416x416'))).data as Float32Array;
      const tolA = 2 * (shapes[0]!.floors.obj + shapes[0]!.floors.cls);
      assertSetMatch(detections(a, 0, 3549, 0.65, 640, 480), refRows('det_', '_1x3x416x416'), data('decoded_1x3x416x416'), 0, 3549, 0.65, tolA, 6e-3, 'exported A');
      const bOut = (await exported.forward(input('2x3x320x256'))).data as Float32Array;
      const tolB = 2 * (shapes[1]!.floors.obj + shapes[1]!.floors.cls);
      for (const b of [0, 1]) {
        assertSetMatch(detections(bOut, b, 1680, 1, 256, 320), refRows('det_', `_2x3x320x256[${b}]`), data('decoded_2x3x320x256'), b, 1680, 1, tolB, 6e-3, `exported B[${b}]`);
      }
      assertSameRows(await predictRows(exported, PHOTO), refRows('image_det_', ''), 0.05, 5e-4, 'exported photo');
    } finally {
      await exported.close();
    }
  });

  it("the original's own export (yoloxn_ref.onnx) loads as yolox-n and predicts the photo like the checkpoint", async () => {
    const ref = await LibreYOLO(fixture('yoloxn_ref.onnx'));
    try {
      assert.equal(ref.family.name, 'yolox');
      assert.equal(ref.size, 'n');
      assertSameRows(await predictRows(ref, PHOTO), refRows('image_det_', ''), 0.05, 5e-4, 'reference onnx photo');
    } finally {
      await ref.close();
    }
  });
});
