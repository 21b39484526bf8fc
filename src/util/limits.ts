/**
 * Size and time limits on everything the package reads from files, URLs and folders, so that a hostile
 * or broken input fails with a clear error instead of exhausting memory or hanging. Each limit has a
 * default, an environment variable (read when the limit is used), and a programmatic override
 * (`setLimits`), which wins. README "Limits" lists them.
 */
import { LibreYOLOError } from '../errors.ts';

interface LimitSpec {
  env: string;
  default: number;
  /** `ratio` values may be fractional (unpacked bytes per archive byte); the others are whole. */
  unit: 'bytes' | 'ms' | 'count' | 'ratio';
  /** what the limit bounds, for messages */
  what: string;
}

export const LIMITS = {
  /** An encoded image read from a file (before decoding). */
  imageFileBytes: { env: 'LIBREYOLO_MAX_IMAGE_BYTES', default: 128 * 2 ** 20, unit: 'bytes', what: 'image file size' },
  /** An image body fetched from an http(s) URL, counted after decompression. */
  urlBytes: { env: 'LIBREYOLO_MAX_URL_BYTES', default: 128 * 2 ** 20, unit: 'bytes', what: 'image download size' },
  /** Decoded pixels of one image (width x height), sharp's own default. */
  imagePixels: { env: 'LIBREYOLO_MAX_IMAGE_PIXELS', default: 0x3fff * 0x3fff, unit: 'count', what: 'image pixel count' },
  /** Longest wait for the next frame of a video or live stream before it counts as stalled. */
  streamIdleTimeoutMs: { env: 'LIBREYOLO_STREAM_IDLE_TIMEOUT_MS', default: 30_000, unit: 'ms', what: 'video frame timeout' },
  /** Whole time to fetch one image URL. */
  urlTimeoutMs: { env: 'LIBREYOLO_URL_TIMEOUT_MS', default: 30_000, unit: 'ms', what: 'image URL timeout' },
  /** Weight downloads: size of one file (official weights are under 250 MB), checked on the header and while it streams. */
  downloadBytes: { env: 'LIBREYOLO_MAX_DOWNLOAD_BYTES', default: 4 * 2 ** 30, unit: 'bytes', what: 'weight download size' },
  /** Weight downloads: time from the request until the response headers arrive. */
  downloadConnectTimeoutMs: { env: 'LIBREYOLO_DOWNLOAD_CONNECT_TIMEOUT_MS', default: 30_000, unit: 'ms', what: 'download connect timeout' },
  /** Weight downloads: longest silence between two chunks of the body. */
  downloadIdleTimeoutMs: { env: 'LIBREYOLO_DOWNLOAD_IDLE_TIMEOUT_MS', default: 60_000, unit: 'ms', what: 'download idle timeout' },
  /**
   * Largest network input side (imgsz, also as model files declare it: metadata imgsz, a static ONNX
   * input): memory grows with its square (about 0.6 GB over the baseline for yolo9t at 2560).
   */
  imgsz: { env: 'LIBREYOLO_MAX_IMGSZ', default: 4096, unit: 'count', what: 'imgsz' },
  /** Files collected from one source folder. */
  folderFiles: { env: 'LIBREYOLO_MAX_FOLDER_FILES', default: 1_000_000, unit: 'count', what: 'images in a folder' },
  /** Bytes one zip entry may unpack to (a .pt storage, a dataset file). */
  zipEntryBytes: { env: 'LIBREYOLO_MAX_ZIP_ENTRY_BYTES', default: 2 * 2 ** 30, unit: 'bytes', what: 'unpacked size of one zip entry' },
  /** Bytes all the entries read from one zip archive may add up to. */
  unzipBytes: { env: 'LIBREYOLO_MAX_UNZIP_BYTES', default: 32 * 2 ** 30, unit: 'bytes', what: 'unpacked size of one zip archive' },
  /** Unpacked bytes per archive byte, beyond a 64 MiB allowance: deflate bombs reach 1000:1, weights ~1.1:1. */
  unzipRatio: { env: 'LIBREYOLO_MAX_UNZIP_RATIO', default: 10, unit: 'ratio', what: 'unpacked bytes per zip archive byte' },
  /** A checkpoint's pickle (data.pkl): the object tree, whose tensors live outside it. */
  pickleBytes: { env: 'LIBREYOLO_MAX_PICKLE_BYTES', default: 256 * 2 ** 20, unit: 'bytes', what: 'checkpoint pickle size' },
  /** Objects (containers, strings, calls) a checkpoint pickle may create: real ones need about 20 per tensor. */
  pickleObjects: { env: 'LIBREYOLO_MAX_PICKLE_OBJECTS', default: 1_000_000, unit: 'count', what: 'objects a checkpoint pickle creates' },
  /** Tensor bytes a checkpoint may rebuild per byte of storage it holds, beyond a 64 MiB allowance. */
  tensorExpansion: { env: 'LIBREYOLO_MAX_TENSOR_EXPANSION', default: 2, unit: 'ratio', what: 'tensor bytes per checkpoint storage byte' },
  /** The folder of ORT-optimised training graphs (runtime/optimized-model-cache.ts). */
  ortCacheBytes: { env: 'LIBREYOLO_MAX_ORT_CACHE_BYTES', default: 2 * 2 ** 30, unit: 'bytes', what: 'optimised-graph cache size' },
  /** The folder of ORT's inferred shapes of training graphs (graph/autodiff/shapes.ts). */
  shapeCacheBytes: { env: 'LIBREYOLO_MAX_SHAPE_CACHE_BYTES', default: 256 * 2 ** 20, unit: 'bytes', what: 'shape-probe cache size' },
  /** Largest class count a model file may declare. */
  classes: { env: 'LIBREYOLO_MAX_CLASSES', default: 100_000, unit: 'count', what: 'class count' },
} as const satisfies Record<string, LimitSpec>;

