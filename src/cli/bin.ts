#!/usr/bin/env node
/** Process entry: run the CLI and exit with its code (no stack traces for user errors). */
import { main } from './main.ts';
import { printWarningsPlainly } from './warnings.ts';

printWarningsPlainly();

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
