/**
 * The models `libreyolo ui` offers and accepts: the bundled default, weights files found in the
 * working directory and its weights/ folder, and the published weights this package runs (downloaded into
 * weights/ on first use, as `predict` does). Anything else must be a weights file under the working
 * directory: a page cannot make the server read an arbitrary path.
 */
import { readdir, realpath, stat } from 'node:fs/promises';
import { extname, isAbsolute, join, relative, resolve } from 'node:path';
import { DEFAULT_MODEL } from '../assets.ts';
import { LibreYOLOError } from '../errors.ts';
import { familyTasks, getFamily } from '../models/index.ts';
import { TASK_SUFFIXES } from '../models/tasks.ts';
import { knownWeightNames, parseWeightName } from '../models/hub.ts';

const WEIGHT_EXTS = new Set(['.pt', '.onnx', '.safetensors']);

/** `LibreYOLO9t-shapes` (the bundled detector, listed without `.pt` as users name it). */
export const UI_DEFAULT_MODEL = DEFAULT_MODEL.replace(/\.pt$/, '');

async function localWeights(cwd: string): Promise<string[]> {
  const found: string[] = [];
  for (const dir of ['.', 'weights']) {
    const entries = await readdir(join(cwd, dir), { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (e.isFile() && WEIGHT_EXTS.has(extname(e.name).toLowerCase())) found.push(dir === '.' ? e.name : `${dir}/${e.name}`);
    }
  }
  return found.sort();
}

/** The names the page's Model list shows, the default first. */
export async function modelNames(cwd: string): Promise<string[]> {
  // Published weights of the tasks their family runs here (detect, and segment where the family has it).
  const published = knownWeightNames().filter((n) => {
    const w = parseWeightName(n);
    return w !== null && (w.taskSuffix === '' || familyTasks(getFamily(w.family)).includes(TASK_SUFFIXES[w.taskSuffix] ?? ''));
  });
  const local = await localWeights(cwd);
  return [...new Set([UI_DEFAULT_MODEL, ...local, ...published])];
}

/** Whether `child` is `parent` or inside it. */
function within(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * What to load for the page's `model` value: a listed name as is, else the real path of a weights
 * file under `cwd` (symbolic links resolved first, so a link cannot point outside). Refused otherwise.
 */
export async function resolveModelChoice(value: string, cwd: string): Promise<string> {
  if ((await modelNames(cwd)).includes(value)) return value;
  const advice = `Pick a model from the list, or give a .pt, .onnx or .safetensors file under ${cwd}.`;
  const root = await realpath(cwd);
  const target = await realpath(resolve(root, value)).catch(() => null);
  if (target === null) throw new LibreYOLOError('model_not_found', `Model '${value}' is not in the list and no such file exists under the working directory. ${advice}`, { suggestion: advice });
  if (!within(root, target)) throw new LibreYOLOError('model_not_found', `Model path '${value}' is outside the working directory ${root}; the UI only loads weights from under it. ${advice}`, { suggestion: advice });
  if (!(await stat(target)).isFile() || !WEIGHT_EXTS.has(extname(target).toLowerCase())) {
    throw new LibreYOLOError('model_not_found', `Model path '${value}' is not a weights file. ${advice}`, { suggestion: advice });
  }
  return target;
}
