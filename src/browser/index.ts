/**
 * libreyolo for the browser: `LibreYOLO(weights, options)` reads a LibreYOLO `.pt` (our safe
 * unpickler), `.safetensors` checkpoint or exported `.onnx` from a URL, published name, ArrayBuffer or File, builds
 * the family's network in the graph IR and runs it on onnxruntime-web (WASM, threaded when the page
 * is cross-origin isolated; WebGPU with `device: 'webgpu'`) in a Web Worker.
 */
import { LibreYOLOError } from '../errors.ts';
import { familyEngineOptions, modelFromCheckpoint } from '../models/from-checkpoint.ts';
import { parseDevice } from '../runtime/device.ts';
import { GraphEngine } from '../runtime/graph-engine.ts';
import { openOnnxModel } from '../runtime/onnx-model.ts';
import type { Warn } from '../util/warn.ts';
import { parseCheckpoint } from '../weights/checkpoint-bytes.ts';
import { BrowserModel } from './model.ts';
import { readWeights, type WeightsOptions, type WeightsSource } from './weights.ts';

export interface BrowserLoadOptions extends WeightsOptions {
  /** `cpu` (WASM, default) or `webgpu`. A device that cannot be had is an error, never a silent fallback. */
  device?: string;
  /** Size override when the file does not say it. */
  size?: string;
  /** `detect` (default: what the file says). */
  task?: string;
  /** Where warnings go (default console.warn). */
  warn?: Warn;
}

const isOnnx = (b: Uint8Array, name: string): boolean => name.toLowerCase().endsWith('.onnx') || (b[0] === 0x08 && b.length > 2 && b[2] === 0x12);

export async function LibreYOLO(weights: WeightsSource, options: BrowserLoadOptions = {}): Promise<BrowserModel> {
  const device = parseDevice(options.device);
  if (device.kind === 'cuda') throw new LibreYOLOError('device_not_available', `Device '${device.id}' is not available in a browser. Pass device: 'cpu' (WASM) or 'webgpu'.`);
  const { bytes, name } = await readWeights(weights, options);
  const warn = options.warn ?? ((message: string) => console.warn(`libreyolo: ${message}`));
  if (isOnnx(bytes, name)) {
    const m = await openOnnxModel(bytes, name, { device: options.device, warn });
    return new BrowserModel({ ...m, format: 'onnx' }, m.engine, warn);
  }
  const ckpt = parseCheckpoint(bytes, name, {});
  const m = modelFromCheckpoint(ckpt, name, options);
  return new BrowserModel({ ...m, format: ckpt.format }, new GraphEngine(m.network, { device, ...familyEngineOptions(m.family) }), warn);
}

export { BrowserModel } from './model.ts';
export { configureRuntime, runtimeInfo, type RuntimeOptions } from './config.ts';
export { drawResults } from './draw.ts';
export { profileInference, type BrowserProfileOptions } from './profile.ts';
export { ProfileSchemaError, validateProfile } from '../profile/validate.ts';
export type { ProfileAnalysis } from '../profile/schema.ts';
export { toRgbImage, type BrowserImageSource } from './images.ts';
export { readWeights, weightsLocation, type WeightsOptions, type WeightsSource } from './weights.ts';
export { LibreYOLOError } from '../errors.ts';
export { Boxes, Results } from '../predict/results.ts';
export { readSafetensors } from '../weights/safetensors.ts';
export type { HostTensor } from '../graph/tensor.ts';
export type { PredictOptions } from '../predict/options.ts';
export type { TrackOptions } from '../predict/track-options.ts';
export type { WebRuntimeInfo } from './protocol.ts';
