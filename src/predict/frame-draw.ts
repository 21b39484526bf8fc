/**
 * Annotated video frames: predict frames look like saved images (class colours, `name conf`);
 * tracked frames follow the original's tracking style, boxes coloured by track id with the label
 * `#<id>` in yellow and ` <conf>` in light grey, no class name. Masks of a segment model go under the
 * boxes, coloured by class in both styles (as the original). Frames without boxes are written as they came.
 */
import sharp from 'sharp';
import type { RgbImage } from '../data/rgb-image.ts';
import { drawMasks } from './draw-masks.ts';
import type { Results } from './results.ts';
import { detectionsSvg, xmlEscape } from './save.ts';

/** The original's colour for id k: hue k * 137.508 degrees (golden angle), saturation and value stepped by k. */
export function idColour(k: number): string {
  const h = ((k * 137.508) % 360) / 360;
  const s = 0.7 + (k % 3) * 0.1;
  const v = 0.8 + (k % 2) * 0.15;
  const i = Math.floor(h * 6);
  const f = h * 6 - i;
  const p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  const [r, g, b] = ([[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]] as const)[i % 6]!;
  return `#${[r, g, b].map((c) => Math.trunc(c * 255).toString(16).padStart(2, '0')).join('')}`;
}

const fmt = (v: number): string => (Math.round(v * 10) / 10).toString();

/** SVG overlay of tracked boxes with the original's geometry (line, font and padding grow with max(W, H) / 640). */
export function trackSvg(width: number, height: number, result: Results): string {
  const scale = Math.max(width, height) / 640;
  const lw = Math.max(2, Math.trunc(2 * scale));
  const font = Math.max(12, Math.trunc(12 * scale));
  const pad = Math.max(2, Math.trunc(2 * scale));
  const ids = result.boxes.idData ?? new Int32Array(result.length);
  const d = result.boxes.xyxyData;
  const parts: string[] = [];
  for (let i = 0; i < result.length; i++) {
    const colour = idColour(ids[i]!);
    const x1 = d[i * 4]!, y1 = d[i * 4 + 1]!, x2 = d[i * 4 + 2]!, y2 = d[i * 4 + 3]!;
    parts.push(`<rect x="${fmt(x1)}" y="${fmt(y1)}" width="${fmt(Math.max(x2 - x1, 0))}" height="${fmt(Math.max(y2 - y1, 0))}" fill="none" stroke="${colour}" stroke-width="${lw}"/>`);
    const idText = `#${ids[i]}`;
    const confText = ` ${result.boxes.confData[i]!.toFixed(2)}`;
    // DejaVu Sans averages ~0.62 em per character; the background only needs to be close.
    const textW = Math.ceil((idText.length + confText.length) * font * 0.62);
    const textH = font;
    const lx = Math.min(Math.max(x1, 0), Math.max(width - textW - 2 * pad, 0));
    const ly = y1 >= textH + 2 * pad ? y1 - textH - 2 * pad : y1;
    parts.push(
      `<rect x="${fmt(lx)}" y="${fmt(ly)}" width="${textW + 2 * pad}" height="${textH + 2 * pad}" fill="${colour}"/>`
      + `<text x="${fmt(lx + pad)}" y="${fmt(ly + pad + font * 0.8)}" font-size="${font}"><tspan fill="#FFFF00">${xmlEscape(idText)}</tspan><tspan fill="#DDDDDD">${xmlEscape(confText)}</tspan></text>`,
    );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><g font-family="DejaVu Sans, sans-serif">${parts.join('')}</g></svg>`;
}

/**
 * The frame's packed RGB with its boxes drawn (tracking style when the result carries ids) over its
 * masks, which are drawn as on saved images (coloured by class, also when the boxes are by id).
 */
export async function annotateFrame(image: RgbImage, result: Results): Promise<Uint8Array> {
  if (result.length === 0) return image.data;
  const base = result.masks && result.masks.length > 0 ? drawMasks(image, result.masks, result.boxes.clsData) : image;
  const svg = result.boxes.is_track ? trackSvg(image.width, image.height, result) : detectionsSvg(image.width, image.height, result);
  const { width, height } = image;
  return sharp(base.data, { raw: { width, height, channels: 3 } })
    .composite([{ input: Buffer.from(svg), top: 0, left: 0 }])
    .removeAlpha()
    .raw()
    .toBuffer();
}
