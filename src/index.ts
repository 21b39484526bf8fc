/** libreyolo: YOLO object detection for Node.js on ONNX Runtime. */
export { LibreYOLO, type LoadOptions } from './load.ts';
export { LibreYOLOModel } from './model.ts';
export { DEFAULT_MODEL, DEFAULT_MODEL_PATH, SAMPLE_IMAGE, SAMPLE_LARGE_IMAGE } from './assets.ts';
export { Results, Boxes, type Speed } from './predict/results.ts';
export type { PredictOptions } from './predict/options.ts';
export type { ExportOptions } from './export/onnx-export.ts';
export { LibreYOLOError, type ErrorCode } from './errors.ts';
export { registerFamily, listFamilies, type ModelFamily, type FamilyCapabilities } from './models/registry.ts';
export type { HostTensor, DType } from './graph/tensor.ts';
export { VERSION } from './version.ts';
