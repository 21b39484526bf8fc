/**
 * A folder or list in which some images could not be read: predict goes on with the others and, once
 * every good result has been yielded, raises this error naming each bad image and why.
 */
import { LibreYOLOError } from '../errors.ts';
import type { Results } from './results.ts';

export interface SourceFailure {
  /** Position of the image in the resolved source (folder listing or list order). */
  index: number;
  /** File path or URL; null for in-memory images. */
  path: string | null;
  /** How messages name the image. */
  label: string;
  /** Why it could not be read. */
  message: string;
  error: unknown;
}

export class SourcesFailedError extends LibreYOLOError {
  readonly failures: SourceFailure[];
  /** Number of images in the source, good and bad. */
  readonly total: number;
  /**
   * The results of the good images when predict returned an array (so they are not lost with the
   * error); empty in stream mode, where they were already yielded.
   */
  results: Results[] = [];

  constructor(failures: SourceFailure[], total: number) {
    const sorted = [...failures].sort((a, b) => a.index - b.index);
    const good = total - sorted.length;
    super('sources_failed',
      `${sorted.length} of ${total} image(s) could not be read${good > 0 ? ` (the other ${good} were predicted)` : ''}:\n` +
      sorted.map((f) => `  ${f.message}`).join('\n'),
      { suggestion: 'Fix or remove the images listed, or leave them out of the source.' });
    this.name = 'SourcesFailedError';
    this.failures = sorted;
    this.total = total;
  }
}

export function sourceFailure(index: number, path: string | null, label: string, error: unknown): SourceFailure {
  const message = error instanceof Error ? error.message : String(error);
  return { index, path, label, message: message.includes(label) ? message : `${label}: ${message}`, error };
}
