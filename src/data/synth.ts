/**
 * Synthetic detection dataset: coloured shapes (circle, square, triangle, star, ellipse, rectangle,
 * hexagon, cross) on varied backgrounds, with exact axis-aligned boxes computed from the geometry
 * that is drawn. Images are SVG scenes rasterised by sharp, written as a YOLO dataset folder
 * (`images/{train,val}`, `labels/{train,val}`, `data.yaml`). Every image is a pure function of
 * (seed, split, index), so the output is reproducible bit for bit and generation runs in parallel.
 */

import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { stringify as toYaml } from 'yaml';
import { LibreYOLOError } from '../errors.ts';
import { mixSeed, mulberry32 } from './augment.ts';
import { formatLabels } from './labels.ts';
import { SHAPE_CLASSES } from './shape-classes.ts';

export { SHAPE_CLASSES };

export interface SynthOptions {
  /** Output folder (created). */
  out: string;
  seed?: number;
  /** Number of train / val images (defaults 64 / 16). */
  train?: number;
  val?: number;
  /** Long side of each image in pixels (default 320). */
  imgsz?: number;
  /** Shape classes to draw, by name, in class-id order (default all of SHAPE_CLASSES). */
  classes?: readonly string[];
  /** Objects per image: uniform in [minObjects, maxObjects] (defaults 1 and 6). */
  minObjects?: number;
  maxObjects?: number;
  /** Object size range as a fraction of the image's short side (default [0.08, 0.4]). */
  sizeRange?: readonly [number, number];
  /** Also draw small objects (6..24 px across) — with a large imgsz, small objects in large images. */
  small?: boolean;
  /** Square images (default: the short side varies in 0.6..1 of imgsz, landscape or portrait). */
  square?: boolean;
  /** Fraction of images with no objects (default 0). */
  emptyFraction?: number;
  /** png (default, lossless) or jpg. */
  format?: 'png' | 'jpg';
  /** Replace existing images/labels under `out` (default false: refuse). */
  overwrite?: boolean;
  /** Parallel renders (default 8). */
  concurrency?: number;
  /** `detect` (default: box rows) or `segment`: polygon rows of each outline, shapes never overlapping. */
  task?: 'detect' | 'segment';
}

export interface SynthSummary {
  yaml: string;
  root: string;
  names: string[];
  train: number;
  val: number;
  objects: number;
  seconds: number;
}

/** One object of a scene, with its exact box in pixels. */
export interface SynthObject {
  cls: number;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  /** Its outline as flat x,y pixel pairs: the drawn vertices, or 64 points on a drawn ellipse. */
  polygon?: number[];
}

/** Points on an ellipse outline (radii rx, ry, rotated by theta about its centre). */
const ELLIPSE_POINTS = 64;

export interface SynthScene {
  width: number;
  height: number;
  svg: string;
  objects: SynthObject[];
  /** The SVG elements: background, then one per object (same order as `objects`). */
  parts: { background: string; shapes: string[] };
}

type Rgb = [number, number, number];

function hsvToRgb(h: number, s: number, v: number): Rgb {
  const f = (n: number): number => {
    const k = (n + h * 6) % 6;
    return Math.round(255 * (v - v * s * Math.max(0, Math.min(k, 4 - k, 1))));
  };
  return [f(5), f(3), f(1)];
}

const hex = (c: Rgb): string => `#${c.map((v) => v.toString(16).padStart(2, '0')).join('')}`;
const dist = (a: Rgb, b: Rgb): number => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
const r3 = (v: number): number => Math.round(v * 1000) / 1000;

