/** Draws `Results` onto a canvas: one coloured box and label per detection, in the Node build's class colours. */
import { classColour, textColour } from '../predict/colours.ts';
import type { Results } from '../predict/results.ts';

export function drawResults(canvas: HTMLCanvasElement | OffscreenCanvas, results: Results, options: { lineWidth?: number; font?: string } = {}): void {
  const ctx = canvas.getContext('2d') as CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D | null;
  if (!ctx) throw new Error('drawResults: the canvas has no 2d context');
  const { xyxyData, confData, clsData } = results.boxes;
  ctx.lineWidth = options.lineWidth ?? Math.max(2, Math.round(Math.min(canvas.width, canvas.height) / 300));
  ctx.font = options.font ?? `${Math.max(12, ctx.lineWidth * 6)}px sans-serif`;
  for (let i = 0; i < confData.length; i++) {
    const [x1, y1, x2, y2] = [xyxyData[4 * i]!, xyxyData[4 * i + 1]!, xyxyData[4 * i + 2]!, xyxyData[4 * i + 3]!];
    const cls = clsData[i]!;
    const colour = classColour(cls);
    ctx.strokeStyle = colour;
    ctx.strokeRect(x1, y1, x2 - x1, y2 - y1);
    const label = `${results.names[cls] ?? cls} ${confData[i]!.toFixed(2)}`;
    const w = ctx.measureText(label).width + 6;
    const h = parseInt(ctx.font, 10) + 4;
    ctx.fillStyle = colour;
    ctx.fillRect(x1, Math.max(0, y1 - h), w, h);
    ctx.fillStyle = textColour(colour);
    ctx.fillText(label, x1 + 3, Math.max(h, y1) - 4);
  }
}
