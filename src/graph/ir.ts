/**
 * The graph IR: a plain, mutable ONNX-shaped graph. Models emit it through GraphBuilder; passes
 * (BatchNorm folding, precision casts, later autodiff) rewrite it; the ONNX writer serialises it.
 * Values are referred to by name, as in ONNX, so passes can splice nodes without object graphs.
 */
import type { DType, HostTensor } from './tensor.ts';

export type Attr =
  | { i: number }
  | { f: number }
  | { s: string }
  | { ints: number[] }
  | { floats: number[] }
  | { t: HostTensor };

export interface Node {
  op: string;
  /** Readable, unique node name (`/backbone/conv0/conv/Conv`): it is what profiles show. */
  name: string;
  inputs: string[];
  outputs: string[];
  attrs: Record<string, Attr>;
  domain?: string;
}

export type Dim = number | string;

export interface ValueInfo {
  name: string;
  dtype: DType;
  shape: Dim[];
  /**
   * Written without a shape, so ORT plans nothing from it (`shape` stays as documentation). For
   * inputs whose dims change between runs of one session: given them as symbolic dims, ORT's
   * allocation planner took 60 s for D-FINE n's 20k-node train graph, against 2.7 s unshaped.
   */
  unshaped?: boolean;
}

export class Graph {
  nodes: Node[] = [];
  inputs: ValueInfo[] = [];
  outputs: ValueInfo[] = [];
  initializers = new Map<string, HostTensor>();
  /** Model-level string metadata (ONNX metadata_props). */
  metadata = new Map<string, string>();
  constructor(public name = 'libreyolo') {}

  /** Map value name -> nodes consuming it (graph outputs count as a consumer named by `null`). */
  consumers(): Map<string, Array<Node | null>> {
    const map = new Map<string, Array<Node | null>>();
    const add = (v: string, n: Node | null): void => {
      const list = map.get(v);
      if (list) list.push(n); else map.set(v, [n]);
    };
    for (const n of this.nodes) for (const v of n.inputs) if (v) add(v, n);
    for (const o of this.outputs) add(o.name, null);
    return map;
  }

  producers(): Map<string, Node> {
    const map = new Map<string, Node>();
    for (const n of this.nodes) for (const v of n.outputs) map.set(v, n);
    return map;
  }

  /** Drops initializers no node reads (after a pass replaced them). */
  pruneInitializers(): void {
    const used = new Set<string>();
    for (const n of this.nodes) for (const v of n.inputs) used.add(v);
    for (const o of this.outputs) used.add(o.name);
    for (const name of [...this.initializers.keys()]) if (!used.has(name)) this.initializers.delete(name);
  }

  /** A copy whose node list, IO lists and initializer map can be changed independently (tensors shared). */
  clone(): Graph {
    const g = new Graph(this.name);
    g.nodes = this.nodes.map((n) => ({ ...n, inputs: [...n.inputs], outputs: [...n.outputs], attrs: { ...n.attrs } }));
    g.inputs = this.inputs.map((v) => ({ ...v, shape: [...v.shape] }));
    g.outputs = this.outputs.map((v) => ({ ...v, shape: [...v.shape] }));
    g.initializers = new Map(this.initializers);
    g.metadata = new Map(this.metadata);
    return g;
  }

  /** Renames a value everywhere it is read. */
  replaceUses(from: string, to: string): void {
    for (const n of this.nodes) n.inputs = n.inputs.map((v) => (v === from ? to : v));
    for (const o of this.outputs) if (o.name === from) o.name = to;
  }
}

export const attrInt = (n: Node, key: string, fallback: number): number => {
  const a = n.attrs[key];
  return a && 'i' in a ? a.i : fallback;
};
export const attrInts = (n: Node, key: string, fallback: number[]): number[] => {
  const a = n.attrs[key];
  return a && 'ints' in a ? a.ints : fallback;
};
export const attrFloat = (n: Node, key: string, fallback: number): number => {
  const a = n.attrs[key];
  return a && 'f' in a ? a.f : fallback;
};
