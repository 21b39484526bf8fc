/**
 * Inference pass: a scalar affine map after Conv -> Relu (`s * relu(z) + b`, D-FINE's
 * LearnableAffineBlock after each ReLU of its backbone) moves into the Conv. For s > 0,
 * s * relu(z) + b = max(s * z + b, b): the Conv takes w' = w * s and bias' = bias * s + b and the
 * Relu becomes Clip(min = b), which ONNX Runtime fuses into the convolution, so the two passes over
 * the feature map disappear. A factor that is not a positive finite scalar is left alone (also just
 * the Mul, or just the Add, fold).
 */
import type { Graph, Node } from '../ir.ts';
import { asFloat32, type HostTensor } from '../tensor.ts';

/** A float32 one-element initializer input of `n` (the other input is at 1 - index). */
function scalarInput(graph: Graph, n: Node): { value: number; index: number } | null {
  if (n.inputs.length !== 2) return null;
  for (let k = 0; k < 2; k++) {
    const t = graph.initializers.get(n.inputs[k]!);
    if (t && t.dtype === 'float32' && t.data.length === 1 && !graph.initializers.has(n.inputs[1 - k]!)) return { value: (t.data as Float32Array)[0]!, index: k };
  }
  return null;
}

export function foldReluAffine(graph: Graph): number {
  const producers = graph.producers();
  const consumers = graph.consumers();
  const init = graph.initializers;
  const isOutput = (v: string): boolean => graph.outputs.some((o) => o.name === v);
  /** The single consumer of `v` when it has exactly one and `v` is not a graph output. */
  const onlyConsumer = (v: string): Node | null => {
    const c = consumers.get(v);
    return c?.length === 1 && c[0] && !isOutput(v) ? c[0] : null;
  };
  const removed = new Set<Node>();
  const rename = new Map<string, string>();
  let folded = 0;
  for (const relu of graph.nodes) {
    if (relu.op !== 'Relu') continue;
    const conv = producers.get(relu.inputs[0]!);
    if (!conv || conv.op !== 'Conv' || !onlyConsumer(conv.outputs[0]!)) continue;
    const w = init.get(conv.inputs[1]!);
    const bias = conv.inputs[2] ? init.get(conv.inputs[2]) : undefined;
    if (!w || (conv.inputs[2] && !bias)) continue;
    let s = 1, b = 0;
    let last = relu;
    const mul = onlyConsumer(relu.outputs[0]!);
    const sm = mul?.op === 'Mul' ? scalarInput(graph, mul) : null;
    if (mul && sm && sm.value > 0 && Number.isFinite(sm.value)) { s = sm.value; last = mul; }
    const add = onlyConsumer(last.outputs[0]!);
    const sa = add?.op === 'Add' ? scalarInput(graph, add) : null;
    if (add && sa && Number.isFinite(sa.value)) { b = sa.value; last = add; }
    if (last === relu || isOutput(last.outputs[0]!)) continue;
    const cout = w.dims[0]!;
    const wName = `${conv.inputs[1]}.relu_affine`;
    const bName = `${conv.inputs[2] ?? conv.inputs[1]}.relu_affine_bias`;
    init.set(wName, { dtype: 'float32', dims: [...w.dims], data: Float32Array.from(asFloat32(w), (v) => v * s) } satisfies HostTensor);
    const b0 = bias ? asFloat32(bias) : new Float32Array(cout);
    init.set(bName, { dtype: 'float32', dims: [cout], data: Float32Array.from(b0, (v) => v * s + b) });
    conv.inputs = [conv.inputs[0]!, wName, bName];
    if (b !== 0 || last === add) {
      const minName = `${relu.name}.clip_min`;
      init.set(minName, { dtype: 'float32', dims: [], data: Float32Array.of(b) });
      relu.op = 'Clip';
      relu.inputs = [relu.inputs[0]!, minName];
    }
    for (const n of [mul, add]) if (n && n !== relu && (n === last || (n === mul && last === add))) removed.add(n);
    rename.set(last.outputs[0]!, relu.outputs[0]!);
    folded++;
  }
  if (!folded) return 0;
  for (const n of graph.nodes) n.inputs = n.inputs.map((v) => rename.get(v) ?? v);
  graph.nodes = graph.nodes.filter((n) => !removed.has(n));
  graph.pruneInitializers();
  return folded;
}
