/**
 * Which parts of D-FINE-n break in float16 (the measurement behind the family's keep-float list):
 * each part alone in half, the rest float32, on dfinen_ref_io's batch-1 input; prints the predict-
 * layout box (px) and score errors against the original and how many query rows changed partner
 * (a changed proposal set moves most of the 300).
 *
 *   node --import tsx bench/dfine-half-parts.ts
 */
import { resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { buildInferenceGraph } from '../src/runtime/graph-engine.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { convertPrecision } from '../src/graph/passes/precision.ts';
import { DfineDetector } from '../src/models/dfine/detector.ts';
import { loadDfineStateDict } from '../src/models/dfine/state-dict.ts';
import { loadCheckpointFile } from '../src/weights/checkpoint.ts';
import { readDfineIo, inputOf, predictLayoutErrors } from '../test/helpers/dfine-fixture.ts';
const io = readDfineIo();
const net = new DfineDetector({ size: 'n', nc: 80 });
loadDfineStateDict(net, (await loadCheckpointFile(resolve(import.meta.dirname, '../../shared/fixtures/dfinen_ref.pt'))).stateDict);
const x = inputOf(io, '1x3x640x640');
const parts: Record<string, (n: string) => boolean> = {
  float32: () => false,
  backbone: (n) => n.startsWith('/backbone/'),
  encoder: (n) => n.startsWith('/encoder/'),
  proposals: (n) => /\/decoder\/(enc_|Reduce|TopK|Gather)/.test(n),
  self_attn: (n) => n.includes('/self_attn/'),
  cross_attn_offsets: (n) => n.includes('/cross_attn/sampling_offsets'),
  cross_attn_weights: (n) => n.includes('/cross_attn/attention_weights') || (n.includes('/cross_attn/') && n.includes('Softmax')),
  cross_attn_all: (n) => n.includes('/cross_attn/'),
  gate_ffn_norm: (n) => /\/layers\/\d+\/(gateway|linear|norm|ffn)/.test(n),
  query_pos: (n) => n.includes('query_pos_head'),
  box_heads: (n) => /(dec_bbox_head|pre_bbox_head)/.test(n),
  integral: (n) => n.includes('/integral/'),
  distance2bbox: (n) => n.includes('distance2bbox') || n.includes('inverse_sigmoid'),
  lqe_score: (n) => /(lqe_layers|dec_score_head)/.test(n),
  decode: (n) => n.startsWith('/decode/'),
};
for (const [name, region] of Object.entries(parts)) {
  const g = buildInferenceGraph(net, { batch: 1, height: 640, width: 640 });
  const s = name === 'float32' ? { halfNodes: 0 } : convertPrecision(g, { dtype: 'float16', keepIO: true, region: (node) => region(node.name) });
  const sess = await ort.InferenceSession.create(serializeModel(g, { opset: 17 }), { intraOpNumThreads: 2 });
  const out = await sess.run({ images: new ort.Tensor('float32', x.data as Float32Array, x.dims) });
  await sess.release();
  const o = out.output!;
  const e = predictLayoutErrors({ dtype: 'float32', dims: [...o.dims], data: o.data as Float32Array }, io, '1x3x640x640');
  console.log(`${name.padEnd(20)} half nodes ${String(s.halfNodes).padStart(4)}: box ${e.box.toExponential(2)} px, score ${e.score.toExponential(2)}, rows moved ${e.moved}`);
}
