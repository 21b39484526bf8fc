/**
 * D-FINE's loss graph over fed predictions (the train output record's names as graph inputs): the
 * losses of given outputs without the network, for checking the criterion on its own.
 */
import { GraphBuilder } from '../../src/graph/builder.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { emitDfineLoss } from '../../src/models/dfine/loss.ts';
import { dfineLossTerms, termKeys } from '../../src/models/dfine/loss-terms.ts';
import { dfineLossInputs, dfineLossInputSpecs, type DfineLossContext, type DfineMatchings } from '../../src/models/dfine/loss-targets.ts';
import type { ImageTargets } from '../../src/models/dfine/matcher.ts';
import type { DfineQuerySplit, DfineTrainOutputs } from '../../src/models/dfine/train-outputs.ts';

export interface FedLossGraph {
  b: GraphBuilder;
  feeds: Record<string, HostTensor>;
  /** Every loss key (graph outputs of the same names), then `total` and `component_<name>`. */
  keys: string[];
  matchings: DfineMatchings;
}

export function fedLossGraph(p: Record<string, HostTensor>, targets: readonly ImageTargets[], ctx: DfineLossContext, fdr: { up: number }): FedLossGraph {
  const b = new GraphBuilder('dfine_loss_fed');
  const feeds: Record<string, HostTensor> = {};
  const value: Record<string, string> = {};
  const L = ctx.layers;
  const need = (name: string): string => {
    if (!value[name]) {
      const t = p[name];
      if (!t) throw new Error(`no prediction ${name}`);
      value[name] = b.input(name, 'float32', t.dims);
      feeds[name] = t;
    }
    return value[name]!;
  };
  const split = (prefix: string, q: number): DfineQuerySplit => ({
    queries: q,
    layers: Array.from({ length: L }, (_, l) => ({ logits: need(`${prefix}layer${l}.pred_logits`), boxes: need(`${prefix}layer${l}.pred_boxes`), corners: need(`${prefix}layer${l}.pred_corners`) })),
    refPoints: need(`${prefix}ref_points`),
    pre: { logits: need(`${prefix}pre.pred_logits`), boxes: need(`${prefix}pre.pred_boxes`) },
  });
  const out: DfineTrainOutputs = {
    batch: ctx.batch, nc: ctx.nc, regMax: ctx.regMax, up: fdr.up, regScale: ctx.regScale, project: ctx.project,
    matching: split('', ctx.queries), denoising: ctx.dn ? split('dn.', ctx.dn.slots) : null,
    enc: { logits: need('enc.pred_logits'), boxes: need('enc.pred_boxes') },
  };
  const { inputs, matchings } = dfineLossInputs(p, targets, ctx);
  const lossFeeds: Record<string, string> = {};
  for (const [name, spec] of Object.entries(dfineLossInputSpecs(ctx))) {
    lossFeeds[name] = b.input(name, 'float32', spec.dims);
    feeds[name] = inputs[name]!;
  }
  const values = emitDfineLoss(b, out, lossFeeds, ctx.cls);
  const keys = dfineLossTerms(L, ctx.dn !== null).flatMap((t) => termKeys(t, ctx.cls));
  for (const k of keys) b.output(k, values.keys[k]!, 'float32', []);
  b.output('total', values.total, 'float32', []);
  for (const [n, v] of Object.entries(values.components)) b.output(`component_${n}`, v, 'float32', []);
  return { b, feeds, keys, matchings };
}
