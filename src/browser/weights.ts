/**
 * Weights in the browser: bytes from a URL, an ArrayBuffer / typed array, a File or Blob, or a
 * published name (`LibreYOLO9t.pt`, resolved to the same Hugging Face URL as in Node, with an
 * `endpoint` override in the role of HF_ENDPOINT), optionally kept in the Cache API.
 */
import { LibreYOLOError } from '../errors.ts';
import { DEFAULT_ENDPOINT, parseWeightName, weightsUrl } from '../models/hub-names.ts';

export type WeightsSource = string | URL | ArrayBuffer | ArrayBufferView | Blob;

export interface WeightsOptions {
  /** Hub endpoint for published names (the role of HF_ENDPOINT in Node; default https://huggingface.co). */
  endpoint?: string;
  /** Cache API cache name to read downloaded weights from and store them in; off by default. */
  cache?: string;
}

export interface WeightsBytes {
  bytes: Uint8Array;
  /** A name for messages and extension sniffing (URL path, file name, or `weights`). */
  name: string;
}

/** A published name (`LibreYOLO9t.pt`, `LibreYOLO9t`, `LibreYOLO/LibreYOLO9t`) as its hub URL; anything else as a URL relative to the page. */
export function weightsLocation(source: string, options: WeightsOptions = {}): string {
  const bare = source.trim().replace(/^hf:\/\//, '');
  const repo = /^libreyolo\/([^/\\.]+)$/i.exec(bare);
  const file = repo ? `${repo[1]}.pt` : !bare.includes('/') && !bare.includes('.') ? `${bare}.pt` : bare;
  const named = !file.includes('/') ? parseWeightName(file) : null;
  return named ? weightsUrl(named.stem, options.endpoint || DEFAULT_ENDPOINT) : new URL(bare, globalThis.location?.href).href;
}

async function download(url: string, options: WeightsOptions): Promise<Uint8Array> {
  const cache = options.cache ? await caches.open(options.cache) : null;
  const cached = await cache?.match(url);
  let res: Response;
  try {
    res = cached ?? await fetch(url);
  } catch (cause) {
    throw new LibreYOLOError('download_failed', `Cannot download weights from ${url}: ${(cause as Error).message}`, { cause });
  }
  if (!res.ok) throw new LibreYOLOError('model_not_found', `Cannot download weights from ${url}: HTTP ${res.status} ${res.statusText}`.trim());
  if (cache && !cached) await cache.put(url, res.clone());
  return new Uint8Array(await res.arrayBuffer());
}

export async function readWeights(source: WeightsSource, options: WeightsOptions = {}): Promise<WeightsBytes> {
  if (typeof source === 'string' || source instanceof URL) {
    const url = source instanceof URL ? source.href : weightsLocation(source, options);
    return { bytes: await download(url, options), name: new URL(url).pathname.split('/').pop() || url };
  }
  if (source instanceof Blob) return { bytes: new Uint8Array(await source.arrayBuffer()), name: (source as File).name ?? 'weights' };
  if (source instanceof ArrayBuffer) return { bytes: new Uint8Array(source), name: 'weights' };
  if (ArrayBuffer.isView(source)) return { bytes: new Uint8Array(source.buffer, source.byteOffset, source.byteLength), name: 'weights' };
  throw new LibreYOLOError('config_type_error', 'weights must be a URL or published name, an ArrayBuffer or typed array, or a File/Blob');
}
