/**
 * Browser image sources as the core's RgbImage (packed RGB): HTMLImageElement, ImageBitmap,
 * ImageData, canvases, video frames (the current frame of an HTMLVideoElement or a VideoFrame),
 * Blob/File and URLs, decoded with createImageBitmap and read back through an OffscreenCanvas.
 */
import { LibreYOLOError } from '../errors.ts';
import type { RgbImage } from '../data/rgb-image.ts';
import type { SourceItem } from '../data/sources.ts';

export type BrowserImageSource =
  | HTMLImageElement | ImageBitmap | ImageData | HTMLCanvasElement | OffscreenCanvas | HTMLVideoElement | VideoFrame
  | Blob | string | URL | RgbImage;

/** Canvas RGBA pixels as packed RGB. */
export function rgbFromRgba(rgba: Uint8ClampedArray, width: number, height: number): RgbImage {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; j < data.length; i += 4, j += 3) {
    data[j] = rgba[i]!;
    data[j + 1] = rgba[i + 1]!;
    data[j + 2] = rgba[i + 2]!;
  }
  return { data, width, height };
}

function drawable(source: CanvasImageSource, width: number, height: number): RgbImage {
  if (!width || !height) throw new LibreYOLOError('data_invalid', 'the image has no pixels yet (an image still loading, or a video before its first frame)');
  const canvas = new OffscreenCanvas(width, height);
  const ctx = canvas.getContext('2d', { willReadFrequently: true })!;
  ctx.drawImage(source, 0, 0);
  return rgbFromRgba(ctx.getImageData(0, 0, width, height).data, width, height);
}

const isRgb = (s: unknown): s is RgbImage => typeof s === 'object' && s !== null && (s as RgbImage).data instanceof Uint8Array && typeof (s as RgbImage).width === 'number';

/** Decodes one source to packed RGB. */
export async function toRgbImage(source: BrowserImageSource): Promise<RgbImage> {
  if (typeof source === 'string' || source instanceof URL) {
    const url = new URL(source, globalThis.location?.href).href;
    const res = await fetch(url).catch((cause: Error) => {
      throw new LibreYOLOError('source_not_found', `Cannot fetch image ${url}: ${cause.message}`, { cause });
    });
    if (!res.ok) throw new LibreYOLOError('source_not_found', `Cannot fetch image ${url}: HTTP ${res.status}`);
    return toRgbImage(await res.blob());
  }
  if (source instanceof Blob) {
    const bitmap = await createImageBitmap(source).catch((cause: Error) => {
      throw new LibreYOLOError('data_invalid', `Cannot decode the image (${source.type || 'unknown type'}): ${cause.message}`, { cause });
    });
    try {
      return drawable(bitmap, bitmap.width, bitmap.height);
    } finally {
      bitmap.close();
    }
  }
  if (typeof ImageData !== 'undefined' && source instanceof ImageData) return rgbFromRgba(source.data, source.width, source.height);
  if (isRgb(source)) return source;
  if (typeof HTMLVideoElement !== 'undefined' && source instanceof HTMLVideoElement) return drawable(source, source.videoWidth, source.videoHeight);
  if (typeof HTMLImageElement !== 'undefined' && source instanceof HTMLImageElement) {
    if (!source.complete) await source.decode();
    return drawable(source, source.naturalWidth, source.naturalHeight);
  }
  if (typeof VideoFrame !== 'undefined' && source instanceof VideoFrame) return drawable(source, source.displayWidth, source.displayHeight);
  if ((typeof ImageBitmap !== 'undefined' && source instanceof ImageBitmap) || (typeof HTMLCanvasElement !== 'undefined' && source instanceof HTMLCanvasElement)
    || (typeof OffscreenCanvas !== 'undefined' && source instanceof OffscreenCanvas)) {
    return drawable(source, source.width, source.height);
  }
  throw new LibreYOLOError('config_type_error',
    'Unsupported image source: pass an HTMLImageElement, ImageBitmap, ImageData, canvas, HTMLVideoElement, VideoFrame, Blob/File, URL, or {data, width, height} RGB pixels.');
}

/** Sources as the predict runner's items (decoded when the runner asks, so decoding overlaps inference). */
export function sourceItems(sources: BrowserImageSource[]): SourceItem[] {
  return sources.map((source, k) => {
    const path = typeof source === 'string' ? source : source instanceof URL ? source.href : null;
    const label = path ?? (source instanceof File ? source.name : `image ${k}`);
    return { kind: path ? 'url' : 'pixels', path, label, stem: `image${k}`, saveStem: (i) => (i === null ? 'inference' : `image${i}`), load: () => toRgbImage(source) };
  });
}
