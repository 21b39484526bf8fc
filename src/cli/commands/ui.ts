/**
 * `libreyolo ui`: a local page for drag-and-drop inference (src/ui). Bound to 127.0.0.1 unless
 * --host says otherwise; Ctrl+C stops it, removes its temporary uploads and exits 0.
 */
import { Command } from 'commander';
import { DEFAULT_MAX_PIXELS, DEFAULT_MAX_UPLOAD_BYTES } from '../../ui/limits.ts';
import { lazyAction } from '../lazy-action.ts';
import { parseInteger, parseNumber } from '../values.ts';

export function uiCommand(): Command {
  return new Command('ui')
    .description('Start a local web page for drag-and-drop inference (pick a model, drop images, see the boxes; results in runs/detect/predict[N]).')
    .option('--host <host>', 'interface to bind (other than loopback, anyone who can reach it can use it: there is no login)', '127.0.0.1')
    .option('--port <n>', 'first port tried; the next 19 are tried when it is taken (0: any free port)', parseInteger('port'), 8000)
    .option('--device <device>', 'cpu, 0 / cuda:0, webgpu, or auto (the CPU)', 'auto')
    .option('--no-browser', 'do not open the page in the default browser')
    .option('--max-upload-mb <n>', 'largest upload accepted, MB', parseNumber('max_upload_mb'), DEFAULT_MAX_UPLOAD_BYTES / 2 ** 20)
    .option('--max-megapixels <n>', 'largest decoded image accepted, megapixels', parseNumber('max_megapixels'), DEFAULT_MAX_PIXELS / 1e6)
    .option('--json', 'print the address as one JSON object', false)
    .option('--quiet', 'no log lines on stderr', false)
    .action(lazyAction(async () => (await import('../actions/ui.ts')).runUi));
}
