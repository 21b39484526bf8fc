/**
 * A profile command's user error: the message goes to stderr as-is and the command exits with the
 * group's own code (2: missing file or unresolvable argument, 1: unparseable trace, 3: no profile).
 */
import { LibreYOLOError } from '../errors.ts';

export class ProfileError extends Error {
  constructor(message: string, readonly exitCode: number) {
    super(message);
    this.name = 'ProfileError';
  }
}

/**
 * A library error met while profiling, as the group prints it: its message (and a suggestion it
 * does not already contain) with the exit code predict gives the same failure (4 for weights that
 * are not there, 1 for a device that is not, 2 for a bad value). Anything else passes through.
 */
export function asProfileError(err: unknown): unknown {
  if (!(err instanceof LibreYOLOError)) return err;
  const more = err.suggestion && !err.message.includes(err.suggestion) ? `\n${err.suggestion}` : '';
  return new ProfileError(`${err.message}${more}`, err.exitCode);
}