/** Unit-radius outlines (before rotation and scaling); circle and ellipse are drawn natively. */
export function outline(shape: string, rand: () => number): { pts: [number, number][] } | { ellipse: [number, number] } {
  const ring = (n: number, radius: (i: number) => number, phase = -Math.PI / 2): [number, number][] =>
    Array.from({ length: n }, (_, i) => {
      const a = phase + (i * 2 * Math.PI) / n;
      return [radius(i) * Math.cos(a), radius(i) * Math.sin(a)];
    });
  switch (shape) {
    case 'circle': return { ellipse: [1, 1] };
    case 'ellipse': { const k = 0.4 + rand() * 0.25; return { ellipse: [1, k] }; }
    case 'square': return { pts: [[-0.72, -0.72], [0.72, -0.72], [0.72, 0.72], [-0.72, 0.72]] };
    case 'rectangle': { const k = 0.35 + rand() * 0.25; return { pts: [[-1, -k], [1, -k], [1, k], [-1, k]] }; }
    case 'triangle': return { pts: ring(3, () => 1) };
    case 'star': return { pts: ring(10, (i) => (i % 2 === 0 ? 1 : 0.42)) };
    case 'hexagon': return { pts: ring(6, () => 1, 0) };
    case 'cross': {
      const w = 0.3;
      return { pts: [[-w, -1], [w, -1], [w, -w], [1, -w], [1, w], [w, w], [w, 1], [-w, 1], [-w, w], [-1, w], [-1, -w], [-w, -w]] };
    }
    default: throw new LibreYOLOError('config_range_error', `Unknown synthetic shape '${shape}'; known: ${SHAPE_CLASSES.join(', ')}`);
  }
}

interface Background { svg: string; colours: Rgb[] }

function background(w: number, h: number, rand: () => number, id: string): Background {
  const kind = Math.floor(rand() * 4);
  const c1 = hsvToRgb(rand(), rand() * 0.6, 0.15 + rand() * 0.8);
  const c2 = hsvToRgb(rand(), rand() * 0.6, 0.15 + rand() * 0.8);
  if (kind === 0) return { svg: `<rect width="${w}" height="${h}" fill="${hex(c1)}"/>`, colours: [c1] };
  if (kind === 1) {
    const a = rand() * Math.PI;
    const x = r3(0.5 + 0.5 * Math.cos(a)), y = r3(0.5 + 0.5 * Math.sin(a));
    return {
      svg: `<defs><linearGradient id="g${id}" x1="${r3(1 - x)}" y1="${r3(1 - y)}" x2="${x}" y2="${y}"><stop offset="0" stop-color="${hex(c1)}"/><stop offset="1" stop-color="${hex(c2)}"/></linearGradient></defs>` +
        `<rect width="${w}" height="${h}" fill="url(#g${id})"/>`,
      colours: [c1, c2],
    };
  }
  if (kind === 2) {
    const period = Math.max(6, Math.round(Math.min(w, h) * (0.03 + rand() * 0.08)));
    const angle = Math.round(rand() * 180);
    return {
      svg: `<defs><pattern id="p${id}" width="${period}" height="${period}" patternUnits="userSpaceOnUse" patternTransform="rotate(${angle})">` +
        `<rect width="${period}" height="${period}" fill="${hex(c1)}"/><rect width="${period / 2}" height="${period}" fill="${hex(c2)}"/></pattern></defs>` +
        `<rect width="${w}" height="${h}" fill="url(#p${id})"/>`,
      colours: [c1, c2],
    };
  }
  const freq = r3(0.01 + rand() * 0.05);
  const seed = Math.floor(rand() * 1000);
  return {
    svg: `<defs><filter id="n${id}" x="0" y="0" width="100%" height="100%"><feTurbulence type="fractalNoise" baseFrequency="${freq}" numOctaves="2" seed="${seed}"/>` +
      `<feColorMatrix type="saturate" values="0"/><feComponentTransfer><feFuncA type="linear" slope="0.35"/></feComponentTransfer></filter></defs>` +
      `<rect width="${w}" height="${h}" fill="${hex(c1)}"/><rect width="${w}" height="${h}" filter="url(#n${id})"/>`,
    colours: [c1, hsvToRgb(0, 0, 0.5)],
  };
}

export interface SceneOptions {
  imgsz: number;
  nc: number;
  shapes: readonly string[];
  minObjects: number;
  maxObjects: number;
  sizeRange: readonly [number, number];
  small: boolean;
  square: boolean;
  empty: boolean;
  /** Shapes never overlap, so each outline is exactly the object's visible pixels (segment labels). */
  disjoint?: boolean;
}

