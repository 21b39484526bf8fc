/** ONNX Runtime intra-op threads: a whole number >= 1 (`LibreYOLO(w, { threads })`, `threads=` on the command line). */
import { integer } from '../util/options.ts';

export const THREADS = integer({ min: 1 });
