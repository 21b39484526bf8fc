/** The training benches' input: a reproducible batch of noise images with 1-6 random boxes each. */
import { seededRandom } from '../src/models/yolo9/init.ts';
import type { TrainBatch } from '../src/data/train-batch.ts';

export function noiseTrainBatch(seed: number, n: number, size: number, maxTargets: number): TrainBatch {
  const rand = seededRandom(seed);
  const images = new Float32Array(n * 3 * size * size).map(() => rand());
  const targets = new Float32Array(n * maxTargets * 5);
  for (let i = 0; i < n * maxTargets; i++) targets[i * 5] = -1;
  for (let b = 0; b < n; b++) {
    const count = 1 + Math.floor(rand() * 6);
    for (let k = 0; k < count; k++) {
      const w = 0.05 + rand() * 0.4;
      const h = 0.05 + rand() * 0.4;
      const x1 = rand() * (1 - w);
      const y1 = rand() * (1 - h);
      targets.set([Math.floor(rand() * 80), x1, y1, x1 + w, y1 + h], (b * maxTargets + k) * 5);
    }
  }
  return {
    images: { dtype: 'float32', dims: [n, 3, size, size], data: images },
    targets: { dtype: 'float32', dims: [n, maxTargets, 5], data: targets },
  };
}
