/** The inference and export graphs of an IR network for one input shape (no session: plain TypeScript). */
import { GraphBuilder } from '../graph/builder.ts';
import type { Graph } from '../graph/ir.ts';
import { foldBatchNorm } from '../graph/passes/fold-batchnorm.ts';
import { fuseParallelConvs } from '../graph/passes/fuse-parallel-convs.ts';
import { foldReluAffine } from '../graph/passes/fold-relu-affine.ts';
import type { DetectionNetwork } from '../models/registry.ts';

/** Opset of the graphs built for sessions (exports choose their own). */
export const SESSION_OPSET = 17;

export type GraphShape = { batch: number | null; height: number | null; width: number | null; rawOutputs?: boolean; optimize?: boolean };

/** The optimised inference graph of a network for one static input shape. */
export function buildInferenceGraph(network: DetectionNetwork, opts: GraphShape, emit: 'predict' | 'export' = 'predict'): Graph {
  const b = new GraphBuilder('libreyolo');
  if (emit === 'export' && network.emitExport) network.emitExport(b, opts);
  else network.emitInference(b, opts);
  if (opts.optimize !== false) {
    foldBatchNorm(b.graph);
    foldReluAffine(b.graph);
    fuseParallelConvs(b.graph);
  }
  return b.graph;
}

/** The exported graph: the family's export layout where it has one, else the predict graph. */
export function buildExportGraph(network: DetectionNetwork, opts: GraphShape): Graph {
  return buildInferenceGraph(network, opts, 'export');
}
