/** The DETR box/ref-point MLP: `layers.{i}` Linears with ReLU (or SiLU) between them (none after the last). */
import type { GraphBuilder } from '../../graph/builder.ts';
import { Linear, ModuleList } from '../../graph/layers.ts';
import { Module } from '../../graph/module.ts';
import { silu } from '../../graph/nn.ts';

export class MLP extends Module {
  readonly layers: ModuleList<Linear>;
  constructor(inDim: number, hiddenDim: number, outDim: number, numLayers: number, readonly act: 'relu' | 'silu' = 'relu') {
    super();
    const dims = [inDim, ...Array.from({ length: numLayers - 1 }, () => hiddenDim), outDim];
    this.layers = this.addModule('layers', new ModuleList(dims.slice(1).map((d, k) => new Linear(dims[k]!, d))));
  }
  forward(b: GraphBuilder, x: string): string {
    let y = x;
    b.scope('layers', () => this.layers.items.forEach((l, k) => {
      y = l.emit(b, y);
      if (k < this.layers.items.length - 1) y = this.act === 'relu' ? b.op('Relu', [y]) : silu(b, y);
    }));
    return y;
  }
}
