import '../src/models/index.ts';
import { getFamily } from '../src/models/registry.ts';
import { buildTrainGraph } from '../src/train/graph.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { createHash } from 'node:crypto';
const fam = process.argv[2] ?? 'yolo9';
const family = getFamily(fam);
const network = family.create({ size: fam === 'yolox' ? 'n' : 't', nc: 1 });
for (let r = 0; r < 3; r++) {
let t = performance.now();
const g = await buildTrainGraph(family, network, { batch: 2, height: 96, width: 96, maxTargets: 100, preciseStats: true, amp: false, recomputeCheap: true });
const tb = performance.now() - t; t = performance.now();
const bytes = serializeModel(g.graph);
const ts = performance.now() - t; t = performance.now();
createHash('sha256').update(bytes).digest('hex');
console.log(fam, 'build', tb.toFixed(0), 'ms; serialize', ts.toFixed(0), 'ms; hash', (performance.now() - t).toFixed(0), 'ms', (bytes.length / 1e6).toFixed(1), 'MB');
}
