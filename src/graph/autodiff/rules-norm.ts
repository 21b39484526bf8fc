/**
 * Closed-form gradients of the normalisation ops used as single ONNX nodes: LayerNormalization
 * (opset 17, reusing the Mean and InvStdDev outputs the forward kernel already computes) and
 * inference-mode BatchNormalization (frozen statistics: a per-channel affine map).
 */
import { attrFloat, attrInt } from '../ir.ts';
import { dims, gOnly, type VjpRule } from './context.ts';
import { reduceSum, reshapeTo, unbroadcast } from './emit.ts';

/** dx = invstd * (g*s - mean(g*s) - xhat * mean(g*s * xhat)) over the normalised axes; ds = sum g*xhat; db = sum g. */
export const layerNormRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  const [x, scale, bias] = node.inputs as [string, string, string | undefined];
  const xd = dims(ctx, x);
  const a = (attrInt(node, 'axis', -1) + xd.length) % xd.length;
  if (ctx.gy[1] || ctx.gy[2]) throw new Error(`autodiff: ${node.name}: gradients through LayerNormalization's Mean/InvStdDev outputs are not supported`);
  if (!node.outputs[1]) node.outputs[1] = `${node.name}_mean`;
  if (!node.outputs[2]) node.outputs[2] = `${node.name}_inv_std`;
  const [, mean, invStd] = node.outputs as [string, string, string];
  const g = gOnly(ctx);
  const axes = xd.slice(a).map((_, k) => a + k);
  const inv = b.scalar(1 / xd.slice(a).reduce((p, q) => p * q, 1), 'inv_n');
  const avg = (v: string): string => b.op('Mul', [reduceSum(b, v, axes, true), inv]);
  const xhat = b.op('Mul', [b.op('Sub', [x, mean]), invStd]);
  const gs = b.op('Mul', [g, scale]);
  const dx = b.op('Mul', [invStd, b.op('Sub', [b.op('Sub', [gs, avg(gs)]), b.op('Mul', [xhat, avg(b.op('Mul', [gs, xhat]))])])]);
  const dScale = unbroadcast(b, b.op('Mul', [g, xhat]), xd, dims(ctx, scale));
  return bias ? [dx, dScale, unbroadcast(b, g, xd, dims(ctx, bias))] : [dx, dScale];
};

/** y = (x - mean) * k + bias with k = scale / sqrt(var + eps) per channel (axis 1). */
export const batchNormInferenceRule: VjpRule = (ctx) => {
  const { b, node } = ctx;
  if (attrInt(node, 'training_mode', 0)) throw new Error(`autodiff: ${node.name}: training-mode BatchNormalization has no rule (emit BatchNormTrain)`);
  const [x, scale, , mean, variance] = node.inputs as [string, string, string, string, string];
  const xd = dims(ctx, x);
  const perChannel = xd.map((d, k) => (k === 1 ? d : 1));
  const sumAxes = xd.map((_, k) => k).filter((k) => k !== 1);
  const eps = attrFloat(node, 'epsilon', 1e-5);
  const g = gOnly(ctx);
  const invStd = b.op('Reciprocal', [b.op('Sqrt', [b.op('Add', [variance, b.scalar(eps, 'eps')])])]); // [C]
  const k = b.op('Mul', [scale, invStd]);
  const bc = (v: string): string => reshapeTo(b, v, perChannel);
  const centred = b.op('Sub', [x, bc(mean)]);
  const sumG = reduceSum(b, g, sumAxes, false);
  const sumGc = reduceSum(b, b.op('Mul', [g, centred]), sumAxes, false);
  const dx = b.op('Mul', [g, bc(k)]);
  const dScale = b.op('Mul', [sumGc, invStd]);
  const dMean = b.op('Neg', [b.op('Mul', [sumG, k])]);
  const invStd3 = b.op('Mul', [invStd, b.op('Mul', [invStd, invStd])]);
  const dVar = b.op('Mul', [b.op('Mul', [sumGc, scale]), b.op('Mul', [invStd3, b.scalar(-0.5, 'minus_half')])]);
  return [dx, dScale, sumG, dMean, dVar];
};
