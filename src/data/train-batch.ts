/** What the data loader hands the train step: one batch in the original's layout. */
import type { HostTensor } from '../graph/tensor.ts';

/** One training batch in the original's layout. */
export interface TrainBatch {
  /** `[B, 3, H, W]` float32, top-left letterboxed: RGB 0..1 (pad 114/255) from the loader; the family's input layout at the step. */
  images: HostTensor;
  /** `[B, M, 5]` float32 rows `[cls, x1, y1, x2, y2]` normalised to 0..1; padding rows are `[-1, 0, 0, 0, 0]` (all-zero rows are padding too). */
  targets: HostTensor;
  /** Segment training: `[B, M, H / r, W / r]` float32 0/1 mask targets, slot k for target row k (r: the mask downsample ratio). */
  masks?: HostTensor;
  /** The host draws of this step (`HostAssigner.draws`); absent: the step draws them from its generator. */
  draws?: Readonly<Record<string, HostTensor>>;
}
