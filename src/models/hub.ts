/**
 * Model-name resolution and weight download, as the original does it: the "cache" is simply
 * `./weights/<name>` under the working directory, and official weights come from the LibreYOLO
 * organisation on Hugging Face (or the mirror named by HF_ENDPOINT).
 */

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import cliProgress from 'cli-progress';
import { bundledModelPath, DEFAULT_MODEL } from '../assets.ts';
import { LibreYOLOError } from '../errors.ts';
import { describeBytes, describeLimit, limit, LIMITS } from '../util/limits.ts';
import { familyTasks, getFamily, listFamilies } from './index.ts';
import { TASK_SUFFIXES } from './tasks.ts';
import { editDistance } from '../util/text.ts';
import { DEFAULT_ENDPOINT, knownWeightNames, parseWeightName, taskSuffixes, weightsUrl } from './hub-names.ts';

export { knownWeightNames, parseWeightName, weightsUrl, type WeightName } from './hub-names.ts';

export interface ResolveWeightsOptions {
  /** Download official weights that are missing (default true). */
  allowDownload?: boolean;
  /** Called as bytes arrive; `total` is undefined when the server sends no length. */
  onProgress?: (received: number, total: number | undefined) => void;
  /** Directory that relative paths and `weights/` are resolved against (default process.cwd()). */
  cwd?: string;
  /** Environment to read HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_OFFLINE from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Overrides HF_ENDPOINT. */
  endpoint?: string;
  /** Print progress on stderr (default true): a bar on a TTY, otherwise a line at every 25 %. */
  progress?: boolean;
}