/** Builds one scene (SVG text + exact boxes) from a seeded generator. */
export function synthScene(rand: () => number, o: SceneOptions): SynthScene {
  let width = o.imgsz, height = o.imgsz;
  if (!o.square) {
    const short = Math.max(16, Math.round(o.imgsz * (0.6 + 0.4 * rand())));
    if (rand() < 0.5) height = short; else width = short;
  }
  const bg = background(width, height, rand, '0');
  const objects: SynthObject[] = [];
  const parts: string[] = [];
  const count = o.empty ? 0 : o.minObjects + Math.floor(rand() * (o.maxObjects - o.minObjects + 1));
  const minSide = Math.min(width, height);
  for (let k = 0; k < count; k++) {
    const cls = Math.floor(rand() * o.nc);
    const shape = o.shapes[cls]!;
    const geom = outline(shape, rand);
    const deg = shape === 'circle' ? 0 : r3(rand() * 360);
    const theta = (deg * Math.PI) / 180;
    const isSmall = o.small && rand() < 0.35;
    const extent = isSmall ? 6 + rand() * 18 : minSide * (o.sizeRange[0] + rand() * (o.sizeRange[1] - o.sizeRange[0]));
    const radius = Math.max(3, extent / 2);
    let colour: Rgb = [0, 0, 0];
    for (let t = 0; t < 20; t++) {
      colour = hsvToRgb(rand(), 0.55 + rand() * 0.45, 0.55 + rand() * 0.45);
      if (bg.colours.every((c) => dist(c, colour) > 110)) break;
    }
    // Geometry relative to the centre, rounded to what the SVG says, then the exact extent.
    const cos = Math.cos(theta), sin = Math.sin(theta);
    let hx = 0, hy = 0, local: [number, number][] | null = null;
    let rx = 0, ry = 0;
    if ('ellipse' in geom) {
      rx = r3(geom.ellipse[0] * radius); ry = r3(geom.ellipse[1] * radius);
      hx = Math.sqrt(rx * rx * cos * cos + ry * ry * sin * sin);
      hy = Math.sqrt(rx * rx * sin * sin + ry * ry * cos * cos);
    } else {
      local = geom.pts.map(([x, y]) => [r3((x * cos - y * sin) * radius), r3((x * sin + y * cos) * radius)]);
    }
    const minX = local ? Math.max(...local.map((p) => -p[0])) : hx, maxX = local ? Math.max(...local.map((p) => p[0])) : hx;
    const minY = local ? Math.max(...local.map((p) => -p[1])) : hy, maxY = local ? Math.max(...local.map((p) => p[1])) : hy;
    if (minX + maxX >= width - 2 || minY + maxY >= height - 2) continue;
    let placed = false;
    for (let attempt = 0; attempt < 40 && !placed; attempt++) {
      const cx = r3(minX + 1 + rand() * (width - 2 - minX - maxX));
      const cy = r3(minY + 1 + rand() * (height - 2 - minY - maxY));
      let box: SynthObject;
      if (local) {
        const xs = local.map((p) => r3(cx + p[0])), ys = local.map((p) => r3(cy + p[1]));
        box = { cls, x1: Math.min(...xs), y1: Math.min(...ys), x2: Math.max(...xs), y2: Math.max(...ys), polygon: xs.flatMap((x, i) => [x, ys[i]!]) };
        if (!objects.every((b) => acceptable(b, box, o.disjoint))) continue;
        parts.push(`<polygon points="${xs.map((x, i) => `${x},${ys[i]}`).join(' ')}" fill="${hex(colour)}"/>`);
      } else {
        box = { cls, x1: cx - hx, y1: cy - hy, x2: cx + hx, y2: cy + hy, polygon: ellipseOutline(cx, cy, rx, ry, theta) };
        if (!objects.every((b) => acceptable(b, box, o.disjoint))) continue;
        parts.push(`<ellipse cx="${cx}" cy="${cy}" rx="${rx}" ry="${ry}" transform="rotate(${deg} ${cx} ${cy})" fill="${hex(colour)}"/>`);
      }
      objects.push(box);
      placed = true;
    }
  }
  return { width, height, svg: sceneSvg(width, height, [bg.svg, ...parts]), objects, parts: { background: bg.svg, shapes: parts } };
}

/** Wraps SVG elements in a `width x height` document. */
export function sceneSvg(width: number, height: number, elements: readonly string[]): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" shape-rendering="geometricPrecision">${elements.join('')}</svg>`;
}

