/**
 * Generic torch.nn layers as emitting modules (Linear, LayerNorm, Embedding, ModuleList), with the
 * state_dict names torch gives them (`weight`, `bias`), for the transformer families.
 */
import type { GraphBuilder } from './builder.ts';
import { Module } from './module.ts';
import { layerNorm, linear } from './nn.ts';
import type { HostTensor } from './tensor.ts';

export class Linear extends Module {
  constructor(readonly inFeatures: number, readonly outFeatures: number, readonly hasBias = true) {
    super();
    this.addParameter('weight', [outFeatures, inFeatures]);
    if (hasBias) this.addParameter('bias', [outFeatures]);
  }
  forward(b: GraphBuilder, x: string): string {
    return linear(b, x, this.use(b, 'weight'), this.hasBias ? this.use(b, 'bias') : null);
  }
  /** The stored tensors themselves (for emitters that fold constants on the host). */
  weightTensor(): HostTensor {
    return this.ownTensor('weight').value;
  }
  biasTensor(): HostTensor | null {
    return this.hasBias ? this.ownTensor('bias').value : null;
  }
  /** The weight and bias value names (for fused emitters that pack several layers). */
  tensors(b: GraphBuilder): { weight: string; bias: string | null } {
    return { weight: this.use(b, 'weight'), bias: this.hasBias ? this.use(b, 'bias') : null };
  }
}

export class LayerNorm extends Module {
  constructor(readonly features: number, readonly eps: number) {
    super();
    this.addParameter('weight', [features]);
    this.addParameter('bias', [features]);
  }
  forward(b: GraphBuilder, x: string): string {
    return layerNorm(b, x, this.use(b, 'weight'), this.use(b, 'bias'), this.eps);
  }
  tensors(b: GraphBuilder): { weight: string; bias: string } {
    return { weight: this.use(b, 'weight'), bias: this.use(b, 'bias') };
  }
}

/** torch.nn.Embedding: a `weight` table of `count` rows; models read (slices of) it directly. */
export class Embedding extends Module {
  constructor(readonly count: number, readonly dim: number) {
    super();
    this.addParameter('weight', [count, dim]);
  }
  weight(b: GraphBuilder): string {
    return this.use(b, 'weight');
  }
}

/** torch.nn.ModuleList: children named 0, 1, ... */
export class ModuleList<M extends Module> extends Module {
  readonly items: M[] = [];
  constructor(items: M[] = []) {
    super();
    for (const m of items) this.push(m);
  }
  push(m: M): M {
    this.items.push(this.addModule(String(this.items.length), m));
    return m;
  }
  at(k: number): M {
    const m = this.items[k];
    if (!m) throw new Error(`ModuleList has no item ${k}`);
    return m;
  }
}
