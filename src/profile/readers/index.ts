export { summaryReader } from './summary.ts';
export { getReader } from './get.ts';
export { phasesReader } from './phases.ts';
export { kernelsReader, opsReader, type KernelsOptions } from './kernels.ts';
export { compareReader, significance, SINGLE_INFER_RUN, SINGLE_RUN } from './compare.ts';
export { whatIfReader, CAVEAT, type WhatIfOptions } from './what-if.ts';
export type { ReaderOutput } from './output.ts';
