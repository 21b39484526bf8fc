/**
 * Segment host time: YOLOv9-t-seg (the parity fixture's weights) on the fixture photo at 640, conf
 * 0.05, where the postprocess keeps 33 detections with masks at 1280x852. Per run, in one loop so
 * machine noise hits both alike: the forward (one ORT session run, worker round trip included), then
 * the host work of one image: letterbox into the input buffer, candidates, NMS, the 33 masks
 * (prototype products, crop, both resizes, threshold, run lengths) and the Results. Prints the
 * medians and host / forward (the target is <= 0.25). JPEG decoding runs on libuv's pool beside
 * the forward and is printed apart.
 *
 *   node --import tsx bench/seg-host-time.ts [--runs 15]
 */
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { LibreYOLO } from '../src/index.ts';
import { loadImageFile } from '../src/data/image.ts';
import { getFamily } from '../src/models/index.ts';
import { planFor } from '../src/predict/preprocess.ts';
import { segmentDetections } from '../src/predict/segment.ts';
import { Boxes, Results } from '../src/predict/results.ts';
import type { ImageOutput } from '../src/predict/pipeline.ts';
import { median } from './common.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
const runs = Number(values.runs);
const root = resolve(import.meta.dirname, '..');
const weights = resolve(root, '../shared/fixtures/yolo9t_seg_ref.pt');
const photoPath = resolve(root, 'test/assets/parkour.jpg');

const model = await LibreYOLO(weights, { progress: false });
const family = getFamily('yolo9');
const photo = await loadImageFile(photoPath);
const plan = planFor(family, photo, [640, 640]);
const input = new Float32Array(3 * 640 * 640);
const fwd: number[] = [], host: number[] = [], decode: number[] = [];
let detections = 0;
for (let k = 0; k < runs + 2; k++) {
  let t = performance.now();
  const image = await loadImageFile(photoPath);
  const decodeMs = performance.now() - t;
  t = performance.now();
  const r = await model.engine.forward({ dtype: 'float32', dims: [1, 3, 640, 640], data: input.slice() });
  const forwardMs = performance.now() - t;
  t = performance.now();
  planFor(family, image, [640, 640]).write(input, 0);
  const o = { outputs: { ...r.extra, output: r.output }, index: 0, image, plan } as unknown as ImageOutput<null>;
  const { det, masks } = segmentDetections(family, o, { conf: 0.05, iou: 0.45, maxDet: 300, classes: null });
  const result = new Results({ boxes: new Boxes(det.xyxy, det.conf, det.cls), masks, names: model.names, orig_shape: [image.height, image.width] });
  const hostMs = performance.now() - t;
  detections = result.length;
  if (k < 2) continue; // warm-up: session creation, JIT
  fwd.push(forwardMs); host.push(hostMs); decode.push(decodeMs);
}
await model.close();
const f = median(fwd), h = median(host);
console.log(`yolo9t-seg 640, ${detections} detections with masks at ${photo.width}x${photo.height}, ${runs} runs: forward ${f.toFixed(1)} ms, host ${h.toFixed(1)} ms (letterbox + candidates + NMS + masks + Results), host/forward ${(h / f).toFixed(3)}; decode ${median(decode).toFixed(1)} ms (libuv pool, beside the forward)`);
