/**
 * `libreyolo data synth --out <dir> ...`: writes a synthetic shapes dataset (no download needed).
 * `libreyolo data check <data>`: resolves a dataset (downloading a bundled one if needed), pairs
 * images with labels, parses every label and prints counts per split.
 */
import { Command, Option } from 'commander';
import { loadDatasetConfig, ensureDataset, loadSplit, type SplitName } from '../../data/dataset.ts';
import { generateSynthDataset, SHAPE_CLASSES } from '../../data/synth.ts';
import { LibreYOLOError } from '../../errors.ts';
import { checkRange, parseInteger, parseNumber } from '../values.ts';

interface SynthFlags {
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

function synthCommand(): Command {
  return new Command('synth')
    .description('Write a synthetic YOLO dataset of coloured shapes with exact boxes (reproducible by seed).')
    .requiredOption('--out <dir>', 'output folder (gets images/, labels/ and data.yaml)')
    .option('--seed <n>', 'random seed', parseInteger('seed'), 0)
    .option('--train <n>', 'train images', parseInteger('train'), 64)
    .option('--val <n>', 'val images', parseInteger('val'), 16)
    .option('--imgsz <n>', 'long side of each image in pixels', parseInteger('imgsz'), 320)
    .option('--classes <list>', `shape classes, comma-separated, or a count (default all: ${SHAPE_CLASSES.join(',')})`)
    .option('--min-objects <n>', 'fewest objects per image', parseInteger('min_objects'), 1)
    .option('--max-objects <n>', 'most objects per image', parseInteger('max_objects'), 6)
    .option('--size-range <min,max>', 'object size as fractions of the image\'s short side (default 0.08,0.4)')
    .option('--small', 'also draw small objects (6-24 px), e.g. with a large --imgsz', false)
    .option('--square', 'square images (default: varied aspect ratio)')
    .addOption(new Option('--format <fmt>', 'image format').choices(['png', 'jpg']).default('png'))
    .option('--overwrite', 'replace existing images and labels in --out', false)
    .addOption(new Option('--task <task>', 'detect (box rows) or segment (polygon rows of each outline; shapes never overlap)').choices(['detect', 'segment']).default('detect'))
    .addOption(new Option('--json', 'print one JSON object').default(false))
    .action(async (flags: SynthFlags) => {
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
    });
}

function checkCommand(): Command {
  return new Command('check')
    .description('Resolve a dataset (YAML path or bundled name), pair images with labels and parse every label.')
    .argument('<data>', 'dataset YAML or bundled name (coco8, coco128)')
    .option('--no-download', 'do not download a missing bundled dataset')
    .addOption(new Option('--json', 'print one JSON object').default(false))
    .action(async (data: string, flags: { download: boolean; json: boolean }) => {
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
    });
}

export function dataCommand(): Command {
  return new Command('data')
    .description('Dataset tools: synth (generate a synthetic dataset), check (validate a dataset).')
    .addCommand(synthCommand())
    .addCommand(checkCommand());
}