export type LimitName = keyof typeof LIMITS;

const overrides = new Map<LimitName, number>();

const SUFFIX: Record<string, number> = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 };

/** `1048576`, `512M`, `2G`, `1.5g` (binary multiples) for byte limits; plain non-negative numbers otherwise. */
export function parseLimitValue(name: LimitName, text: string): number {
  const spec: LimitSpec = LIMITS[name];
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$/i.exec(text);
  const scaled = m && (spec.unit === 'bytes' || m[2] === '') ? Number(m[1]) * SUFFIX[m[2]!.toLowerCase()]! : NaN;
  const value = spec.unit === 'ratio' ? scaled : Math.floor(scaled);
  if (!Number.isFinite(value) || value <= 0) {
    const form = spec.unit === 'bytes' ? 'a positive byte count such as 268435456, 256M or 2G'
      : `a positive number (${spec.unit === 'ms' ? 'milliseconds' : spec.unit === 'ratio' ? 'a ratio, such as 10 or 2.5' : 'a count'})`;
    throw new LibreYOLOError('config_range_error', `${spec.env} must be ${form}, got '${text}'`);
  }
  return value;
}

/** The limit in force: `setLimits` override, else the environment variable, else the default. */
export function limit(name: LimitName, env: NodeJS.ProcessEnv = process.env): number {
  const o = overrides.get(name);
  if (o !== undefined) return o;
  const text = env[LIMITS[name].env];
  return text === undefined || text === '' ? LIMITS[name].default : parseLimitValue(name, text);
}

/** Raises or lowers limits for this process (`undefined` restores the environment/default value). */
export function setLimits(values: Partial<Record<LimitName, number | undefined>>): void {
  for (const [k, v] of Object.entries(values) as Array<[LimitName, number | undefined]>) {
    if (!(k in LIMITS)) throw new LibreYOLOError('config_unknown_key', `Unknown limit '${k}'. Known limits: ${Object.keys(LIMITS).join(', ')}`);
    if (v === undefined) { overrides.delete(k); continue; }
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new LibreYOLOError('config_range_error', `limit ${k} must be a positive number, got ${String(v)}`);
    overrides.set(k, v);
  }
}

/** Every limit and its value now. */
export function currentLimits(): Record<LimitName, number> {
  return Object.fromEntries((Object.keys(LIMITS) as LimitName[]).map((k) => [k, limit(k)])) as Record<LimitName, number>;
}

/** `128 MiB`, `30 s`, `1000000` for messages. */
export function describeLimit(name: LimitName, value = limit(name)): string {
  const spec: LimitSpec = LIMITS[name];
  if (spec.unit === 'ms') return `${value / 1000} s`;
  if (spec.unit === 'count' || spec.unit === 'ratio') return String(value);
  return describeBytes(value);
}

/** `3.2 GiB`, `512 KiB`, `17 bytes`. */
export function describeBytes(n: number): string {
  for (const [s, f] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const) if (n >= f) return `${+(n / f).toFixed(1)} ${s}`;
  return `${n} bytes`;
}

/** "set LIBREYOLO_X=... or setLimits({ name })": how to raise a limit, for the end of a message. */
export function raiseAdvice(name: LimitName): string {
  return `To allow more, set ${LIMITS[name].env} (or call setLimits({ ${name}: ... }) from the library).`;
}

/** Allowance below which the ratio limits (unzipRatio, tensorExpansion) do not apply: small files may be all zeros. */
export const RATIO_ALLOWANCE_BYTES = 64 * 2 ** 20;
