/** Paths to files shipped in the package's `assets/` folder. */

import { fileURLToPath } from 'node:url';

// Both src/ (tsx) and dist/ (compiled) sit one level below the package root, so `../assets` works from either.
export const ASSETS_DIR = fileURLToPath(new URL('../assets/', import.meta.url));

/** Absolute path of the bundled sample scene (640x360 JPEG of eight drawn shapes). */
export const SAMPLE_IMAGE = fileURLToPath(new URL('../assets/sample.jpg', import.meta.url));

/** Absolute path of the bundled large scene for tiled inference (1600x1200 JPEG of 48 small shapes). */
export const SAMPLE_LARGE_IMAGE = fileURLToPath(new URL('../assets/sample-large.jpg', import.meta.url));

/**
 * The bundled default detector: yolo9t trained by this project on synthetic shapes (circle, square,
 * triangle, star, ellipse, rectangle; docs/default-model.md). Not a COCO model.
 */
export const DEFAULT_MODEL = 'LibreYOLO9t-shapes.pt';

/** Absolute path of the bundled default detector's weights. */
export const DEFAULT_MODEL_PATH = fileURLToPath(new URL('../assets/LibreYOLO9t-shapes.pt', import.meta.url));

/** The bundled weights a bare name (`LibreYOLO9t-shapes` or `LibreYOLO9t-shapes.pt`) refers to, else null. */
export function bundledModelPath(name: string): string | null {
  return name.trim().toLowerCase().replace(/\.pt$/, '') === 'libreyolo9t-shapes' ? DEFAULT_MODEL_PATH : null;
}
