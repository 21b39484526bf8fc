/**
 * `libreyolo ui`'s HTTP server (node:http, no framework): the page, the model list, and one
 * inference at a time streamed back as NDJSON (`log` lines, then one `result` or `error` line).
 * Inference runs in the model's worker thread, so other routes are answered meanwhile. Uploads go
 * to a private temp folder (removed after each inference and on close); results to
 * runs/detect/predict[N] under the working directory, never overwriting.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, relative } from 'node:path';
import sharp, { type Metadata } from 'sharp';
import { LibreYOLOError } from '../errors.ts';
import { LibreYOLO } from '../load.ts';
import type { LibreYOLOModel } from '../model.ts';
import { checkPredictOptionText, PREDICT_OPTIONS } from '../predict/options.ts';
import { incrementDir } from '../predict/save.ts';
import { modelNames, resolveModelChoice, UI_DEFAULT_MODEL } from './catalog.ts';
import { refuseReason } from './guard.ts';
import { DEFAULT_MAX_PIXELS, DEFAULT_MAX_UPLOAD_BYTES } from './limits.ts';
import { UI_PAGE } from './page.ts';
import { decodeFilenameHeader, RunNames, sanitizeUploadName } from './uploads.ts';

export interface UiServerOptions {
  host?: string;
  /** First port tried; the next 19 are tried when it is taken. 0: any free port. */
  port?: number;
  device?: string;
  /** Where runs/ goes and where model paths must lie (default cwd). */
  cwd?: string;
  /** Largest upload body, bytes. */
  maxUploadBytes?: number;
  /** Largest decoded image, width x height. */
  maxPixels?: number;
  /** Server-side log lines (the CLI prints them on stderr). */
  log?: (line: string) => void;
}

export interface UiServer {
  url: string;
  port: number;
  host: string;
  /** The private folder uploads pass through. */
  uploadsDir: string;
  close(): Promise<void>;
}

const PORT_TRIES = 20;

type Send = (obj: Record<string, unknown>) => void;

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
  res.end(text);
}