/** `LibreYOLO9t|s|m|c[-pose|-seg].pt, LibreYOLOXn|...pt` for messages. */
function namePatterns(): string {
  return listFamilies().map((f) => {
    const suffixes = taskSuffixes(f).filter((t) => t !== '');
    return `${f.filenamePrefix}${f.sizes.join('|')}${suffixes.length ? `[${suffixes.join('|')}]` : ''}.pt`;
  }).join(', ');
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

function isBareName(p: string): boolean {
  return !p.includes('/') && !p.includes('\\') && !p.startsWith('./') && !p.startsWith('../');
}

/**
 * Returns a local path for `nameOrPath`: an existing path as is; a bare file name from `weights/`
 * or the working directory; otherwise official weights downloaded to `weights/<name>` (or to the
 * literal path given). Accepts `LibreYOLO9t.pt`, `LibreYOLO9t` and the repo id `LibreYOLO/LibreYOLO9t`.
 */
export async function resolveWeights(nameOrPath: string, options: ResolveWeightsOptions = {}): Promise<string> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  let name = nameOrPath.trim().replace(/^hf:\/\//, '');
  let target: string | undefined;
  if (!isBareName(name)) {
    const direct = resolve(cwd, name);
    if (await exists(direct)) return direct; // also lets a local folder shadow a repo id
    const repoId = /^libreyolo\/([^/\\.]+)$/i.exec(name);
    if (repoId) name = `${repoId[1]}.pt`; // the repo LibreYOLO/<stem> holds <stem>.pt
    else target = direct; // other paths are their own download target
  }
  if (target === undefined) {
    // The original's order for bare names: weights/<name>, then ./<name>, else download to weights/<name>.
    const names = extname(name) === '' ? [name, `${name}.pt`] : [name];
    for (const n of names) {
      for (const candidate of [join(cwd, 'weights', n), join(cwd, n)]) if (await exists(candidate)) return candidate;
    }
    const bundled = bundledModelPath(name); // the model shipped in the package, never downloaded
    if (bundled) return bundled;
    target = join(cwd, 'weights', names[names.length - 1]!);
  }

  const parsed = parseWeightName(basename(target));
  if (!parsed) throw unknownName(nameOrPath, basename(target));
  if (parsed.taskSuffix !== '' && !familyTasks(getFamily(parsed.family)).includes(TASK_SUFFIXES[parsed.taskSuffix] ?? '')) {
    // Loading would refuse it (a task the family does not run): say so before a download of the whole file.
    const detect = `${parsed.stem.slice(0, -parsed.taskSuffix.length)}.pt`;
    throw new LibreYOLOError('model_task_unsupported',
      `Task '${parsed.taskSuffix.slice(1)}' is not supported yet: this package runs detection and instance segmentation (segment) models only, so ${basename(target)} is not downloaded. For detection use ${detect}.`,
      { suggestion: `For detection use ${detect}.` });
  }
  const url = weightsUrl(parsed.stem, options.endpoint || env.HF_ENDPOINT || DEFAULT_ENDPOINT);
  const howTo = `Download it elsewhere and place it at ${target}, or pass a local path to the weights.`;
  if (options.allowDownload === false) {
    throw new LibreYOLOError('model_not_found', `Model weights not found: ${target}. Downloading is disabled, so ${url} was not fetched. ${BUNDLED_ALTERNATIVE} ${howTo}`, { suggestion: howTo });
  }
  if (/^(1|true|yes|on)$/i.test(env.HF_HUB_OFFLINE ?? '')) {
    throw new LibreYOLOError('model_not_found',
      `Model weights not found: ${target}. HF_HUB_OFFLINE=${env.HF_HUB_OFFLINE} forbids downloading them from ${url}. ${BUNDLED_ALTERNATIVE} ${howTo}`, { suggestion: howTo });
  }
  await downloadFile(url, target, { env, onProgress: options.onProgress, progress: options.progress ?? true });
  return target;
}

/** Named in every error about hub weights that could not be fetched: the model that needs no download. */
const BUNDLED_ALTERNATIVE = `The bundled ${DEFAULT_MODEL} (a small detector trained on synthetic shapes, not COCO) works offline: `
  + `it is the default of predict, export, quantize, val and train, and profile takes it as --weights ${DEFAULT_MODEL.replace(/\.pt$/, '')}.`;

function unknownName(given: string, file: string): LibreYOLOError {
  const guess = suggestName(file);
  const advice = guess ? `Did you mean '${guess}'?` : 'Pass the path of an existing weights file, or an official name such as LibreYOLO9t.pt.';
  return new LibreYOLOError('model_not_found',
    `Model weights file not found: ${given}. It is not a local file, and '${file}' is not an official weight name ` +
      `(${namePatterns()}), so it cannot be downloaded. ${advice}`,
    { suggestion: advice });
}

/** Closest official name, if the given one looks like a typo of it. */
export function suggestName(file: string): string | undefined {
  const lower = file.toLowerCase();
  let best: string | undefined;
  let bestDist = Infinity;
  for (const known of knownWeightNames()) {
    const k = known.toLowerCase();
    const d = k.endsWith(lower) || k.replace(/\.pt$/, '').endsWith(lower) ? 0 : editDistance(lower, k);
    if (d < bestDist) [best, bestDist] = [known, d];
  }
  return bestDist <= 3 ? best : undefined;
}

// ---------------------------------------------------------------------------------------------
// Download

export interface DownloadOptions {
  env?: NodeJS.ProcessEnv;
  onProgress?: (received: number, total: number | undefined) => void;
  progress?: boolean;
}

/** Token for huggingface.co hosts only, so it never leaks to mirrors or other servers. */
function hfToken(url: string, env: NodeJS.ProcessEnv): string | undefined {
  const host = new URL(url).hostname;
  if (host !== 'huggingface.co' && !host.endsWith('.huggingface.co')) return undefined;
  if (env.HF_TOKEN) return env.HF_TOKEN;
  try {
    const file = join(env.HF_HOME ?? join(homedir(), '.cache', 'huggingface'), 'token');
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** What to do when the file cannot be fetched; the message ends with it and the suggestion is it alone. */
function supplyAdvice(target: string): string {
  return `To supply the file yourself, download it elsewhere and place it at ${target}, or pass a local path to the weights; ` +
    'to use a mirror, set HF_ENDPOINT to its base URL.';
}

function downloadFailed(url: string, target: string, reason: string, cause?: unknown): LibreYOLOError {
  const advice = supplyAdvice(target);
  return new LibreYOLOError('download_failed', `Failed to download ${url} to ${target}: ${reason}. ${BUNDLED_ALTERNATIVE} ${advice}`, { cause, suggestion: advice });
}

function fetchErrorReason(e: unknown): string {
  if (e instanceof DownloadLimit) return e.message;
  const err = e as Error & { cause?: { code?: string; message?: string } };
  const detail = err.cause?.code ?? err.cause?.message;
  return detail ? `${err.message} (${detail})` : String(err.message ?? e);
}

const PART_FILE = /\.part-[0-9a-f]{12}$/;

/**
 * Removes part files in `dir` that no download is writing to any more (a killed process cannot clean
 * up after itself). A live download writes at least once per idle timeout or aborts, so a part file
 * untouched for twice that long is stale.
 */
export async function removeStaleParts(dir: string, idleMs: number, now = Date.now()): Promise<string[]> {
  let names: string[];
  try { names = await readdir(dir); } catch { return []; }
  const removed: string[] = [];
  for (const name of names.filter((n) => PART_FILE.test(n))) {
    const path = join(dir, name);
    try {
      if (now - (await stat(path)).mtimeMs > 2 * idleMs) {
        await rm(path, { force: true });
        removed.push(path);
      }
    } catch { /* gone meanwhile */ }
  }
  return removed;
}

/** Why a download was stopped by one of its limits (a timer, the size cap): the message says it all. */
class DownloadLimit extends Error {}

/**
 * Streams `url` into `<target>.part-<random>`, then renames it into place; removes the part file on
 * failure, and stale ones left by killed processes before it starts. The `downloadConnectTimeoutMs`
 * limit bounds the wait for the response headers and `downloadIdleTimeoutMs` the silence between two
 * body chunks, so a server that accepts and never answers, or stalls mid-body, fails with a message.
 */
export async function downloadFile(url: string, target: string, options: DownloadOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  const headers: Record<string, string> = {};
  const token = hfToken(url, env);
  if (token) headers.Authorization = `Bearer ${token}`;
  const connectMs = limit('downloadConnectTimeoutMs', env);
  const idleMs = limit('downloadIdleTimeoutMs', env);
  await removeStaleParts(dirname(target), idleMs);

  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const arm = (ms: number, why: () => string, name: 'downloadConnectTimeoutMs' | 'downloadIdleTimeoutMs'): void => {
    clearTimeout(timer);
    timer = setTimeout(() => abort.abort(new DownloadLimit(`${why()} (set ${LIMITS[name].env} to wait longer)`)), ms);
  };
  const secs = (ms: number): string => `${ms / 1000} s`;

  let res: Response;
  try {
    arm(connectMs, () => `no response within ${secs(connectMs)}`, 'downloadConnectTimeoutMs');
    res = await fetch(url, { headers, redirect: 'follow', signal: abort.signal });
  } catch (e) {
    clearTimeout(timer);
    throw downloadFailed(url, target, fetchErrorReason(e), e);
  }
  if (!res.ok || !res.body) {
    clearTimeout(timer);
    await res.body?.cancel().catch(() => undefined);
    throw downloadFailed(url, target, `HTTP ${res.status} ${res.statusText}`.trim());
  }
  const lengthHeader = Number(res.headers.get('content-length'));
  const total = Number.isFinite(lengthHeader) && lengthHeader > 0 ? lengthHeader : undefined;
  const maxBytes = limit('downloadBytes', env);
  const overCap = (what: string): string => `${what}, over the ${describeLimit('downloadBytes', maxBytes)} limit (set ${LIMITS.downloadBytes.env} to allow more)`;
  if (total !== undefined && total > maxBytes) {
    clearTimeout(timer);
    await res.body.cancel().catch(() => undefined);
    throw downloadFailed(url, target, overCap(`the server declares ${describeBytes(total)}`));
  }

  const part = `${target}.part-${randomBytes(6).toString('hex')}`;
  let file: FileHandle;
  try {
    await mkdir(dirname(target), { recursive: true });
    file = await open(part, 'w');
  } catch (e) {
    clearTimeout(timer);
    await res.body.cancel().catch(() => undefined);
    throw new LibreYOLOError('io_error', `Cannot write ${part} while downloading ${url}: ${(e as Error).message}`, { cause: e });
  }
  const progress = progressReporter(url, total, options.progress ?? true);
  let received = 0;
  try {
    const reader = res.body.getReader();
    for (;;) {
      arm(idleMs, () => `the server sent nothing for ${secs(idleMs)} after ${mb(received)}${total === undefined ? '' : ` of ${mb(total)}`} MiB`, 'downloadIdleTimeoutMs');
      const { done, value } = await reader.read();
      if (done) break;
      received += value.length;
      if (received > maxBytes) throw new DownloadLimit(overCap(`the server sent more than ${describeBytes(maxBytes)}`));
      await file.write(value);
      progress.update(received);
      options.onProgress?.(received, total);
    }
    clearTimeout(timer);
    if (total !== undefined && received !== total) throw new Error(`connection closed after ${received} of ${total} bytes`);
    await file.close();
    await rename(part, target);
  } catch (e) {
    clearTimeout(timer);
    await file.close().catch(() => undefined);
    await rm(part, { force: true });
    throw downloadFailed(url, target, fetchErrorReason(e), e);
  } finally {
    progress.done(received);
  }
}

interface Progress {
  update(received: number): void;
  done(received: number): void;
}

const mb = (n: number) => (n / 2 ** 20).toFixed(1);

/** A bar on an interactive stderr; otherwise a line per 25 % so logs stay short. */
function progressReporter(url: string, total: number | undefined, show: boolean): Progress {
  if (!show) return { update() {}, done() {} };
  if (process.stderr.isTTY && total !== undefined) {
    const bar = new cliProgress.SingleBar({
      format: `Downloading ${basename(new URL(url).pathname)} [{bar}] {percentage}% | {value}/{total} MiB | ETA {eta}s`,
      stream: process.stderr,
      hideCursor: true,
    }, cliProgress.Presets.shades_classic);
    bar.start(Number(mb(total)), 0);
    return {
      update: (r) => bar.update(Number(mb(r))),
      done: () => bar.stop(),
    };
  }
  let nextQuarter = 1;
  process.stderr.write(`Downloading ${url}${total === undefined ? '' : ` (${mb(total)} MiB)`}\n`);
  return {
    update(r) {
      if (total === undefined) return;
      while (nextQuarter <= 4 && r >= (total * nextQuarter) / 4) {
        process.stderr.write(`  ${nextQuarter * 25}% (${mb(r)}/${mb(total)} MiB)\n`);
        nextQuarter++;
      }
    },
    done(r) {
      if (total === undefined) process.stderr.write(`  done (${mb(r)} MiB)\n`);
    },
  };
}
