/**
 * A library error met while profiling, as the profile group prints it: its message (and a suggestion
 * it does not already contain) with the exit code predict gives the same failure (4 for weights that
 * are not there, 1 for a device that is not, 2 for a bad value). Anything else passes through. The
 * group's own failures are `profile_*` codes (errors.ts).
 */
import { LibreYOLOError } from '../errors.ts';

export function asProfileError(err: unknown): unknown {
  if (!(err instanceof LibreYOLOError) || !err.suggestion || err.message.includes(err.suggestion)) return err;
  return new LibreYOLOError(err.code, `${err.message}\n${err.suggestion}`, { cause: err });
}