function ellipseOutline(cx: number, cy: number, rx: number, ry: number, theta: number): number[] {
  const cos = Math.cos(theta), sin = Math.sin(theta);
  const pts: number[] = [];
  for (let k = 0; k < ELLIPSE_POINTS; k++) {
    const t = (k * 2 * Math.PI) / ELLIPSE_POINTS;
    const x = rx * Math.cos(t), y = ry * Math.sin(t);
    pts.push(cx + x * cos - y * sin, cy + x * sin + y * cos);
  }
  return pts;
}

/**
 * A new shape may overlap earlier ones, but may cover at most 40 % of any of them (drawn later = on
 * top); `disjoint`: boxes may not overlap at all (one pixel apart), so no shape hides another.
 */
function acceptable(prev: SynthObject, next: SynthObject, disjoint = false): boolean {
  const iw = Math.min(prev.x2, next.x2) - Math.max(prev.x1, next.x1);
  const ih = Math.min(prev.y2, next.y2) - Math.max(prev.y1, next.y1);
  if (disjoint) return iw < -1 || ih < -1;
  if (iw <= 0 || ih <= 0) return true;
  const inter = iw * ih;
  const aPrev = (prev.x2 - prev.x1) * (prev.y2 - prev.y1);
  const aNext = (next.x2 - next.x1) * (next.y2 - next.y1);
  return inter <= 0.4 * aPrev && inter <= 0.6 * aNext;
}

/** Rasterises a scene to encoded bytes. */
export async function renderScene(scene: SynthScene, format: 'png' | 'jpg' = 'png'): Promise<Buffer> {
  const img = sharp(Buffer.from(scene.svg), { density: 72 }).removeAlpha();
  return format === 'png' ? img.png({ compressionLevel: 3, adaptiveFiltering: false }).toBuffer() : img.jpeg({ quality: 92, chromaSubsampling: '4:4:4' }).toBuffer();
}

/** Label rows `[cls, cx, cy, w, h]` normalised to the scene. */
export function sceneLabels(scene: SynthScene): number[] {
  const rows: number[] = [];
  for (const b of scene.objects) {
    rows.push(b.cls, (b.x1 + b.x2) / 2 / scene.width, (b.y1 + b.y2) / 2 / scene.height, (b.x2 - b.x1) / scene.width, (b.y2 - b.y1) / scene.height);
  }
  return rows;
}

/** Segment label rows `cls x1 y1 x2 y2 ...`, the outline normalised to the scene (6 decimals). */
export function sceneSegmentLabels(scene: SynthScene): string {
  const f = (v: number): string => String(Math.round(Math.min(Math.max(v, 0), 1) * 1e6) / 1e6);
  return scene.objects.map((o) => {
    const p = o.polygon!;
    const coords: string[] = [];
    for (let k = 0; k < p.length; k += 2) coords.push(f(p[k]! / scene.width), f(p[k + 1]! / scene.height));
    return `${o.cls} ${coords.join(' ')}\n`;
  }).join('');
}

function positiveInt(name: string, v: number, min = 0): number {
  if (!Number.isInteger(v) || v < min) throw new LibreYOLOError('config_range_error', `${name} must be an integer >= ${min}, got ${v}`);
  return v;
}

/** Parses `circle,square` or `3` (the first N shapes) into shape names. */
export function parseShapeClasses(spec: string | readonly string[] | undefined): string[] {
  if (spec === undefined) return [...SHAPE_CLASSES];
  const list = typeof spec === 'string' ? spec.split(',').map((s) => s.trim()).filter(Boolean) : [...spec];
  if (list.length === 1 && /^\d+$/.test(list[0]!)) {
    const n = Number(list[0]);
    if (n < 1 || n > SHAPE_CLASSES.length) throw new LibreYOLOError('config_range_error', `classes must be 1..${SHAPE_CLASSES.length} shapes, got ${n}`);
    return SHAPE_CLASSES.slice(0, n);
  }
  if (list.length === 0) throw new LibreYOLOError('config_range_error', 'classes is empty');
  for (const s of list) {
    if (!SHAPE_CLASSES.includes(s)) throw new LibreYOLOError('config_range_error', `Unknown shape class '${s}'; choose from ${SHAPE_CLASSES.join(', ')}`);
  }
  if (new Set(list).size !== list.length) throw new LibreYOLOError('config_range_error', `classes has duplicates: ${list.join(',')}`);
  return list;
}

