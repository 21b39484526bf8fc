/**
 * Turns a training checkpoint into the bundled default detector: keeps only the weights the
 * checkpoint saves as `model` (the EMA weights) and the LibreYOLO metadata, dropping the optimizer,
 * raw weights and config, so the file stays ~8 MB.
 *
 *   node --import tsx scripts/package-default-model.ts [runs/train/shapes6/weights/best.pt] [assets/LibreYOLO9t-shapes.pt]
 */
import { loadCheckpointFile, saveCheckpointPt } from '../src/weights/checkpoint.ts';

const src = process.argv[2] ?? 'runs/train/shapes6/weights/best.pt';
const out = process.argv[3] ?? 'assets/LibreYOLO9t-shapes.pt';
const ck = await loadCheckpointFile(src);
const m = ck.metadata;
if (m.model_family !== 'yolo9' || m.size !== 't') throw new Error(`${src} is not a yolo9t checkpoint (${String(m.model_family)}-${String(m.size)})`);
await saveCheckpointPt(out, ck.stateDict, {
  model_family: 'yolo9',
  size: 't',
  task: 'detect',
  nc: m.nc,
  names: m.names,
  imgsz: m.imgsz,
  description: 'LibreYOLO9t-shapes: yolo9t trained from scratch by libreyolo (TypeScript) on its synthetic shapes dataset ' +
    '(libreyolo data synth --seed 6); detects circle, square, triangle, star, ellipse, rectangle. Not a COCO model. See docs/default-model.md.',
});
console.log(`wrote ${out} from ${src} (${ck.stateDict.size} tensors; names ${JSON.stringify(m.names)}, imgsz ${String(m.imgsz)})`);
