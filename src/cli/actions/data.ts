/** What `libreyolo data synth` and `data check` do once their flags are parsed (imported only when they run). */
import { loadDatasetConfig, ensureDataset, loadSplit, type SplitName } from '../../data/dataset.ts';
import { generateSynthDataset } from '../../data/synth.ts';
import { LibreYOLOError } from '../../errors.ts';
import { checkRange, parseNumber } from '../values.ts';

export interface SynthFlags {
  out: string;
  seed: number;
  train: number;
  val: number;
  imgsz: number;
  classes?: string;
  minObjects: number;
  maxObjects: number;
  sizeRange?: string;
  small: boolean;
  square?: boolean;
  format: 'png' | 'jpg';
  overwrite: boolean;
  task: 'detect' | 'segment';
  json: boolean;
}

export async function runSynth(flags: SynthFlags): Promise<void> {
  checkRange('train', flags.train, 0);
  checkRange('val', flags.val, 0);
  checkRange('imgsz', flags.imgsz, 32);
  let sizeRange: [number, number] | undefined;
  if (flags.sizeRange !== undefined) {
    const parts = flags.sizeRange.split(',').map((p) => p.trim());
    const nums = parts.map((p) => parseNumber('size_range')(p));
    if (nums.length !== 2) throw new LibreYOLOError('config_type_error', `size_range must be two numbers min,max, got '${flags.sizeRange}'`);
    sizeRange = [nums[0]!, nums[1]!];
  }
  const r = await generateSynthDataset({
    out: flags.out, seed: flags.seed, train: flags.train, val: flags.val, imgsz: flags.imgsz,
    ...(flags.classes !== undefined ? { classes: flags.classes.split(',').map((s) => s.trim()).filter(Boolean) } : {}),
    minObjects: flags.minObjects, maxObjects: flags.maxObjects, ...(sizeRange ? { sizeRange } : {}), small: flags.small, square: flags.square === true,
    format: flags.format, overwrite: flags.overwrite, task: flags.task,
  });
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ schema_version: 1, data: r.yaml, root: r.root, names: r.names, train: r.train, val: r.val, objects: r.objects })}\n`);
    return;
  }
  process.stdout.write(`Wrote ${r.train} train + ${r.val} val images (${r.objects} objects, classes ${r.names.join(', ')}) to ${r.root} in ${r.seconds.toFixed(1)}s\n`);
  process.stdout.write(`Dataset YAML: ${r.yaml}\n`);
}

export async function runCheck(data: string, flags: { download: boolean; json: boolean }): Promise<void> {
  const cfg = await loadDatasetConfig(data);
  await ensureDataset(cfg, { allowDownload: flags.download });
  const splits: Record<string, { images: number; instances: number; background: number }> = {};
  for (const s of ['train', 'val', 'test'] as SplitName[]) {
    if (!cfg.splits[s]) continue;
    const sp = await loadSplit(cfg, s);
    splits[s] = { images: sp.images.length, instances: sp.instances, background: sp.labels.filter((l) => l.n === 0).length };
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ schema_version: 1, data: cfg.yamlFile ?? cfg.name, root: cfg.root, nc: cfg.nc, names: cfg.names, splits })}\n`);
    return;
  }
  process.stdout.write(`Dataset ${cfg.name}: root ${cfg.root}, nc ${cfg.nc}\n`);
  for (const [s, v] of Object.entries(splits)) {
    process.stdout.write(`  ${s}: ${v.images} images, ${v.instances} objects, ${v.background} without objects\n`);
  }
}
