/**
 * Inference pass: `Add(Conv_a(x), Conv_b(x))` with both convs "same"-padded, same stride and groups
 * becomes one Conv with the smaller kernel zero-padded into the larger (RepConvN's 3x3 + 1x1
 * re-parameterisation). One kernel launch and one read of x instead of two plus an Add.
 * Run after foldBatchNorm so both branches carry their biases.
 */
import { attrInt, attrInts, type Graph, type Node } from '../ir.ts';
import { asFloat32 } from '../tensor.ts';

function sameConvGeometry(a: Node, b: Node): boolean {
  const eq = (x: number[], y: number[]): boolean => x.length === y.length && x.every((v, k) => v === y[k]);
  return attrInt(a, 'group', 1) === attrInt(b, 'group', 1)
    && eq(attrInts(a, 'strides', [1, 1]), attrInts(b, 'strides', [1, 1]))
    && eq(attrInts(a, 'dilations', [1, 1]), [1, 1]) && eq(attrInts(b, 'dilations', [1, 1]), [1, 1]);
}

function isCentred(n: Node, k: number): boolean {
  const pads = attrInts(n, 'pads', [0, 0, 0, 0]);
  return k % 2 === 1 && pads.every((p) => p === (k - 1) / 2);
}

export function fuseParallelConvs(graph: Graph): number {
  const producers = graph.producers();
  const consumers = graph.consumers();
  const init = graph.initializers;
  const removed = new Set<Node>();
  let fused = 0;
  for (const add of graph.nodes) {
    if (add.op !== 'Add') continue;
    const [pa, pb] = add.inputs.map((v) => producers.get(v));
    if (!pa || !pb || pa.op !== 'Conv' || pb.op !== 'Conv' || pa.inputs[0] !== pb.inputs[0]) continue;
    if (removed.has(pa) || removed.has(pb) || !sameConvGeometry(pa, pb)) continue;
    if (consumers.get(pa.outputs[0]!)?.length !== 1 || consumers.get(pb.outputs[0]!)?.length !== 1) continue;
    const wa = init.get(pa.inputs[1]!);
    const wb = init.get(pb.inputs[1]!);
    if (!wa || !wb || wa.dims[0] !== wb.dims[0] || wa.dims[1] !== wb.dims[1]) continue;
    const [big, small, wBig, wSmall] = wa.dims[2]! >= wb.dims[2]! ? [pa, pb, wa, wb] : [pb, pa, wb, wa];
    const K = wBig.dims[2]!;
    const k = wSmall.dims[2]!;
    if (wBig.dims[3] !== K || wSmall.dims[3] !== k || !isCentred(big, K) || !isCentred(small, k)) continue;
    const out = Float32Array.from(asFloat32(wBig));
    const src = asFloat32(wSmall);
    const planes = wBig.dims[0]! * wBig.dims[1]!;
    const off = (K - k) / 2;
    for (let p = 0; p < planes; p++) {
      for (let y = 0; y < k; y++) for (let x = 0; x < k; x++) out[p * K * K + (y + off) * K + x + off]! += src[p * k * k + y * k + x]!;
    }
    const cout = wBig.dims[0]!;
    const bias = new Float32Array(cout);
    for (const n of [big, small]) {
      if (!n.inputs[2]) continue;
      const bv = asFloat32(init.get(n.inputs[2])!);
      for (let c = 0; c < cout; c++) bias[c]! += bv[c]!;
    }
    const wName = `${big.inputs[1]}.parallel_fused`;
    const bName = `${wName}.bias`;
    init.set(wName, { dtype: 'float32', dims: [...wBig.dims], data: out });
    init.set(bName, { dtype: 'float32', dims: [cout], data: bias });
    big.inputs = [big.inputs[0]!, wName, bName];
    big.outputs = [add.outputs[0]!];
    removed.add(small).add(add);
    fused++;
  }
  graph.nodes = graph.nodes.filter((n) => !removed.has(n));
  graph.pruneInitializers();
  return fused;
}
