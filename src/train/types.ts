/**
 * Contracts between the training pieces: the train step (forward + loss + backward on ONNX Runtime)
 * turns a batch (`data/train-batch.ts`) into losses and gradients, the optimizer and the trainer loop
 * consume them.
 */

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
