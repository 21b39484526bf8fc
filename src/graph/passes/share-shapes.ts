/**
 * One graph for several input shapes, from graphs built at each of them: the builds must have the
 * same nodes (op, name, outputs, attributes, inputs up to constants); a constant input whose value
 * differs between builds (a reshape target from H and W, a position embedding, anchors, a gradient
 * rule's zeros) becomes a graph input fed per shape, and an input or output whose dims differ is
 * declared without a shape. Fed the side inputs of shape k, the shared graph computes exactly what
 * build k computes: the same nodes on the same values.
 */
import type { Attr, Graph, Node, ValueInfo } from '../ir.ts';
import type { HostTensor } from '../tensor.ts';

function sameTensor(a: HostTensor, b: HostTensor): boolean {
  if (a === b) return true;
  if (a.dtype !== b.dtype || a.dims.length !== b.dims.length || a.dims.some((d, k) => d !== b.dims[k])) return false;
  const x = a.data as ArrayLike<number | bigint>, y = b.data as ArrayLike<number | bigint>;
  if (x.length !== y.length) return false;
  // Object.is: NaN equals NaN and +inf equals +inf (D-FINE's invalid anchors), -0 differs from 0.
  for (let k = 0; k < x.length; k++) if (!Object.is(x[k], y[k])) return false;
  return true;
}

function sameAttr(a: Attr, b: Attr): boolean {
  if ('t' in a || 't' in b) return 't' in a && 't' in b && sameTensor(a.t, b.t);
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Why node `b` is not node `a` at another shape (initializer inputs aside), or null. */
function nodeDifference(a: Node, b: Node): string | null {
  if (a.op !== b.op || a.name !== b.name || (a.domain ?? '') !== (b.domain ?? '')) return `node ${a.name} (${a.op}) faces ${b.name} (${b.op})`;
  if (a.inputs.length !== b.inputs.length) return `node ${a.name} has ${a.inputs.length} inputs at one shape, ${b.inputs.length} at another`;
  if (a.outputs.join('\u0000') !== b.outputs.join('\u0000')) return `node ${a.name} has other outputs at another shape`;
  const keys = new Set([...Object.keys(a.attrs), ...Object.keys(b.attrs)]);
  for (const k of keys) {
    const x = a.attrs[k], y = b.attrs[k];
    if (!x || !y || !sameAttr(x, y)) return `node ${a.name} attribute ${k} differs between shapes`;
  }
  return null;
}

/**
 * The shared declaration of a value declared once per build: dims that agree, symbolic
 * `<name>_<axis>` where they differ, and then written unshaped (ValueInfo.unshaped).
 */
function sharedInfo(infos: readonly ValueInfo[]): ValueInfo {
  const first = infos[0]!;
  for (const v of infos) if (v.shape.length !== first.shape.length || v.dtype !== first.dtype) throw new Error(`shareShapes: ${first.name} changes rank or dtype between shapes`);
  const shape = first.shape.map((d, axis) => (infos.every((v) => v.shape[axis] === d) ? d : `${first.name}_${axis}`));
  return { name: first.name, dtype: first.dtype, shape, ...(shape.some((d) => typeof d === 'string') ? { unshaped: true } : {}) };
}

function sameIo(kind: string, a: readonly ValueInfo[], b: readonly ValueInfo[]): void {
  if (a.length !== b.length || a.some((v, k) => v.name !== b[k]!.name)) throw new Error(`shareShapes: the graph ${kind}s differ between shapes`);
}

export interface SharedShapesGraph {
  /** The graph for every shape: the differing initializers as inputs, differing IO dims symbolic. */
  graph: Graph;
  /** Per build (in the order given), the values of the lifted initializers. */
  feeds: Array<Record<string, HostTensor>>;
  /** Names of the lifted initializers (inputs of `graph`). */
  lifted: string[];
}

/**
 * Merges graphs built at different shapes (see the file comment); throws, naming the first
 * difference, when the builds are not one graph at several shapes. Initializers are matched by the
 * node input they feed, not by name: small constants are shared by content (GraphBuilder.constant),
 * so a build may share one where another has two, and their generated names drift.
 */
export function shareShapes(graphs: readonly Graph[]): SharedShapesGraph {
  const base = graphs[0];
  if (!base) throw new Error('shareShapes: no graphs');
  for (const g of graphs.slice(1)) {
    if (g.nodes.length !== base.nodes.length) throw new Error(`shareShapes: ${base.nodes.length} nodes at one shape, ${g.nodes.length} at another`);
    sameIo('input', base.inputs, g.inputs);
    sameIo('output', base.outputs, g.outputs);
  }
  const graph = base.clone();
  // Varying node inputs grouped by the initializer each build feeds them: one side input per group.
  const groups = new Map<string, { name: string; values: HostTensor[] }>();
  const lifted = new Set<string>();
  for (let k = 0; k < base.nodes.length; k++) {
    const node = graph.nodes[k]!;
    for (const g of graphs.slice(1)) {
      const why = nodeDifference(node, g.nodes[k]!);
      if (why) throw new Error(`shareShapes: the graph differs between shapes: ${why}`);
    }
    node.inputs.forEach((input, j) => {
      const names = graphs.map((g) => g.nodes[k]!.inputs[j]!);
      const init = base.initializers.get(input);
      if (!init) {
        if (names.some((n) => n !== input)) throw new Error(`shareShapes: node ${node.name} reads ${input} at one shape and ${names.find((n) => n !== input)} at another`);
        return;
      }
      const values = graphs.map((g, gi) => {
        const t = g.initializers.get(names[gi]!);
        if (!t) throw new Error(`shareShapes: node ${node.name} reads the constant ${input} at one shape and the value ${names[gi]} at another`);
        return t;
      });
      if (values.every((t) => sameTensor(init, t))) return;
      const key = names.join('\u0000');
      let group = groups.get(key);
      if (!group) {
        // Named apart from the initializers: other nodes may still read the base's as a constant.
        let name = `size:${input}`;
        for (let n = 1; lifted.has(name); n++) name = `size:${input}#${n}`;
        lifted.add(name);
        group = { name, values };
        groups.set(key, group);
      }
      node.inputs[j] = group.name;
    });
  }
  graph.inputs = base.inputs.map((_, k) => sharedInfo(graphs.map((g) => g.inputs[k]!)));
  graph.outputs = base.outputs.map((_, k) => sharedInfo(graphs.map((g) => g.outputs[k]!)));
  for (const { name, values } of groups.values()) graph.inputs.push(sharedInfo(values.map((t) => ({ name, dtype: t.dtype, shape: t.dims }))));
  graph.pruneInitializers();
  const feeds = graphs.map((_, gi) => Object.fromEntries([...groups.values()].map((x) => [x.name, x.values[gi]!])));
  return { graph, feeds, lifted: [...lifted] };
}
