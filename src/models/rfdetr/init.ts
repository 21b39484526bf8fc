/**
 * Fresh RF-DETR weights as the original initialises them, seeded: DINOv2 linear and
 * conv weights, the position table and cls token truncated-normal(0.02), biases 0, LayerNorms 1/0,
 * LayerScale 1; the transformer xavier-uniform; deformable attention's offsets 0 with the per-head
 * direction prior in their bias, attention weights 0; class biases -log(99), last box layers 0,
 * reference points 0, query content N(0, 1). The projector keeps PyTorch's conv default
 * (kaiming-uniform, bound 1/sqrt(fan_in)).
 */
import { mulberry32 } from '../../util/random.ts';
import { RFDETR_COMMON as C } from './config.ts';
import type { RfdetrNetwork } from './network.ts';

function normal(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
}

/** Normal(0, std) redrawn outside +-2 std (torch's trunc_normal_ with the default bounds). */
function truncNormal(rand: () => number, std: number): number {
  for (;;) {
    const v = normal(rand);
    if (Math.abs(v) <= 2) return v * std;
  }
}

export function initializeRfdetr(net: RfdetrNetwork, seed = 0): void {
  const rand = mulberry32(seed);
  const heads = C.caHeads;
  const points = C.decPoints;
  for (const [key, p] of net.namedTensors()) {
    const d = p.value.data as Float32Array;
    const fill = (f: (k: number) => number): void => { for (let k = 0; k < d.length; k++) d[k] = f(k); };
    const leaf = key.slice(key.lastIndexOf('.') + 1);
    if (/(^|\.)(norm\d?|layernorm|enc_output_norm\.\d+|bn|stages\.0\.1)\.weight$/.test(key) || leaf === 'lambda1') fill(() => 1);
    else if (key.startsWith('backbone.0.encoder.')) {
      if (leaf === 'bias' || key.endsWith('mask_token')) fill(() => 0);
      else fill(() => truncNormal(rand, 0.02));
    } else if (key.startsWith('backbone.0.projector.')) {
      if (p.dims.length === 4) {
        const b = 1 / Math.sqrt(p.dims[1]! * p.dims[2]! * p.dims[3]!);
        fill(() => (rand() * 2 - 1) * b);
      } else fill(() => 0);
    } else if (key.endsWith('sampling_offsets.bias')) {
      // Head h points along angle 2*pi*h/heads, scaled so the larger component is 1, times (point + 1).
      for (let h = 0; h < heads; h++) {
        const t = (2 * Math.PI * h) / heads;
        const m = Math.max(Math.abs(Math.cos(t)), Math.abs(Math.sin(t)));
        for (let q = 0; q < points; q++) {
          d[(h * points + q) * 2] = (Math.cos(t) / m) * (q + 1);
          d[(h * points + q) * 2 + 1] = (Math.sin(t) / m) * (q + 1);
        }
      }
    } else if (/sampling_offsets\.weight|attention_weights\./.test(key) || key === 'refpoint_embed.weight') fill(() => 0);
    else if (key === 'query_feat.weight') fill(() => normal(rand));
    else if (/(^|\.)(class_embed|enc_out_class_embed\.\d+)\.bias$/.test(key)) fill(() => -Math.log(99));
    else if (/(^|\.)(bbox_embed|enc_out_bbox_embed\.\d+)\.layers\.2\./.test(key)) fill(() => 0);
    else if (leaf === 'bias' || leaf === 'in_proj_bias') fill(() => 0);
    else if (p.dims.length >= 2) {
      const bound = Math.sqrt(6 / (p.dims[0]! + p.dims[1]!));
      fill(() => (rand() * 2 - 1) * bound);
    } else fill(() => 0);
  }
}
