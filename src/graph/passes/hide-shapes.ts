/**
 * Hides the static shapes of a training graph's per-image values from ONNX Runtime's allocation
 * planner, so that each of them is freed right after its last reader.
 *
 * ORT's planner (allocation_planner.cc, FindReusableTensor) gives a new value the buffer of any
 * dead value of the same static shape and element size, however long ago that value died, and the
 * buffer is only released after the last reader of the last value that reuses it. Between the
 * first value's death and the reuser's birth the buffer is held, unused: a forward activation
 * dead early in the forward is kept through the forward/backward turn because some backward value
 * of the same shape will take it later. On yolo9c at 320 that doubled ORT's arena per image (314
 * MiB against 135 MiB alive in its own execution order; docs/training-performance.md). The planner
 * reuses only values whose shapes it knows (a value of unknown shape is "conservatively assumed" to
 * differ), and freed buffers go back to ORT's arena, which hands them to the next allocation of
 * that size anyway: without the planner's reuse, memory follows the values really alive.
 *
 * So the per-image inputs are declared without a shape, and every Reshape downstream of them whose
 * target is a constant of known dims gets a -1 in place of one dim, so shape inference cannot
 * restore the static shape there. Both are exact: the same kernels run on the same data.
 */
import type { Graph } from '../ir.ts';
import type { HostTensor } from '../tensor.ts';

export interface HideShapesResult {
  /** Inputs now declared without a shape. */
  inputs: number;
  /** Reshape targets opened with a -1. */
  reshapes: number;
}

/** `sources`: the graph inputs whose size follows the batch (images, targets, ...). */
export function hidePerImageShapes(graph: Graph, sources: Iterable<string>): HideShapesResult {
  const from = new Set(sources);
  let inputs = 0;
  for (const v of graph.inputs) {
    if (from.has(v.name) && !v.unshaped) {
      v.unshaped = true;
      inputs++;
    }
  }
  // Forward sweep over the (topologically ordered) nodes: values that depend on a source.
  const dependent = new Set(from);
  const opened = new Map<string, string>();
  let reshapes = 0;
  for (const n of graph.nodes) {
    if (!n.inputs.some((v) => v && dependent.has(v))) continue;
    for (const o of n.outputs) if (o) dependent.add(o);
    if (n.op !== 'Reshape' || !dependent.has(n.inputs[0] ?? '')) continue;
    const target = n.inputs[1];
    const t = target ? graph.initializers.get(target) : undefined;
    if (!target || !t || t.dtype !== 'int64') continue;
    const dims = Array.from(t.data as BigInt64Array, Number);
    if (dims.some((d) => d <= 0) || (n.attrs.allowzero && 'i' in n.attrs.allowzero && n.attrs.allowzero.i !== 0)) continue;
    let name = opened.get(target);
    if (!name) {
      // The largest dim becomes -1 (any one would do: the element count fixes it).
      const at = dims.indexOf(Math.max(...dims));
      const data = BigInt64Array.from(dims.map((d, k) => BigInt(k === at ? -1 : d)));
      name = `${target}/open`;
      while (graph.initializers.has(name)) name = `${name}_`;
      graph.initializers.set(name, { dtype: 'int64', dims: [...t.dims], data } satisfies HostTensor);
      opened.set(target, name);
    }
    n.inputs = [n.inputs[0]!, name, ...n.inputs.slice(2)];
    reshapes++;
  }
  graph.pruneInitializers();
  return { inputs, reshapes };
}
