/**
 * Expands composite nodes (ops the package defines for a cheaper gradient, e.g. BatchNormTrain)
 * into ONNX primitives in place, keeping topological order and the composite's output names.
 */
import { i, ints, type GraphBuilder } from '../builder.ts';
import { GraphBuilder as Builder } from '../builder.ts';
import { attrFloat, attrInt, type Graph, type Node } from '../ir.ts';
import { COMPOSITE_DOMAIN, reshape } from '../nn.ts';

type Expander = (b: GraphBuilder, node: Node) => string[];

const expanders = new Map<string, Expander>([
  ['BatchNormTrain', expandBatchNormTrain],
]);

/**
 * Statistics as PyTorch's CPU kernel computes them: accumulated in float64 (precise_stats=1) and
 * applied as y = x * alpha + beta with alpha = gamma / sqrt(var + eps), beta = b - mean * alpha.
 */
function expandBatchNormTrain(b: GraphBuilder, node: Node): string[] {
  const [x, scale, bias] = node.inputs as [string, string, string];
  const eps = attrFloat(node, 'epsilon', 1e-5);
  const axes = { axes: ints([0, 2, 3]), keepdims: i(1) };
  let mean: string;
  let variance: string;
  let invStd: string;
  if (attrInt(node, 'precise_stats', 1)) {
    const x64 = b.op('Cast', [x], { to: i(11) });
    const mean64 = b.op('ReduceMean', [x64], axes, { name: 'BatchMean64' });
    const c64 = b.op('Sub', [x64, mean64]);
    const var64 = b.op('ReduceMean', [b.op('Mul', [c64, c64])], axes, { name: 'BatchVar64' });
    const eps64 = b.constant('eps64', { dtype: 'float64', dims: [], data: Float64Array.of(eps) });
    mean = b.op('Cast', [mean64], { to: i(1) });
    variance = b.op('Cast', [var64], { to: i(1) });
    invStd = b.op('Cast', [b.op('Reciprocal', [b.op('Sqrt', [b.op('Add', [var64, eps64])])])], { to: i(1) });
  } else {
    // Two-pass statistics in float32: the mean, then the mean square of the centred values (ONNX
    // Runtime's training-mode BatchNormalization uses E[x^2] - E[x]^2, which cancels to a negative
    // variance, hence NaN, for channels whose mean dwarfs their spread; its ReduceSumSquare
    // accumulates less exactly than ReduceMean: 5e-6 against 2e-7 relative to float64 at 8x64x160x160).
    mean = b.op('ReduceMean', [x], axes, { name: 'BatchMean' });
    const centred = b.op('Sub', [x, mean], {}, { name: 'Centre' });
    variance = b.op('ReduceMean', [b.op('Mul', [centred, centred])], axes, { name: 'BatchVar' });
    invStd = b.op('Reciprocal', [b.op('Sqrt', [b.op('Add', [variance, b.scalar(eps, 'eps')])])]);
  }
  const alpha = b.op('Mul', [invStd, reshape(b, scale, [1, -1, 1, 1])], {}, { name: 'Scale' });
  const beta = b.op('Sub', [reshape(b, bias, [1, -1, 1, 1]), b.op('Mul', [mean, alpha])]);
  const y = b.op('Add', [b.op('Mul', [x, alpha], {}, { name: 'Normalize' }), beta], {}, { name: 'Shift' });
  return [y, mean, variance];
}

export function isComposite(node: Node): boolean {
  return node.domain === COMPOSITE_DOMAIN;
}

/** Lowers every composite node; returns how many were expanded. */
export function lowerComposites(graph: Graph): number {
  if (!graph.nodes.some(isComposite)) return 0;
  const original = graph.nodes;
  graph.nodes = [];
  const b = new Builder(graph);
  let count = 0;
  for (const node of original) {
    if (!isComposite(node)) {
      graph.nodes.push(node);
      continue;
    }
    const expand = expanders.get(node.op);
    if (!expand) throw new Error(`no lowering for composite op ${node.op} (${node.name})`);
    const outs = b.scope(`${node.name.replace(/^\//, '')}`, () => expand(b, node));
    node.outputs.forEach((name, k) => {
      if (name) graph.nodes.push({ op: 'Identity', name: `${node.name}/out${k}`, inputs: [outs[k]!], outputs: [name], attrs: {} });
    });
    count++;
  }
  return count;
}
