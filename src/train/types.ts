/**
 * Contracts between the training pieces: the data loader produces batches, the train step (forward +
 * loss + backward on ONNX Runtime) turns a batch into losses and gradients, the optimizer and the
 * trainer loop consume them.
 */
import type { HostTensor } from '../graph/tensor.ts';

/** One training batch in the original's layout. */
export interface TrainBatch {
  /** `[B, 3, H, W]` float32, top-left letterboxed: RGB 0..1 (pad 114/255) from the loader; the family's input layout at the step. */
  images: HostTensor;
  /** `[B, M, 5]` float32 rows `[cls, x1, y1, x2, y2]` normalised to 0..1; padding rows are `[-1, 0, 0, 0, 0]` (all-zero rows are padding too). */
  targets: HostTensor;
  /** The host draws of this step (`HostAssigner.draws`); absent: the step draws them from its generator. */
  draws?: Readonly<Record<string, HostTensor>>;
}

/** The loss of a step: `total` (what is differentiated) and the family's logged components (YOLOv9: weighted box, dfl, cls). */
export interface LossComponents {
  total: number;
  [component: string]: number;
}

export interface StepResult {
  loss: LossComponents;
  /** d total / d parameter, by state_dict key (parameters only, not buffers). */
  gradients: Map<string, Float32Array>;
  /** BatchNorm running_mean / running_var after this step's momentum update (0.03), by state_dict key. */
  runningStats: Map<string, Float32Array>;
  /** Foreground anchors per image (mean). */
  numFg: number;
  /** amp only: a gradient overflowed in float16; the loss scale was lowered and this update must be skipped. */
  overflow?: boolean;
}
