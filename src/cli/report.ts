/** How the CLI reports failures: one clear stderr line (or a JSON error), never a stack for user errors. */
import { LibreYOLOError } from '../errors.ts';

export class CliExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

export function reportError(err: unknown, json: boolean): number {
  if (err instanceof CliExit) return err.exitCode;
  if (err instanceof LibreYOLOError) {
    if (json) {
      process.stdout.write(`${JSON.stringify({ schema_version: 1, error: err.code, message: err.message, suggestion: err.suggestion ?? null })}\n`);
    } else {
      process.stderr.write(`Error: ${err.message}\n`);
      // Messages usually end with their advice; print the suggestion only when it adds something.
      if (err.suggestion && !err.message.includes(err.suggestion)) process.stderr.write(`${err.suggestion}\n`);
    }
    return err.exitCode;
  }
  const message = err instanceof Error ? err.message : String(err);
  if (json) process.stdout.write(`${JSON.stringify({ schema_version: 1, error: 'io_error', message })}\n`);
  else process.stderr.write(`Error: ${message}\n${process.env.LIBREYOLO_DEBUG && err instanceof Error ? `${err.stack}\n` : ''}`);
  return 1;
}
