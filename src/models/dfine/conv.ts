/**
 * Conv (no bias) + BatchNorm + optional activation, the unit of HGNetv2 (`ConvBNAct`: norm `bn`,
 * ReLU, LearnableAffineBlock `lab`) and of the hybrid encoder (`ConvNormLayer`: norm `norm`, SiLU).
 * BatchNorm eps 1e-5. In training graphs (`b.training`) it runs on batch statistics and reports its
 * momentum-0.1 running-stat update through `b.runningStatOutputs`, also where its parameters are
 * frozen (the D-FINE stem: requires_grad=False does not stop the statistics);
 * FrozenBatchNorm2d keeps weight/bias as buffers, has no `num_batches_tracked` and stays in eval.
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { Module } from '../../graph/module.ts';
import { batchNorm, batchNormTrain, conv2d, silu } from '../../graph/nn.ts';
import { DFINE_COMMON } from './config.ts';

export interface ConvNormSpec {
  cin: number;
  cout: number;
  k: number;
  stride?: number;
  groups?: number;
  act: 'relu' | 'silu' | null;
  /** Name of the norm child: `bn` (backbone) or `norm` (encoder). */
  norm: 'bn' | 'norm';
  /** LearnableAffineBlock after the activation (only with an activation). */
  lab?: boolean;
  frozen?: boolean;
}

export class ConvNorm extends Module {
  readonly lab: boolean;
  constructor(readonly spec: ConvNormSpec) {
    super();
    const { cin, cout, k, groups = 1, norm } = spec;
    this.addParameter('conv.weight', [cout, cin / groups, k, k]);
    if (spec.frozen) {
      this.addBuffer(`${norm}.weight`, [cout]);
      this.addBuffer(`${norm}.bias`, [cout]);
    } else {
      this.addParameter(`${norm}.weight`, [cout]);
      this.addParameter(`${norm}.bias`, [cout]);
    }
    this.addBuffer(`${norm}.running_mean`, [cout]);
    this.addBuffer(`${norm}.running_var`, [cout]);
    if (!spec.frozen) this.addBuffer(`${norm}.num_batches_tracked`, [], 'int64');
    this.lab = Boolean(spec.lab && spec.act);
    if (this.lab) {
      this.addParameter('lab.scale', [1]).value.data[0] = 1;
      this.addParameter('lab.bias', [1]);
    }
  }
  forward(b: GraphBuilder, x: string): string {
    const { k, stride = 1, groups = 1, norm, act } = this.spec;
    const y = conv2d(b, x, this.use(b, 'conv.weight'), null, { kernel: k, stride, groups, pad: (k - 1) >> 1 }, 'conv/Conv');
    let n = b.training && !this.spec.frozen ? this.trainNorm(b, y)
      : batchNorm(b, y, this.use(b, `${norm}.weight`), this.use(b, `${norm}.bias`), this.use(b, `${norm}.running_mean`), this.use(b, `${norm}.running_var`), DFINE_COMMON.bnEps, `${norm}/BatchNormalization`);
    if (act === 'relu') n = b.op('Relu', [n]);
    else if (act === 'silu') n = b.scope('act', () => silu(b, n));
    if (this.lab) n = b.scope('lab', () => b.op('Add', [b.op('Mul', [n, this.use(b, 'lab.scale')]), this.use(b, 'lab.bias')]));
    return n;
  }

  private trainNorm(b: GraphBuilder, y: string): string {
    const { norm, cout } = this.spec;
    const out = b.scope(norm, () => batchNormTrain(b, y, this.use(b, `${norm}.weight`), this.use(b, `${norm}.bias`), this.use(b, `${norm}.running_mean`), this.use(b, `${norm}.running_var`),
      { eps: DFINE_COMMON.bnEps, momentum: DFINE_COMMON.bnMomentum, channels: cout, preciseStats: b.preciseStats }));
    b.runningStatOutputs.set(this.tensorPath(`${norm}.running_mean`), out.mean);
    b.runningStatOutputs.set(this.tensorPath(`${norm}.running_var`), out.variance);
    return out.y;
  }
}
