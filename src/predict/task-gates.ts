/**
 * Which tasks tiling and test-time augmentation can serve, checked before any image is loaded, with
 * the original's messages. Tiles can only be stitched back for boxes; every other payload is refused
 * (the original silently dropped keypoints and other payloads; its newer contract test rejects them).
 */
import { LibreYOLOError } from '../errors.ts';

const TILING_REFUSED: Record<string, string> = {
  depth: 'Tiled inference does not support depth maps yet. Use non-tiled inference for depth models.',
  edge: 'Tiled inference does not support edge, normal, or albedo maps yet. Use non-tiled inference for these dense models.',
  normal: 'Tiled inference does not support edge, normal, or albedo maps yet. Use non-tiled inference for these dense models.',
  albedo: 'Tiled inference does not support edge, normal, or albedo maps yet. Use non-tiled inference for these dense models.',
  segment: 'Tiled inference does not support segmentation masks. Use non-tiled inference for instance segmentation.',
  obb: 'Tiled inference does not support oriented boxes yet. Use non-tiled inference for OBB models.',
  point: 'Tiled inference does not support point results yet. Use non-tiled inference for point models.',
  pose: 'Tiled inference does not support pose keypoints yet. Use non-tiled inference for pose models.',
  gaze: 'Tiled inference does not support gaze predictions yet. Use non-tiled inference for gaze models.',
  panoptic: 'Tiled inference does not support panoptic maps yet. Use non-tiled inference for panoptic models.',
};

/** Tasks for which tiling means nothing: one plain pass instead. */
const TILING_SINGLE_PASS = new Set(['classify', 'semantic', 'embed']);

/** 'tile' for box tasks, 'single' where tiling falls back to one pass; throws for the rest. */
export function tilingMode(task: string): 'tile' | 'single' {
  if (TILING_SINGLE_PASS.has(task)) return 'single';
  const refused = TILING_REFUSED[task];
  if (refused) throw new LibreYOLOError('config_unsupported', refused);
  if (task !== 'detect') {
    throw new LibreYOLOError('config_unsupported', `Tiled inference does not support ${task} results yet. Use non-tiled inference for ${task} models.`);
  }
  return 'tile';
}

const TTA_PREFIX = 'Test-time augmentation does not support';

/** Refused in the call itself, whether or not the family enables TTA. */
const TTA_REFUSED_AT_CALL: Record<string, string> = {
  embed: `${TTA_PREFIX} embedding models. Use augment=false.`,
  point: `${TTA_PREFIX} point-task models yet. Use augment=false for point models.`,
  edge: `${TTA_PREFIX} edge detection yet. Use augment=false for edge models.`,
};

/** Refused when TTA actually runs. */
const TTA_REFUSED: Record<string, string> = {
  obb: `${TTA_PREFIX} oriented boxes yet. Use augment=false for OBB models.`,
  pose: `${TTA_PREFIX} pose keypoints yet. Use augment=false for pose models.`,
  depth: `${TTA_PREFIX} depth estimation yet. Use augment=false for depth models.`,
  normal: `${TTA_PREFIX} surface normals yet. Use augment=false for normal models.`,
  albedo: `${TTA_PREFIX} albedo maps yet.`,
  restore: `${TTA_PREFIX} restoration models yet. Use augment=false for restore models.`,
  ocr: `${TTA_PREFIX} OCR models yet. Use augment=false for OCR models.`,
};

export function checkAugmentAtCall(task: string): void {
  const m = TTA_REFUSED_AT_CALL[task];
  if (m) throw new LibreYOLOError('config_unsupported', m);
}

/** Throws for tasks whose payloads flip-TTA cannot merge (boxes and masks are implemented here). */
export function checkAugmentTask(task: string): void {
  const m = TTA_REFUSED[task] ?? TTA_REFUSED_AT_CALL[task];
  if (m) throw new LibreYOLOError('config_unsupported', m);
  // Masks are mirrored back and follow their boxes through the merge.
  if (task !== 'detect' && task !== 'segment') throw new LibreYOLOError('config_unsupported', `${TTA_PREFIX} ${task} models yet. Use augment=false for ${task} models.`);
}
