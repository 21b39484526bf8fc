/**
 * Fresh-model initialisation as PyTorch defaults (Conv2d kaiming-uniform(a=sqrt 5) => U(+-1/sqrt(fan_in))
 * for weights and biases; BN gamma 1, beta 0, running stats 0/1) plus the head bias priors of the
 * original's DDetect (box towers 1.0, class towers log(5 / nc / (640 / stride)^2)). Seeded so fresh
 * models are reproducible.
 */
import { Parameter } from '../../graph/module.ts';
import { YOLO9_STRIDES } from './config.ts';
import type { Yolo9Network } from './network.ts';
import { mulberry32 as seededRandom } from '../../util/random.ts';

/** The package's seeded PRNG, under the name the initialiser's callers use. */
export { seededRandom };

function uniform(p: Parameter, bound: number, rand: () => number): void {
  const d = p.value.data as Float32Array;
  for (let k = 0; k < d.length; k++) d[k] = (rand() * 2 - 1) * bound;
}

export function initializeFresh(net: Yolo9Network, seed = 0): void {
  const rand = seededRandom(seed);
  const fanIn = new Map<string, number>();
  for (const [key, p] of net.namedTensors()) {
    const d = p.value.data;
    if (key.endsWith('.weight') && p.dims.length === 4) {
      const fan = p.dims[1]! * p.dims[2]! * p.dims[3]!;
      fanIn.set(key.slice(0, -'.weight'.length), fan);
      uniform(p, 1 / Math.sqrt(fan), rand);
    } else if (key.endsWith('bn.weight') || key.endsWith('running_var')) {
      (d as Float32Array).fill(1);
    } else if (key.endsWith('.bias') && !key.endsWith('bn.bias')) {
      uniform(p, 1 / Math.sqrt(fanIn.get(key.slice(0, -'.bias'.length)) ?? 1), rand);
    }
  }
  const nc = net.nc;
  for (const tower of net.head.boxTowers) fillBias(tower.layers[2]!, 1.0);
  net.head.classTowers.forEach((tower, k) => fillBias(tower.layers[2]!, Math.log(5 / nc / (640 / YOLO9_STRIDES[k]!) ** 2)));
}

function fillBias(conv: { namedTensors(): Iterable<[string, Parameter]> }, value: number): void {
  for (const [key, p] of conv.namedTensors()) if (key === 'bias') (p.value.data as Float32Array).fill(value);
}
