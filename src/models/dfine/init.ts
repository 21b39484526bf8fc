/**
 * Fresh D-FINE weights, seeded: PyTorch's defaults (conv and linear weights and biases
 * U(+-1/sqrt(fan_in)), norm weights 1 and biases 0, running variance 1, embeddings N(0, 1) with the
 * padding row 0, MHA in-projection Xavier-uniform with zero biases), then the original's resets
 * (`_reset_parameters` of the decoder and its attention): score-head biases at the 0.01 prior, the
 * last box-head layers 0, deformable attention's sampling offsets 0 with the per-head grid bias and
 * its attention weights 0, Xavier-uniform for the FFN, enc_output and query_pos_head weights.
 */
import { mulberry32 } from '../../util/random.ts';
import type { DfineNetwork } from './network.ts';

/** bias_init_with_prob(0.01). */
const PRIOR = -Math.log((1 - 0.01) / 0.01);

export function initializeDfine(net: DfineNetwork, seed = 0): void {
  const rand = mulberry32(seed);
  const uniform = (d: Float32Array, bound: number): void => { for (let k = 0; k < d.length; k++) d[k] = (rand() * 2 - 1) * bound; };
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const xavier = (d: Float32Array, dims: readonly number[]): void => uniform(d, Math.sqrt(6 / (dims[0]! + dims[1]!)));
  const bound = new Map<string, number>();
  const nc = net.options.nc;
  for (const [key, p] of net.namedTensors()) {
    const d = p.value.data as Float32Array;
    const owner = key.slice(0, key.lastIndexOf('.'));
    const leaf = key.slice(key.lastIndexOf('.') + 1);
    if (p.kind !== 'parameter') {
      if (leaf === 'running_var') d.fill(1);
      else if (leaf === 'running_mean') d.fill(0);
      continue;
    }
    if (key === 'decoder.up' || key === 'decoder.reg_scale') continue; // FDR constants, frozen
    if (key.endsWith('denoising_class_embed.weight')) {
      for (let k = 0; k < d.length; k++) d[k] = normal();
      d.fill(0, nc * p.dims[1]!); // padding_idx nc
    } else if (leaf === 'in_proj_weight') {
      xavier(d, p.dims);
    } else if (leaf === 'in_proj_bias' || key.endsWith('out_proj.bias')) {
      d.fill(0);
    } else if (p.dims.length >= 2) {
      const fanIn = p.dims.slice(1).reduce((a, b) => a * b, 1);
      bound.set(owner, 1 / Math.sqrt(fanIn));
      uniform(d, 1 / Math.sqrt(fanIn));
    } else if (leaf === 'bias' && bound.has(owner)) {
      uniform(d, bound.get(owner)!);
    } else if (leaf === 'weight' || leaf === 'scale') {
      d.fill(1); // BatchNorm, LayerNorm, learnable affine scale
    } else {
      d.fill(0);
    }
  }
  resetDecoder(net, PRIOR, (d, dims) => xavier(d, dims));
}

function resetDecoder(net: DfineNetwork, prior: number, xavier: (d: Float32Array, dims: readonly number[]) => void): void {
  const heads = 8;
  for (const [key, p] of net.namedTensors()) {
    const d = p.value.data as Float32Array;
    if (/^decoder\.(enc_score_head|dec_score_head\.\d+)\.bias$/.test(key)) d.fill(prior);
    else if (/^decoder\.(enc_bbox_head|pre_bbox_head|dec_bbox_head\.\d+)\.layers\.2\.(weight|bias)$/.test(key)) d.fill(0);
    else if (/cross_attn\.(sampling_offsets\.weight|attention_weights\.(weight|bias))$/.test(key)) d.fill(0);
    else if (/cross_attn\.sampling_offsets\.bias$/.test(key)) {
      const points = d.length / heads / 2;
      const layer = key.slice(0, key.lastIndexOf('.sampling_offsets.bias'));
      const perLevel = net.cfg.points;
      if (perLevel.reduce((a, b) => a + b, 0) !== points) throw new Error(`${layer}: ${points} sampling points, config says ${perLevel.join('+')}`);
      for (let h = 0; h < heads; h++) {
        const t = (h * 2 * Math.PI) / heads;
        const m = Math.max(Math.abs(Math.cos(t)), Math.abs(Math.sin(t)));
        let j = 0;
        for (const n of perLevel) {
          for (let s = 1; s <= n; s++, j++) {
            d[(h * points + j) * 2] = (Math.cos(t) / m) * s;
            d[(h * points + j) * 2 + 1] = (Math.sin(t) / m) * s;
          }
        }
      }
    } else if (/^decoder\.(decoder\.layers\.\d+\.linear[12]|enc_output\.proj|query_pos_head\.layers\.[01])\.weight$/.test(key)) xavier(d, p.dims);
  }
}
