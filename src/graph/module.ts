/**
 * torch.nn-style modules that emit graph nodes instead of computing. A module owns named
 * parameters and buffers and named children; its state_dict paths are the concatenated names, so
 * a LibreYOLO checkpoint loads by key. A child may carry an alternative name (the newer upstream
 * spelling) so both key layouts map onto the same tensors.
 */
import type { GraphBuilder } from './builder.ts';
import { numel, zeros, type DType, type HostTensor } from './tensor.ts';

export type ParamKind = 'parameter' | 'buffer';

export class Parameter {
  /**
   * torch's requires_grad: false for a frozen parameter (the D-FINE stem), which training graphs
   * feed as an input without a gradient and optimizers leave alone. It still counts as a parameter.
   */
  requiresGrad = true;
  constructor(public value: HostTensor, public readonly kind: ParamKind) {}
  get dims(): number[] {
    return this.value.dims;
  }
}

/** Which spelling of state_dict keys to produce. */
export type KeyLayout = 'legacy' | 'current';

export abstract class Module {
  private readonly childMap = new Map<string, { module: Module; alt: string }>();
  private readonly paramMap = new Map<string, Parameter>();
  /** Canonical (legacy-layout) dotted path, assigned by `assignPaths` on the root. */
  path = '';

  protected addModule<M extends Module>(name: string, module: M, altName: string = name): M {
    this.childMap.set(name, { module, alt: altName });
    return module;
  }

  protected addParameter(name: string, dims: number[], dtype: DType = 'float32'): Parameter {
    const p = new Parameter(zeros(dtype, dims), 'parameter');
    this.paramMap.set(name, p);
    return p;
  }

  protected addBuffer(name: string, dims: number[], dtype: DType = 'float32'): Parameter {
    const p = new Parameter(zeros(dtype, dims), 'buffer');
    this.paramMap.set(name, p);
    return p;
  }

  children(): Array<[string, Module]> {
    return [...this.childMap].map(([name, c]) => [name, c.module]);
  }

  /** Sets `path` on every module below; call once on the root after construction. */
  assignPaths(prefix = ''): this {
    this.path = prefix;
    for (const [name, { module }] of this.childMap) module.assignPaths(prefix ? `${prefix}.${name}` : name);
    return this;
  }

  /** All parameters and buffers in state_dict order, keyed by path in the chosen layout. */
  *namedTensors(layout: KeyLayout = 'legacy', prefix = ''): Generator<[string, Parameter]> {
    for (const [name, p] of this.paramMap) yield [prefix ? `${prefix}.${name}` : name, p];
    for (const [name, { module, alt }] of this.childMap) {
      const seg = layout === 'legacy' ? name : alt;
      yield* module.namedTensors(layout, prefix ? `${prefix}.${seg}` : seg);
    }
  }

  parameterCount(): number {
    let n = 0;
    for (const [, p] of this.namedTensors()) if (p.kind === 'parameter') n += numel(p.dims);
    return n;
  }

  /** The path of one of this module's own tensors (used as the initializer name). */
  tensorPath(name: string): string {
    return this.path ? `${this.path}.${name}` : name;
  }

  /** Registers one of this module's tensors with the builder and returns its value name. */
  protected use(b: GraphBuilder, name: string): string {
    const p = this.paramMap.get(name);
    if (!p) throw new Error(`${this.constructor.name} has no tensor ${name}`);
    return b.param(this.tensorPath(name), p.value);
  }

  protected ownTensor(name: string): Parameter {
    const p = this.paramMap.get(name);
    if (!p) throw new Error(`${this.constructor.name} has no tensor ${name}`);
    return p;
  }

  /** Emits this module's nodes under its own name scope. */
  emit<A extends unknown[], R>(this: { forward(b: GraphBuilder, ...args: A): R; path: string }, b: GraphBuilder, ...args: A): R {
    const seg = this.path.split('.').pop() ?? '';
    return seg ? b.scope(seg, () => this.forward(b, ...args)) : this.forward(b, ...args);
  }
}
