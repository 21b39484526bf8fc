/**
 * Draws `Results` onto a canvas that holds the image: its masks first (the Node build's translucent
 * class-colour layers, composited by the same code as saved predictions), then one coloured box and
 * label per detection in the Node build's class colours.
 */
import { printable } from '../util/text.ts';
import { classColour, textColour } from '../predict/colours.ts';
import { drawMasks } from '../predict/draw-masks.ts';
import type { Results } from '../predict/results.ts';
import { rgbFromRgba } from './images.ts';

type Context2D = CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D;

/** Composites the masks over what the canvas shows (they are at the original image size, as the canvas must be). */
function paintMasks(ctx: Context2D, canvas: HTMLCanvasElement | OffscreenCanvas, results: Results): void {
  const masks = results.masks;
  if (!masks) return;
  const [h, w] = masks.orig_shape;
  if (canvas.width !== w || canvas.height !== h) {
    throw new Error(`drawResults: the canvas is ${canvas.width}x${canvas.height}, but the masks are ${w}x${h} (draw on a canvas the size of the image)`);
  }
  const rgba = ctx.getImageData(0, 0, w, h);
  const out = drawMasks(rgbFromRgba(rgba.data, w, h), masks, results.boxes.clsData).data;
  for (let i = 0, j = 0; j < out.length; i += 4, j += 3) {
    rgba.data[i] = out[j]!;
    rgba.data[i + 1] = out[j + 1]!;
    rgba.data[i + 2] = out[j + 2]!;
  }
  ctx.putImageData(rgba, 0, 0);
}

/** `masks: false` / `boxes: false` leave that layer out. */
export function drawResults(canvas: HTMLCanvasElement | OffscreenCanvas, results: Results, options: { lineWidth?: number; font?: string; masks?: boolean; boxes?: boolean } = {}): void {
  const ctx = canvas.getContext('2d') as Context2D | null;
  if (!ctx) throw new Error('drawResults: the canvas has no 2d context');
  if (options.masks !== false) paintMasks(ctx, canvas, results);
  if (options.boxes === false) return;
  const { xyxyData, confData, clsData } = results.boxes;
  ctx.lineWidth = options.lineWidth ?? Math.max(2, Math.round(Math.min(canvas.width, canvas.height) / 300));
  ctx.font = options.font ?? `${Math.max(12, ctx.lineWidth * 6)}px sans-serif`;
  for (let i = 0; i < confData.length; i++) {
    const [x1, y1, x2, y2] = [xyxyData[4 * i]!, xyxyData[4 * i + 1]!, xyxyData[4 * i + 2]!, xyxyData[4 * i + 3]!];
    const cls = clsData[i]!;
    const colour = classColour(cls);
    ctx.strokeStyle = colour;
    ctx.strokeRect(x1, y1, x2 - x1, y2 - y1);
    const label = `${printable(results.names[cls] ?? String(cls))} ${confData[i]!.toFixed(2)}`;
    const w = ctx.measureText(label).width + 6;
    const h = parseInt(ctx.font, 10) + 4;
    ctx.fillStyle = colour;
    ctx.fillRect(x1, Math.max(0, y1 - h), w, h);
    ctx.fillStyle = textColour(colour);
    ctx.fillText(label, x1 + 3, Math.max(h, y1) - 4);
  }
}