const mb = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MB`;

/** `HH:MM:SS | LEVEL | message`, the level padded to 5 as the original's page shows it. */
function logLine(level: 'INFO' | 'WARN', message: string): string {
  return `${new Date().toTimeString().slice(0, 8)} | ${level.padEnd(5)} | ${message}`;
}

class TooLarge extends Error {}

/**
 * The request body, refused past `max` bytes. An oversized body is still read to its end (and
 * discarded, up to 4x the cap) so the client gets the 413 instead of a reset connection.
 */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) chunks.push(c);
      else if (size > 4 * max) req.destroy();
    });
    req.on('end', () => (size > max ? reject(new TooLarge(String(size))) : resolve(Buffer.concat(chunks))));
    req.on('error', reject);
    req.on('close', () => { if (!req.complete) reject(new TooLarge(String(size))); });
  });
}

/** Opens a folder in the desktop's file manager; true when the opener could be started. */
function openInDesktop(target: string): Promise<boolean> {
  const [cmd, args] = process.platform === 'darwin' ? ['open', [target]]
    : process.platform === 'win32' ? ['cmd', ['/c', 'start', '', target]] : ['xdg-open', [target]];
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { detached: true, stdio: 'ignore' });
    child.once('spawn', () => { child.unref(); resolve(true); });
    child.once('error', () => resolve(false));
  });
}

export { openInDesktop };

export async function startUiServer(options: UiServerOptions = {}): Promise<UiServer> {
  const host = options.host ?? '127.0.0.1';
  const cwd = options.cwd ?? process.cwd();
  const device = options.device ?? 'auto';
  const maxUpload = options.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES;
  const maxPixels = options.maxPixels ?? DEFAULT_MAX_PIXELS;
  const log = options.log ?? ((): void => undefined);
  const uploadsDir = await mkdtemp(join(tmpdir(), 'libreyolo-ui-'));
  const removeUploads = (): void => rmSync(uploadsDir, { recursive: true, force: true });
  process.once('exit', removeUploads);

  const models = new Map<string, Promise<LibreYOLOModel>>();
  const names = new RunNames();
  let runDir: string | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  /** Where the current request's warnings go (one inference at a time). */
  let warnSink: ((message: string) => void) | null = null;
  let port = 0;

  const newRunDir = async (): Promise<string> => {
    runDir = await incrementDir(join(cwd, 'runs', 'detect'), 'predict');
    names.reset();
    return runDir;
  };
  const shown = (p: string): string => relative(cwd, p) || '.';

  function loadModel(choice: string, send: Send): Promise<LibreYOLOModel> {
    let model = models.get(choice);
    if (!model) {
      const line = logLine('INFO', `Loading model ${choice}`);
      log(line);
      send({ type: 'log', line });
      model = LibreYOLO(choice, { device, cwd, progress: false, warn: (m) => warnSink?.(m) });
      model.catch(() => models.delete(choice));
      models.set(choice, model);
    }
    return model;
  }

  async function inferOne(body: Buffer, rawName: string, modelValue: string, conf: number, send: Send): Promise<void> {
    const name = sanitizeUploadName(rawName);
    let meta: Metadata;
    try {
      meta = await sharp(body, { limitInputPixels: false }).metadata();
    } catch (err) {
      throw new LibreYOLOError('source_not_found', `Cannot read '${name}' as an image (${(err as Error).message}). Upload a JPEG, PNG, WebP, GIF, TIFF or AVIF file.`);
    }
    const pixels = (meta.width ?? 0) * (meta.height ?? 0);
    if (pixels > maxPixels) {
      throw new LibreYOLOError('source_too_large',
        `'${name}' is ${meta.width}x${meta.height} = ${pixels.toLocaleString('en-US')} pixels, over this server's limit of ${maxPixels.toLocaleString('en-US')}. Downscale the image, or restart with --max-megapixels.`);
    }
    const choice = await resolveModelChoice(modelValue, cwd);
    const model = await loadModel(choice, send);
    const dir = runDir ?? await newRunDir();
    const saveName = names.claim(name);
    const upload = join(uploadsDir, saveName);
    await writeFile(upload, body, { mode: 0o600 });
    try {
      const r = await model.predictOne(upload, { conf, save: true, output_path: dir });
      const saved = r.saved_path!;
      const line = logLine('INFO', `Results saved to ${shown(saved)}`);
      log(line);
      send({ type: 'log', line });
      const ext = extname(saved).slice(1).toLowerCase();
      const mime = ext === '' || ext === 'jpg' ? 'jpeg' : ext;
      send({ type: 'result', name, count: r.boxes.length, rendered: `data:image/${mime};base64,${(await readFile(saved)).toString('base64')}`, dir: shown(dir), saved: shown(saved) });
    } finally {
      await rm(upload, { force: true });
    }
  }

  async function infer(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    let body: Buffer;
    try {
      body = await readBody(req, maxUpload);
    } catch (err) {
      if (!(err instanceof TooLarge)) throw err;
      json(res, 413, { error: `Upload too large: ${mb(Number(err.message))} over this server's limit of ${mb(maxUpload)}. Send a smaller image, or restart with --max-upload-mb.` });
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    const send: Send = (obj) => { res.write(`${JSON.stringify(obj)}\n`); };
    const modelValue = url.searchParams.get('model') || UI_DEFAULT_MODEL;
    const confText = url.searchParams.get('conf');
    const run = async (): Promise<void> => {
      if (body.length === 0) return send({ type: 'error', error: 'empty upload' });
      let conf: number;
      try {
        // The predict option's own rule and message, as for conf= on the command line.
        conf = confText === null || confText.trim() === '' ? PREDICT_OPTIONS.conf.default! : checkPredictOptionText('conf', confText) as number;
      } catch (err) {
        return send({ type: 'error', error: (err as Error).message });
      }
      warnSink = (m) => send({ type: 'log', line: logLine('WARN', m) });
      try {
        await inferOne(body, decodeFilenameHeader(req.headers['x-filename'] as string | undefined), modelValue, conf, send);
      } catch (err) {
        send({ type: 'error', error: err instanceof Error ? err.message : String(err) });
      } finally {
        warnSink = null;
      }
    };
    // One inference at a time, in arrival order; a failure never blocks the next.
    const turn = queue.then(run, run);
    queue = turn.catch(() => undefined);
    await turn;
    res.end();
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.setHeader('Server', `LibreYOLO-UI Node/${process.versions.node}`);
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'POST' && method !== 'HEAD') {
      const text = `<!DOCTYPE html><html><head><title>Error response</title></head><body><h1>Error response</h1><p>Error code: 501</p><p>Message: Unsupported method ('${method.replace(/[^A-Z]/gi, '')}').</p></body></html>\n`;
      res.writeHead(501, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    const refused = refuseReason(req.headers, port);
    if (refused) {
      req.resume();
      json(res, 403, { error: refused });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const key = `${method === 'HEAD' ? 'GET' : method} ${url.pathname}`;
    if (key === 'GET /' || key === 'GET /index.html') {
      res.writeHead(200, {
        'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(UI_PAGE),
        // Everything the page needs is inline; nothing may be fetched from elsewhere, and no other site may frame it.
        'Content-Security-Policy': "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer',
      });
      res.end(method === 'HEAD' ? undefined : UI_PAGE);
      return;
    }
    if (key === 'GET /api/models') {
      const list = await modelNames(cwd);
      json(res, 200, { models: list, default: list.includes(UI_DEFAULT_MODEL) ? UI_DEFAULT_MODEL : list[0] ?? '' });
      return;
    }
    if (method === 'POST') req.on('error', () => undefined);
    if (key === 'POST /api/run/new') {
      req.resume();
      json(res, 200, { dir: shown(await newRunDir()) });
      return;
    }
    if (key === 'POST /api/open-folder') {
      req.resume();
      json(res, 200, runDir ? { ok: await openInDesktop(runDir), dir: shown(runDir) } : { ok: false, dir: null });
      return;
    }
    if (key === 'POST /api/infer') return infer(req, res, url);
    req.resume();
    json(res, 404, { error: 'not found' });
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      if (res.headersSent) res.end();
      else json(res, 500, { error: err instanceof Error ? err.message : String(err) });
    });
  });
  port = await listenFrom(server, host, options.port ?? 8000);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`, port, host, uploadsDir,
    async close(): Promise<void> {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await Promise.all([...models.values()].map((m) => m.then((x) => x.close(), () => undefined)));
      removeUploads();
      process.removeListener('exit', removeUploads);
    },
  };
}

/** Binds `port`, or the next free one up to port+19 (any free port for 0). */
async function listenFrom(server: Server, host: string, first: number): Promise<number> {
  const last = first === 0 ? 0 : first + PORT_TRIES - 1;
  for (let p = first; p <= last; p++) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(p, host, () => { server.off('error', reject); resolve(); });
      });
      return (server.address() as AddressInfo).port;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') {
        throw new LibreYOLOError('io_error', `Failed to start UI server: ${(err as Error).message}`, { cause: err });
      }
    }
  }
  throw new LibreYOLOError('io_error', `No free port found in range ${first}-${last}.`, { suggestion: 'Pass a different --port.' });
}
