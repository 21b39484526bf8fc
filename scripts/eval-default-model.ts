/**
 * Measures a shapes detector on the full held-out val split of the default model's dataset, with
 * the trainer's validation settings (conf 0.001, NMS IoU 0.65, max_det 300, the model's imgsz).
 * The val split is rebuilt bit for bit when missing: `--train 0` draws the same val images.
 *
 *   node --import tsx scripts/eval-default-model.ts [weights (default: the bundled model)] [data.yaml]
 */
import { existsSync } from 'node:fs';
import { LibreYOLO } from '../src/load.ts';
import { generateSynthDataset } from '../src/data/synth.ts';
import { formatMetrics, validate } from '../src/val/validate.ts';

const weights = process.argv[2] || undefined; // '' or absent: the bundled model
let data = process.argv[3];
if (!data) {
  data = '.tmp/shapes6-val/data.yaml';
  if (!existsSync(data)) {
    await generateSynthDataset({
      out: '.tmp/shapes6-val', seed: 6, train: 0, val: 400, imgsz: 160, classes: ['circle', 'square', 'triangle', 'star', 'ellipse', 'rectangle'],
      minObjects: 2, maxObjects: 7, sizeRange: [0.15, 0.45],
    });
  }
}
const model = await LibreYOLO(weights);
try {
  const r = await validate(model, data, { conf: 0.001, iou: 0.65, max_det: 300, batch: 16 });
  console.log(`${model.weightsPath} on ${data}`);
  console.log(formatMetrics(r));
  for (const c of r.perClass) console.log(`  ${c.name.padEnd(10)} instances ${String(c.instances).padStart(4)}  AP50 ${c.ap50.toFixed(4)}  AP50-95 ${c.ap.toFixed(4)}`);
  console.log(JSON.stringify(r.metrics));
} finally {
  await model.close();
}
