/** What `libreyolo train` does once its flags are parsed (imported only when it runs). */
import { loadForTraining } from '../../load.ts';
import { onDemandTrainProfiler } from '../../model.ts';
import { TRAIN_DEFAULTS } from '../../train/config.ts';
import { trainModel, type TrainOptions } from '../../train/trainer.ts';

export async function runTrain(flags: Record<string, unknown>): Promise<void> {
  const json = flags.json === true;
  const options: TrainOptions = {};
  for (const key of ['data', ...Object.keys(TRAIN_DEFAULTS)]) {
    // commander files `--no-aug-epochs <n>` under `augEpochs` (it strips a leading `no-`), which
    // holds `true` when the option is not given
    const negated = key.startsWith('no_');
    const camel = key.replace(/^no_/, '').replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    const v = flags[camel];
    if (v !== undefined && !(negated && v === true)) options[key] = v;
  }
  if (typeof flags.cfg === 'string') options.cfg = flags.cfg;
  const modelName = String(flags.model);
  const device = typeof options.device === 'string' && options.device !== '' ? options.device : 'cpu';
  const resumeLast = typeof options.resume === 'string' && options.resume !== 'true' && options.resume !== 'false' ? options.resume : null;
  const model = await loadForTraining(resumeLast ?? modelName, { device });
  try {
    const results = await trainModel(model, options, { profiler: onDemandTrainProfiler });
    if (json) {
      process.stdout.write(`${JSON.stringify({ schema_version: 1, ...results })}\n`);
      return;
    }
    process.stdout.write(`Results saved to ${results.save_dir}\n`);
    if (results.best_checkpoint) process.stdout.write(`best: ${results.best_checkpoint} (mAP50-95 ${results.best_mAP50_95.toFixed(4)}, mAP50 ${results.best_mAP50.toFixed(4)}, epoch ${results.best_epoch})\n`);
    if (results.last_checkpoint) process.stdout.write(`last: ${results.last_checkpoint}\n`);
  } finally {
    await model.close();
  }
}
