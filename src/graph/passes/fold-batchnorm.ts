/**
 * Inference pass: folds each BatchNormalization that directly follows a Conv into the Conv's
 * weight and bias (w' = w*g/sqrt(v+eps), b' = beta + (b - mean)*g/sqrt(v+eps)). The module's own
 * tensors are never modified: folded tensors are new initializers.
 */
import { attrFloat, type Graph } from '../ir.ts';
import { asFloat32, type HostTensor } from '../tensor.ts';

export function foldBatchNorm(graph: Graph): number {
  const producers = graph.producers();
  const consumers = graph.consumers();
  const init = graph.initializers;
  const removed = new Set<object>();
  let folded = 0;
  for (const bn of graph.nodes) {
    if (bn.op !== 'BatchNormalization' || bn.outputs.length !== 1) continue;
    const conv = producers.get(bn.inputs[0]!);
    if (!conv || conv.op !== 'Conv' || consumers.get(conv.outputs[0]!)?.length !== 1) continue;
    const [, scaleName, biasName, meanName, varName] = bn.inputs as [string, string, string, string, string];
    const w = init.get(conv.inputs[1]!);
    const params = [scaleName, biasName, meanName, varName].map((n) => init.get(n));
    if (!w || params.some((p) => !p)) continue;
    const [gamma, beta, mean, variance] = params.map((p) => asFloat32(p!)) as [Float32Array, Float32Array, Float32Array, Float32Array];
    const eps = attrFloat(bn, 'epsilon', 1e-5);
    const weights = asFloat32(w);
    const cout = w.dims[0]!;
    const per = weights.length / cout;
    const convBias = conv.inputs[2] ? asFloat32(init.get(conv.inputs[2])!) : null;
    const newW = new Float32Array(weights.length);
    const newB = new Float32Array(cout);
    for (let c = 0; c < cout; c++) {
      const k = gamma[c]! / Math.sqrt(variance[c]! + eps);
      for (let j = 0; j < per; j++) newW[c * per + j] = weights[c * per + j]! * k;
      newB[c] = beta[c]! + ((convBias ? convBias[c]! : 0) - mean[c]!) * k;
    }
    const wName = `${conv.inputs[1]}.bn_folded`;
    const bName = `${biasName}.bn_folded`;
    init.set(wName, { dtype: 'float32', dims: [...w.dims], data: newW } satisfies HostTensor);
    init.set(bName, { dtype: 'float32', dims: [cout], data: newB });
    conv.inputs = [conv.inputs[0]!, wName, bName];
    conv.outputs = [bn.outputs[0]!];
    removed.add(bn);
    folded++;
  }
  graph.nodes = graph.nodes.filter((n) => !removed.has(n));
  graph.pruneInitializers();
  return folded;
}
