/** What `libreyolo ui` does once its flags are parsed (imported only when it runs). */
import { LibreYOLOError } from '../../errors.ts';
import { openInDesktop, startUiServer } from '../../ui/server.ts';
import { isLoopbackHost } from '../../ui/guard.ts';
import { parseDevice } from '../../runtime/device.ts';

export interface UiFlags {
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

export async function runUi(flags: UiFlags): Promise<void> {
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
}
