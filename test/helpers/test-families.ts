/**
 * Small model families for predict tests, plugged in through the registry like any new family: the
 * YOLOv9 network with other capability flags (or another preprocessing), loaded from a real
 * checkpoint whose metadata names the family.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LibreYOLO, LibreYOLOModel } from '../../src/index.ts';
import type { GraphBuilder } from '../../src/graph/builder.ts';
import {
  DEFAULT_CAPABILITIES, registerFamily, type DetectionNetwork, type FamilyCapabilities, type InferenceEmitOptions, type ModelFamily,
} from '../../src/models/registry.ts';
import { parseDevice } from '../../src/runtime/device.ts';
import { GraphEngine } from '../../src/runtime/graph-engine.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { writeSafetensors } from '../../src/weights/safetensors.ts';
import { fixture } from './fixtures.ts';

export const FIXTURE_MODEL = (): string => fixture('yolo9t_ref.pt');

/** Registers `name` as a yolo9 variant with `caps` (and any other overrides). */
export function registerTestFamily(name: string, caps: Partial<FamilyCapabilities>, extra: Partial<ModelFamily> = {}): ModelFamily {
  const family: ModelFamily = { ...yolo9Family, ...extra, name, capabilities: { ...DEFAULT_CAPABILITIES, ...caps } };
  registerFamily(family);
  return family;
}

/** Writes the fixture weights as a safetensors checkpoint of `family` in `dir` and loads it. */
export async function loadAs(family: string, dir: string): Promise<LibreYOLOModel> {
  const ckpt = await loadCheckpointFile(FIXTURE_MODEL());
  const path = join(dir, `${family}.safetensors`);
  writeFileSync(path, writeSafetensors(ckpt.stateDict, { model_family: family, size: 't', task: 'detect', nc: '80', imgsz: '640' }));
  return LibreYOLO(path, { progress: false });
}

/**
 * A tiny real network whose detections follow the image (the random-weight fixture's outputs barely
 * depend on it): one class, one anchor per 32x32 cell with the cell as its box and the cell's mean
 * brightness as its score. Runs through ORT like any family.
 */
export function blobNetwork(): DetectionNetwork {
  return {
    nc: 1,
    emitInference(b: GraphBuilder, { batch, height, width }: InferenceEmitOptions) {
      if (!batch || !height || !width) throw new Error('blob network: static shapes only');
      const images = b.input('images', 'float32', [batch, 3, height, width]);
      const grey = b.op('ReduceMean', [images], { axes: { ints: [1] }, keepdims: { i: 1 } });
      const pooled = b.op('AveragePool', [grey], { kernel_shape: { ints: [32, 32] }, strides: { ints: [32, 32] } });
      const gw = width / 32, gh = height / 32, a = gw * gh;
      const scores = b.op('Reshape', [pooled, b.constant('shape', { dtype: 'int64', dims: [3], data: BigInt64Array.of(BigInt(batch), 1n, BigInt(a)) })]);
      const cells = new Float32Array(4 * a);
      for (let y = 0; y < gh; y++) for (let x = 0; x < gw; x++) {
        const k = y * gw + x;
        cells[k] = 32 * x; cells[a + k] = 32 * y; cells[2 * a + k] = 32 * x + 32; cells[3 * a + k] = 32 * y + 32;
      }
      const boxes = b.op('Expand', [b.constant('cells', { dtype: 'float32', dims: [1, 4, a], data: cells }), b.constant('bshape', { dtype: 'int64', dims: [3], data: BigInt64Array.of(BigInt(batch), 4n, BigInt(a)) })]);
      b.output('output', b.op('Concat', [boxes, scores], { axis: { i: 1 } }), 'float32', [batch, 5, a]);
    },
    namedTensors: () => [],
    parameterCount: () => 0,
  };
}

/** A model of the blob network in family `name` (capabilities as given). */
export function blobModel(name: string, caps: Partial<FamilyCapabilities> = {}): LibreYOLOModel {
  const network = blobNetwork();
  const family = registerTestFamily(name, caps, { canLoad: () => false, create: () => network });
  return new LibreYOLOModel({
    family, size: 't', task: 'detect', names: { 0: 'blob' }, imgsz: [320, 320], weightsPath: null, format: 'fresh',
    network, engine: new GraphEngine(network, { device: parseDevice('cpu'), threads: 1 }),
  });
}
