/**
 * The two demo scenes shipped in assets/ for the bundled shapes detector (docs/default-model.md):
 *
 * - `sampleScene()`: 640x360, eight large shapes (every class of the model at least once) laid
 *   out on a grid, so the README's first command has something to find (assets/sample.jpg).
 * - `tilingScene()`: 1600x1200 with 48 small shapes (24-34 px). A plain forward at the model's
 *   160 px input shrinks them to ~3 px; tiled inference cuts 160 px tiles in which they keep the
 *   size the model learned (assets/sample-large.jpg).
 *
 * Shapes are drawn with the synthetic dataset's geometry (`outline`), and every box is exact, so
 * tests can check detections against them. Both scenes are pure functions: no randomness at call time.
 */
import { mulberry32 } from './augment.ts';
import { outline, sceneSvg, type SynthObject, type SynthScene } from './synth.ts';

/** Class order of the bundled model (the first six synthetic shapes). */
export const DEMO_CLASSES: readonly string[] = ['circle', 'square', 'triangle', 'star', 'ellipse', 'rectangle'];

export interface PlacedShape {
  shape: string;
  cx: number;
  cy: number;
  /** Diameter of the unrotated outline, in pixels (the synthetic generator's "extent"). */
  extent: number;
  /** Rotation in degrees. */
  deg: number;
  /** Fill colour, `#rrggbb`. */
  fill: string;
  /** Ellipse / rectangle aspect parameter in [0, 1) (how the generator's random draw would set it). */
  aspect?: number;
}

const r3 = (v: number): number => Math.round(v * 1000) / 1000;

/** One shape as an SVG element and its exact axis-aligned box. */
export function drawShape(p: PlacedShape, classes: readonly string[] = DEMO_CLASSES): { svg: string; box: SynthObject } {
  const cls = classes.indexOf(p.shape);
  if (cls < 0) throw new RangeError(`shape '${p.shape}' is not one of ${classes.join(', ')}`);
  const geom = outline(p.shape, () => p.aspect ?? 0.5);
  const deg = p.shape === 'circle' ? 0 : p.deg;
  const t = (deg * Math.PI) / 180;
  const cos = Math.cos(t), sin = Math.sin(t);
  const radius = p.extent / 2;
  if ('ellipse' in geom) {
    const rx = r3(geom.ellipse[0] * radius), ry = r3(geom.ellipse[1] * radius);
    const hx = Math.sqrt(rx * rx * cos * cos + ry * ry * sin * sin);
    const hy = Math.sqrt(rx * rx * sin * sin + ry * ry * cos * cos);
    return {
      svg: `<ellipse cx="${p.cx}" cy="${p.cy}" rx="${rx}" ry="${ry}" transform="rotate(${deg} ${p.cx} ${p.cy})" fill="${p.fill}"/>`,
      box: { cls, x1: p.cx - hx, y1: p.cy - hy, x2: p.cx + hx, y2: p.cy + hy },
    };
  }
  const xs = geom.pts.map(([x, y]) => r3(p.cx + (x * cos - y * sin) * radius));
  const ys = geom.pts.map(([x, y]) => r3(p.cy + (x * sin + y * cos) * radius));
  return {
    svg: `<polygon points="${xs.map((x, i) => `${x},${ys[i]}`).join(' ')}" fill="${p.fill}"/>`,
    box: { cls, x1: Math.min(...xs), y1: Math.min(...ys), x2: Math.max(...xs), y2: Math.max(...ys) },
  };
}

function compose(width: number, height: number, background: string, shapes: readonly PlacedShape[]): SynthScene {
  const drawn = shapes.map((s) => drawShape(s));
  const elements = [background, ...drawn.map((d) => d.svg)];
  return { width, height, svg: sceneSvg(width, height, elements), objects: drawn.map((d) => d.box), parts: { background, shapes: drawn.map((d) => d.svg) } };
}

