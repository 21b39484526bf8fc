/**
 * Task names (`detect`, `segment`, ...) as the original spells them, with its aliases and file-name
 * suffixes, and the order a checkpoint's task is recognised in: an explicit task, the file's `task`
 * field, the `-seg`-style suffix of its name, what its head keys say, else `detect`.
 */
import { baseName } from '../util/base-name.ts';
import { LibreYOLOError } from '../errors.ts';
import { familyTasks, type ModelFamily } from './registry.ts';

const ALIASES: Readonly<Record<string, string>> = { segmentation: 'segment', seg: 'segment' };

/** Weight-file suffix -> task (`LibreYOLO9t-seg.pt` is a segment model). */
export const TASK_SUFFIXES: Readonly<Record<string, string>> = {
  '-seg': 'segment', '-pose': 'pose', '-cls': 'classify', '-obb': 'obb', '-sem': 'semantic',
};

export function canonicalTask(task: string): string {
  const t = task.trim().toLowerCase();
  return ALIASES[t] ?? t;
}

/** The task a file name's suffix says (`yolo9t-seg.pt`, `LibreYOLO9t-seg.onnx`), or null. */
export function taskFromFileName(path: string): string | null {
  const stem = baseName(path).replace(/\.[^.]*$/, '').toLowerCase();
  for (const [suffix, task] of Object.entries(TASK_SUFFIXES)) if (stem.endsWith(suffix)) return task;
  return null;
}

/**
 * A task no family here runs. Asked for with the `task` option it is a bad argument (exit 2); read
 * from the file (its `task` field, its name, its head keys) the file is a model this package cannot
 * load (exit 4, as the README's table says for a model that is not loadable).
 */
export function unsupportedTask(task: string, fromFile = false): LibreYOLOError {
  return new LibreYOLOError(fromFile ? 'model_task_unsupported' : 'config_unsupported', `Task '${task}' is not supported yet: this package runs detection and instance segmentation (segment) models only.`);
}

/**
 * The task of a checkpoint in the original's precedence; refused when the family does not run it.
 * `explicit` is the caller's `task` option, `declared` the file's `task` field.
 */
export function resolveTask(family: ModelFamily, source: { explicit?: string | undefined; declared?: string | undefined; path: string; keys: readonly string[] }): string {
  const raw = source.explicit ?? source.declared ?? taskFromFileName(source.path) ?? family.taskFromKeys?.(source.keys) ?? 'detect';
  const task = canonicalTask(raw);
  const supported = familyTasks(family);
  if (supported.includes(task)) return task;
  const fromFile = source.explicit === undefined;
  if (task === 'segment' || task === 'detect') {
    throw new LibreYOLOError(fromFile ? 'model_task_unsupported' : 'config_unsupported', `${family.displayName} models run the tasks ${supported.join(', ')}; task '${task}' is not one of them.`);
  }
  throw unsupportedTask(task, fromFile);
}
