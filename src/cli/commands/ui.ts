/**
 * `libreyolo ui`: a local page for drag-and-drop inference (src/ui). Bound to 127.0.0.1 unless
 * --host says otherwise; Ctrl+C stops it, removes its temporary uploads and exits 0.
 */
import { Command } from 'commander';
import { LibreYOLOError } from '../../errors.ts';
import { DEFAULT_MAX_PIXELS, DEFAULT_MAX_UPLOAD_BYTES, openInDesktop, startUiServer } from '../../ui/server.ts';
import { isLoopbackHost } from '../../ui/guard.ts';
import { parseDevice } from '../../runtime/device.ts';
import { parseInteger, parseNumber } from '../values.ts';

interface UiFlags {
  host: string;
  port: number;
  device: string;
  browser: boolean;
  maxUploadMb: number;
  maxMegapixels: number;
  json: boolean;
  quiet: boolean;
}

function positive(name: string, v: number): number {
  if (!(v > 0)) throw new LibreYOLOError('config_range_error', `${name} must be > 0, got ${v}`);
  return v;
}

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
    .action(async (flags: UiFlags) => {
      if (flags.port < 0 || flags.port > 65535) throw new LibreYOLOError('config_range_error', `port must be in [0, 65535], got ${flags.port}`);
      parseDevice(flags.device); // a bad device fails now, not at the first inference
      const log = flags.quiet ? (): void => undefined : (line: string): void => { process.stderr.write(`${line}\n`); };
      const server = await startUiServer({
        host: flags.host, port: flags.port, device: flags.device, log,
        maxUploadBytes: Math.round(positive('max_upload_mb', flags.maxUploadMb) * 2 ** 20),
        maxPixels: Math.round(positive('max_megapixels', flags.maxMegapixels) * 1e6),
      });
      if (!isLoopbackHost(flags.host)) {
        process.stderr.write(`Warning: --host ${flags.host} is not a loopback address: anyone who can reach this machine on port ${server.port} can run models and write into ${process.cwd()}/runs (there is no login).\n`);
      }
      if (flags.json) process.stdout.write(`${JSON.stringify({ url: server.url, device: flags.device, uploads_dir: server.uploadsDir, schema_version: 1 })}\n`);
      else process.stdout.write(`LibreYOLO UI running at ${server.url}\nDrop images or a folder, pick a model, hit Run inference. Press Ctrl+C to stop.\n`);
      if (flags.browser) setTimeout(() => void openInDesktop(server.url), 700).unref();
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          if (!flags.quiet) process.stderr.write('Shutting down UI...\n');
          void server.close().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
