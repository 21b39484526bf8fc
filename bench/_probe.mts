import { createFreshModel } from '../src/load.ts';
import { buildTrainGraph } from '../src/train/graph.ts';
import { serializeModel } from '../src/graph/onnx.ts';
import * as ort from 'onnxruntime-node';
const m: any = createFreshModel('yolo9t');
const g = await buildTrainGraph(m.family, m.network, { batch: 2, height: 96, width: 96, maxTargets: 4, preciseStats: true, amp: false, recomputeCheap: true });
const bytes = serializeModel(g.graph);
const ops = new Map<string, number>(); for (const n of g.graph.nodes) ops.set(n.op, (ops.get(n.op) ?? 0) + 1);
console.log('nodes', g.graph.nodes.length, [...ops].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => `${k}:${v}`).join(' '));
for (const [level, dis] of [['disabled', ''], ['basic', ''], ['basic', 'ConstantFolding'], ['basic', 'CommonSubexpressionElimination'], ['basic', 'ConstantSharing'], ['basic', 'ConstantFolding,CommonSubexpressionElimination,ConstantSharing']] as const) {
  const t = performance.now();
  const s = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: level, intraOpNumThreads: 2, extra: dis ? { optimization: { disable_specified_optimizers: dis } } : {} } as any);
  console.log(level, dis || '-', (performance.now() - t).toFixed(0), 'ms');
  await s.release();
}
