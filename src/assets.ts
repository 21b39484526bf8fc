/** Paths to files shipped in the package's `assets/` folder. */

import { fileURLToPath } from 'node:url';

// Both src/ (tsx) and dist/ (compiled) sit one level below the package root, so `../assets` works from either.
export const ASSETS_DIR = fileURLToPath(new URL('../assets/', import.meta.url));

/** Absolute path of the bundled sample scene (1280x720 JPEG of drawn shapes). */
export const SAMPLE_IMAGE = fileURLToPath(new URL('../assets/sample.jpg', import.meta.url));
