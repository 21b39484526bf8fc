/**
 * `libreyolo data synth --out <dir> ...`: writes a synthetic shapes dataset (no download needed).
 * `libreyolo data check <data>`: resolves a dataset (downloading a bundled one if needed), pairs
 * images with labels, parses every label and prints counts per split.
 */
import { Command, Option } from 'commander';
import { SHAPE_CLASSES } from '../../data/shape-classes.ts';
import { lazyAction } from '../lazy-action.ts';
import { parseInteger } from '../values.ts';

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
    .action(lazyAction(async () => (await import('../actions/data.ts')).runSynth));
}

function checkCommand(): Command {
  return new Command('check')
    .description('Resolve a dataset (YAML path or bundled name), pair images with labels and parse every label.')
    .argument('<data>', 'dataset YAML or bundled name (coco8, coco128)')
    .option('--no-download', 'do not download a missing bundled dataset')
    .addOption(new Option('--json', 'print one JSON object').default(false))
    .action(lazyAction(async () => (await import('../actions/data.ts')).runCheck));
}

export function dataCommand(): Command {
  return new Command('data')
    .description('Dataset tools: synth (generate a synthetic dataset), check (validate a dataset).')
    .addCommand(synthCommand())
    .addCommand(checkCommand());
}
