/** The browser's `save=true`: refused (a page cannot write files); results draw onto a canvas instead. */
import { LibreYOLOError } from '../errors.ts';

function refuse(): never {
  throw new LibreYOLOError('config_unsupported', 'save=true writes files, which a browser page cannot do. Draw the results on a canvas with drawResults(canvas, results) instead.');
}

export const saveAnnotated = async (..._args: unknown[]): Promise<string> => refuse();
export const saveTiled = async (..._args: unknown[]): Promise<never> => refuse();
