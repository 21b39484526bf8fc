/**
 * Fresh YOLOX weights as PyTorch's defaults: conv weights and biases U(+-1/sqrt(fan_in))
 * (kaiming-uniform with a = sqrt 5), BatchNorm gamma 1, beta 0, running mean 0, variance 1. The
 * original sets no head-bias prior here (training setup does). Seeded for reproducible fresh models.
 */
import { mulberry32 } from '../../util/random.ts';
import type { YoloxNetwork } from './network.ts';

export function initializeYolox(net: YoloxNetwork, seed = 0): void {
  const rand = mulberry32(seed);
  const bound = new Map<string, number>();
  for (const [key, p] of net.namedTensors()) {
    const data = p.value.data as Float32Array;
    const owner = key.slice(0, key.lastIndexOf('.'));
    if (p.dims.length === 4) {
      const b = 1 / Math.sqrt(p.dims[1]! * p.dims[2]! * p.dims[3]!);
      bound.set(owner, b);
      for (let k = 0; k < data.length; k++) data[k] = (rand() * 2 - 1) * b;
    } else if (key.endsWith('bn.weight') || key.endsWith('bn.running_var')) {
      data.fill(1);
    } else if (key.endsWith('.bias') && bound.has(owner)) {
      const b = bound.get(owner)!;
      for (let k = 0; k < data.length; k++) data[k] = (rand() * 2 - 1) * b;
    }
  }
}
