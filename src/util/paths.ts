/**
 * Names that come from files (model metadata, image names) become parts of output paths; these
 * helpers keep such a name to one harmless segment and check that the final path stays put.
 */
import { isAbsolute, relative, resolve } from 'node:path';
import { LibreYOLOError } from '../errors.ts';

const MAX_SEGMENT = 100;

/**
 * `s` as one path segment: separators, characters Windows forbids in names (: * ? " < > |) and
 * control characters become '_', leading dots and spaces are dropped (no '..', no hidden files),
 * trailing ones too, and it is cut to 100 characters; `fallback` when nothing is left.
 */
export function safeSegment(s: string, fallback = 'unknown'): string {
  const cleaned = s.replace(/[\\/:*?"<>|\u0000-\u001f\u007f-\u009f]/g, '_').replace(/^[. ]+/, '').slice(0, MAX_SEGMENT).replace(/[. ]+$/, '');
  return cleaned === '' ? fallback : cleaned;
}

/** `path`, resolved, when it lies inside `root`; an error naming both otherwise. */
export function insideOrThrow(root: string, path: string, what: string): string {
  const full = resolve(root, path);
  const rel = relative(resolve(root), full);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    throw new LibreYOLOError('io_error', `Refused to write ${what} at ${full}: it is not inside ${resolve(root)}.`);
  }
  return full;
}
