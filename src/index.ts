/** libreyolo: YOLO object detection for Node.js on ONNX Runtime. */
import { onDemandTrainProfiler } from './model.ts';
import type { TrainOptions, TrainResults, TrainRuntime, TrainSource } from './train/trainer.ts';
export { createFreshModel, LibreYOLO, type LoadOptions } from './load.ts';
export { LibreYOLOModel, type QuantizeOptions, type CaptureGraphOptions, type ModelPrecision } from './model.ts';
export { DEFAULT_MODEL, DEFAULT_MODEL_PATH, SAMPLE_IMAGE, SAMPLE_LARGE_IMAGE } from './assets.ts';
export { Results, Boxes, type Speed, type SummaryRow } from './predict/results.ts';
// What predict() takes: a path, URL, encoded bytes or decoded pixels (or an array of these).
export type { ImageSource } from './data/sources.ts';
export type { RawPixels } from './data/image.ts';
export type { PredictOptions } from './predict/options.ts';
export type { ExportOptions } from './export/onnx-export.ts';
export { LibreYOLOError, type ErrorCode } from './errors.ts';
export { SourcesFailedError, type SourceFailure } from './predict/source-failures.ts';
export { setLimits, currentLimits, LIMITS, type LimitName } from './util/limits.ts';
export { registerFamily, listFamilies, type ModelFamily, type FamilyCapabilities } from './models/registry.ts';
export type { HostTensor, DType } from './graph/tensor.ts';
export { VERSION } from './version.ts';

// Training, data and validation
export type { TrainOptions, TrainResults, TrainRuntime, TrainSource } from './train/trainer.ts';
/** Trains `model` as `model.train()` does, without loading the result into it; the trainer loads on first call. */
export async function trainModel(model: TrainSource, options: TrainOptions, runtime?: TrainRuntime): Promise<TrainResults> {
  return (await import('./train/trainer.ts')).trainModel(model, options, { profiler: onDemandTrainProfiler, ...runtime });
}
export type { CheckOptions, LossAndGradients, PlainTensor } from './train/check.ts';
export { generateSynthDataset, SHAPE_CLASSES, type SynthOptions } from './data/synth.ts';
export { validate, type ValidateOptions, type ValidationResult } from './val/validate.ts';

// Tracking: ByteTrack on detections from any source
export { ByteTracker, type TrackRow, type TrackSnapshot, type DetectionsInput } from './track/byte-tracker.ts';
export { TRACK_DEFAULTS, type TrackConfig } from './track/config.ts';

// Profiling, precision and graph capture
export { profileInference, type InferenceProfileOptions } from './profile/inference.ts';
export { loadProfile } from './profile/load.ts';
export { analyzeTrace } from './profile/analyze.ts';
export { ProfileSchemaError, validateProfile } from './profile/validate.ts';
export type { PrecisionReport } from './quantize/report.ts';
export { QuantizationError } from './quantize/recipes.ts';
export { CudaGraphUnavailable, GraphCaptureNotImplementedError, type GraphInfo } from './runtime/graph-capture.ts';
