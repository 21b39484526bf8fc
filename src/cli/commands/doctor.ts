/**
 * `libreyolo doctor <data.yaml>`: the dataset health check (src/doctor) before a long training run.
 * Prints the report (or one JSON line) on stdout and exits 0 (no errors), 1 (errors, or warnings with
 * --strict), 2 (usage) or 3 (dataset not found, unreadable or not a detection dataset).
 */
import { Command, Option } from 'commander';
import { lazyAction } from '../lazy-action.ts';
import { parseInteger } from '../values.ts';

export function doctorCommand(): Command {
  const cmd = new Command('doctor')
    .description('Check a dataset for problems before training (exit 1 when errors are found).')
    .argument('[data]', 'dataset YAML (YOLO detection format) or bundled name, e.g. coco8')
    .option('--data <yaml>', 'dataset YAML (the positional form\'s alternative)')
    .option('--imgsz <n>', 'training image size for the pixel-size checks (tiny objects)', parseInteger('imgsz'), 640)
    .option('--fast', 'skip image decoding (no corruption, duplicate or leakage checks)', false)
    .option('--skip <ids>', 'comma-separated check ids or families to skip (e.g. images,labels.tiny_object)', '')
    .option('--only <ids>', 'comma-separated check ids or families to run exclusively', '')
    .option('--strict', 'warnings also fail the exit code (CI gates)', false)
    .option('--download', 'download a missing dataset from the YAML\'s URL (never runs scripts)', false)
    .addOption(new Option('--json', 'print one JSON object on stdout').default(false))
    .option('--quiet', 'no progress on stderr', false)
    .option('--help-json', 'print this command\'s parameters as JSON', false);
  return cmd.action(lazyAction(async () => (await import('../actions/doctor.ts')).runDoctor));
}