/** The README's sample: 640x360 (the default 640 input needs no resize), eight shapes of 115-145 px on a soft vertical gradient. */
export function sampleScene(): SynthScene {
  const background = '<defs><linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#d9e6f2"/>' +
    '<stop offset="1" stop-color="#efe7d6"/></linearGradient></defs><rect width="640" height="360" fill="url(#bg)"/>';
  const shapes: PlacedShape[] = [
    { shape: 'circle', cx: 82.5, cy: 92.5, extent: 125, deg: 0, fill: '#d6453d' },
    { shape: 'square', cx: 240, cy: 90, extent: 135, deg: 18, fill: '#2f6fb3' },
    { shape: 'triangle', cx: 400, cy: 97.5, extent: 140, deg: 8, fill: '#e0a020' },
    { shape: 'star', cx: 557.5, cy: 92.5, extent: 145, deg: 0, fill: '#2e9b58' },
    { shape: 'ellipse', cx: 85, cy: 270, extent: 145, deg: -25, fill: '#7b4fa0', aspect: 0.5 },
    { shape: 'rectangle', cx: 242.5, cy: 272.5, extent: 140, deg: 30, fill: '#e5732a', aspect: 0.5 },
    { shape: 'star', cx: 400, cy: 270, extent: 120, deg: 20, fill: '#c03a8a' },
    { shape: 'circle', cx: 555, cy: 270, extent: 115, deg: 0, fill: '#1f8a9a' },
  ];
  return compose(640, 360, background, shapes);
}

interface GridSpec {
  width: number;
  height: number;
  /** Side of the square cell that holds one shape. */
  cell: number;
  /** Shape extents are `minExtent + round(rand * extentSpan)` pixels. */
  minExtent: number;
  extentSpan: number;
  seed: number;
  background: string;
}

/** One shape per grid cell, class, colour, rotation and position drawn from a fixed seed. */
function gridScene(g: GridSpec): SynthScene {
  const rand = mulberry32(g.seed);
  // Saturated, bright colours, as the training set draws them (HSV s >= 0.55, v >= 0.55): white and
  // pastels are outside what the model has seen.
  const palette = ['#e6194b', '#ffe119', '#4363d8', '#f58231', '#f032e6', '#42d4f4', '#bfef45', '#3cb44b'];
  const cols = g.width / g.cell;
  const shapes: PlacedShape[] = [];
  for (let row = 0; row < g.height / g.cell; row++) {
    for (let col = 0; col < cols; col++) {
      const extent = g.minExtent + Math.round(rand() * g.extentSpan);
      const margin = extent;
      shapes.push({
        shape: DEMO_CLASSES[(row * cols + col + Math.floor(rand() * 6)) % DEMO_CLASSES.length]!,
        cx: col * g.cell + margin + Math.round(rand() * (g.cell - 2 * margin)),
        cy: row * g.cell + margin + Math.round(rand() * (g.cell - 2 * margin)),
        extent,
        deg: Math.round(rand() * 360),
        fill: palette[Math.floor(rand() * palette.length)]!,
        aspect: rand(),
      });
    }
  }
  return compose(g.width, g.height, g.background, shapes);
}

const diagonalGradient = (W: number, H: number): string => '<defs><linearGradient id="bg" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#3d4b3a"/>' +
  `<stop offset="1" stop-color="#a9b7c4"/></linearGradient></defs><rect width="${W}" height="${H}" fill="url(#bg)"/>`;

/**
 * The tiling example: 1600x1200, an 8x6 grid of 200 px cells with one small shape (24-34 px) in
 * each, class, colour, rotation and position drawn from a fixed seed.
 */
export function tilingScene(): SynthScene {
  return gridScene({ width: 1600, height: 1200, cell: 200, minExtent: 24, extentSpan: 10, seed: 20260606, background: diagonalGradient(1600, 1200) });
}

/**
 * A crowd for benchmarks and tests that need many real detections: 768x768, a 12x12 grid of 64 px
 * cells with one 26-32 px shape each (144 objects; 22-27 px at a 640 input), from a fixed seed.
 */
export function crowdScene(): SynthScene {
  return gridScene({ width: 768, height: 768, cell: 64, minExtent: 26, extentSpan: 6, seed: 20261201, background: diagonalGradient(768, 768) });
}