/** Writes a synthetic YOLO dataset under `options.out` and returns where its data.yaml is. */
export async function generateSynthDataset(options: SynthOptions): Promise<SynthSummary> {
  const t0 = performance.now();
  const root = resolve(options.out);
  const seed = options.seed ?? 0;
  const nTrain = positiveInt('train', options.train ?? 64);
  const nVal = positiveInt('val', options.val ?? 16);
  const imgsz = positiveInt('imgsz', options.imgsz ?? 320, 32);
  const shapes = parseShapeClasses(options.classes);
  const minObjects = positiveInt('minObjects', options.minObjects ?? 1, 0);
  const maxObjects = positiveInt('maxObjects', options.maxObjects ?? 6, Math.max(minObjects, 1));
  const sizeRange = options.sizeRange ?? [0.08, 0.4];
  if (!(sizeRange[0] > 0 && sizeRange[1] >= sizeRange[0] && sizeRange[1] < 1)) {
    throw new LibreYOLOError('config_range_error', `sizeRange must satisfy 0 < min <= max < 1, got [${sizeRange.join(', ')}]`);
  }
  const format = options.format ?? 'png';
  const ext = format === 'png' ? '.png' : '.jpg';
  const emptyFraction = options.emptyFraction ?? 0;

  const dirs = ['images/train', 'images/val', 'labels/train', 'labels/val'].map((d) => join(root, d));
  for (const d of dirs) {
    let existing: string[] = [];
    try { existing = await readdir(d); } catch { /* absent */ }
    if (existing.length === 0) continue;
    if (!options.overwrite) {
      throw new LibreYOLOError('config_conflict', `${d} already has files; choose another --out or pass --overwrite`);
    }
    await rm(d, { recursive: true, force: true });
  }
  for (const d of dirs) await mkdir(d, { recursive: true });

  const task = options.task ?? 'detect';
  if (task !== 'detect' && task !== 'segment') throw new LibreYOLOError('config_range_error', `task must be detect or segment, got '${String(task)}'`);
  const scene: SceneOptions = {
    imgsz, nc: shapes.length, shapes, minObjects, maxObjects, sizeRange, small: options.small ?? false, square: options.square ?? false, empty: false,
    ...(task === 'segment' ? { disjoint: true } : {}),
  };
  const jobs: { split: 'train' | 'val'; index: number }[] = [];
  for (let i = 0; i < nTrain; i++) jobs.push({ split: 'train', index: i });
  for (let i = 0; i < nVal; i++) jobs.push({ split: 'val', index: i });
  let objects = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const { split, index } = jobs[next++]!;
      const rand = mulberry32(mixSeed(seed, split === 'train' ? 1 : 2, index));
      const empty = emptyFraction > 0 && rand() < emptyFraction;
      const s = synthScene(rand, { ...scene, empty });
      const stem = String(index).padStart(6, '0');
      const bytes = await renderScene(s, format);
      await writeFile(join(root, 'images', split, stem + ext), bytes);
      await writeFile(join(root, 'labels', split, `${stem}.txt`), task === 'segment' ? sceneSegmentLabels(s) : formatLabels(sceneLabels(s)));
      objects += s.objects.length;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 8) }, worker));

  const yamlText = `# Synthetic shapes (libreyolo data synth --seed ${seed} --train ${nTrain} --val ${nVal} --imgsz ${imgsz}` +
    ` --classes ${shapes.join(',')} --min-objects ${minObjects} --max-objects ${maxObjects} --size-range ${sizeRange.join(',')}` +
    `${options.small ? ' --small' : ''}${options.square ? ' --square' : ''}${task === 'segment' ? ' --task segment' : ''}${emptyFraction > 0 ? ` (empty fraction ${emptyFraction})` : ''})\n# path is omitted: the dataset root is this file's folder\n` +
    toYaml({ train: 'images/train', val: 'images/val', nc: shapes.length, names: new Map(shapes.map((s, i) => [i, s])) });
  const yaml = join(root, 'data.yaml');
  await writeFile(yaml, yamlText);
  return { yaml, root, names: shapes, train: nTrain, val: nVal, objects, seconds: (performance.now() - t0) / 1000 };
}
