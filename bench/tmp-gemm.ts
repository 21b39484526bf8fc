import * as ort from 'onnxruntime-node';
import { GraphBuilder, i } from '../src/graph/builder.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import { median } from './common.ts';
for (const [m, k, n] of [[1664, 256, 2048], [7800, 256, 2048], [1664, 2048, 256], [4096, 1024, 1024]] as const) {
  const b = new GraphBuilder();
  const x = b.input('x', 'float32', [m, k]);
  const w = b.input('w', 'float32', [n, k]);
  const bias = b.input('b', 'float32', [n]);
  b.output('y', b.op('Gemm', [x, w, bias], { transB: i(1) }), 'float32', [m, n]);
  const s = await ort.InferenceSession.create(serializeModel(b.graph), { intraOpNumThreads: 2, graphOptimizationLevel: 'all' });
  const feeds = { x: new ort.Tensor('float32', new Float32Array(m * k).fill(0.5), [m, k]), w: new ort.Tensor('float32', new Float32Array(n * k).fill(0.1), [n, k]), b: new ort.Tensor('float32', new Float32Array(n), [n]) };
  const t: number[] = [];
  for (let r = 0; r < 12; r++) { const t0 = performance.now(); await s.run(feeds); t.push(performance.now() - t0); }
  const ms = median(t.slice(2));
  console.log(m, k, n, ms.toFixed(1), 'ms', (2 * m * k * n / ms / 1e6).toFixed(1), 'GFLOP/s');
}
