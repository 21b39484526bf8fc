/**
 * GraphBuilder: the emitting API models use. It tracks a module-name scope so every node gets a
 * readable, unique name, and names parameters by their state_dict path.
 */
import { Graph, type Attr, type Dim } from './ir.ts';
import type { DType, HostTensor } from './tensor.ts';

export type OpOptions = { name?: string };

export class GraphBuilder {
  readonly graph: Graph;
  private readonly scopes: string[] = [];
  private readonly nodeNames = new Set<string>();
  private constantCount = 0;
  private readonly sharedConstants = new Map<string, string>();

  /**
   * Training mode: modules emit BatchNorm with batch statistics and report their updated running
   * stats through `runningStatOutputs` (parameter path -> value name).
   */
  training = false;
  /** In training mode, accumulate BatchNorm statistics and the class-loss sum in float64 (PyTorch's CPU behaviour). */
  preciseStats = true;
  /**
   * SiLU through the exact 1 / (1 + exp(-x)) instead of ONNX Runtime's approximate Sigmoid (about
   * 1e-7 absolute error): a family sets it in its training graphs when its gradients must stay as
   * close to exact arithmetic as PyTorch's float32 (YOLOX: halves the backbone gradients' distance
   * from float64). Off by default: the fused Sigmoid is faster.
   */
  preciseSilu = false;
  /**
   * The graph serves several input sizes (graph/passes/share-shapes.ts): emitters make no choice
   * by a count that changes with the size, so every size gives the same nodes.
   */
  anySize = false;
  readonly runningStatOutputs = new Map<string, string>();

  constructor(name?: string | Graph) {
    this.graph = name instanceof Graph ? name : new Graph(name);
    for (const n of this.graph.nodes) this.nodeNames.add(n.name);
    this.constantCount = this.graph.initializers.size;
  }

  /** Runs `fn` with `name` pushed on the scope (module path segment). */
  scope<T>(name: string, fn: () => T): T {
    this.scopes.push(name);
    try {
      return fn();
    } finally {
      this.scopes.pop();
    }
  }

  input(name: string, dtype: DType, shape: Dim[]): string {
    this.graph.inputs.push({ name, dtype, shape });
    return name;
  }

  /** Declares `value` as a graph output called `name` (adding an Identity only when renaming). */
  output(name: string, value: string, dtype: DType, shape: Dim[]): void {
    if (value !== name) this.graph.nodes.push({ op: 'Identity', name: `/${name}/Identity`, inputs: [value], outputs: [name], attrs: {} });
    this.graph.outputs.push({ name, dtype, shape });
  }

  /** Registers a parameter tensor under its state_dict path and returns the value name. */
  param(path: string, tensor: HostTensor): string {
    const existing = this.graph.initializers.get(path);
    if (existing && existing !== tensor) throw new Error(`parameter ${path} registered twice with different tensors`);
    this.graph.initializers.set(path, tensor);
    return path;
  }

  /**
   * A constant tensor (stored as an initializer so passes can read it). Small constants (scalars,
   * shapes, axes) are shared by content: a training graph would otherwise carry tens of thousands
   * of identical initializers, which slows ONNX Runtime's session creation.
   */
  constant(hint: string, tensor: HostTensor): string {
    const key = tensor.data.length <= 16 ? `${tensor.dtype}|${tensor.dims.join(',')}|${Array.from(tensor.data as ArrayLike<number | bigint>).join(',')}` : null;
    const shared = key ? this.sharedConstants.get(key) : undefined;
    if (shared && this.graph.initializers.has(shared)) return shared;
    let name = `${this.prefix()}/${hint}_const${this.constantCount++}`;
    while (this.graph.initializers.has(name)) name = `${this.prefix()}/${hint}_const${this.constantCount++}`;
    this.graph.initializers.set(name, tensor);
    if (key) this.sharedConstants.set(key, name);
    return name;
  }

  /** A float32 scalar constant. */
  scalar(value: number, hint = 'k'): string {
    return this.constant(hint, { dtype: 'float32', dims: [], data: Float32Array.of(value) });
  }

  /** Emits one node; returns its single output (or all of them with `outputs > 1`). */
  op(op: string, inputs: string[], attrs: Record<string, Attr> = {}, opts: OpOptions = {}): string {
    return this.opMulti(op, inputs, 1, attrs, opts)[0]!;
  }

  opMulti(op: string, inputs: string[], outputs: number, attrs: Record<string, Attr> = {}, opts: OpOptions = {}): string[] {
    const name = this.uniqueName(`${this.prefix()}/${opts.name ?? op}`);
    const outs = Array.from({ length: outputs }, (_, k) => `${name}_output_${k}`);
    this.graph.nodes.push({ op, name, inputs, outputs: [...outs], attrs });
    return outs;
  }

  private prefix(): string {
    return this.scopes.length ? `/${this.scopes.join('/')}` : '';
  }

  private uniqueName(base: string): string {
    let name = base;
    for (let k = 1; this.nodeNames.has(name); k++) name = `${base}_${k}`;
    this.nodeNames.add(name);
    return name;
  }
}

export const i = (v: number): Attr => ({ i: v });
export const f = (v: number): Attr => ({ f: v });
export const ints = (v: number[]): Attr => ({ ints: v });
export const s = (v: string): Attr => ({ s: v });
