/**
 * Export options: one table of rules, defaults and help lines (`libreyolo export` generates its
 * flags from it), camelCase keys read as snake_case, and the checks, before any graph is built.
 */
import { LibreYOLOError } from '../errors.ts';
import { IMGSZ } from '../util/imgsz.ts';
import { boolean, integer, normalizeKeys, optionRangeError, text, type Rule } from '../util/options.ts';

interface ExportOption<T> {
  rule: Rule<T>;
  default?: T;
  help: string;
}

const opt = <T>(rule: Rule<T>, help: string, dflt?: T): ExportOption<T> => ({ rule, help, ...(dflt === undefined ? {} : { default: dflt }) });

/** Every export option (the format's own check, export_format_unknown, stays in onnx-export.ts). */
export const EXPORT_OPTIONS = {
  format: opt(text('a format name'), 'export format (onnx)', 'onnx'),
  imgsz: opt(IMGSZ, "input size: 640 or 480x640; default the model's"),
  batch: opt(integer({ min: 1 }), 'static batch size (ignored when dynamic)', 1),
  dynamic: opt(boolean(), 'free batch, height and width', false),
  half: opt(boolean(), 'float16 weights and compute', false),
  opset: opt(integer(), 'ONNX opset (default and minimum 13)'),
  output_path: opt(text('a file path'), 'output file (default: next to the weights; an existing file is kept and the export takes the next free name)'),
  overwrite: opt(boolean(), 'replace an existing file at the output path', false),
} as const satisfies Record<string, ExportOption<unknown>>;

export type ExportOptionKey = keyof typeof EXPORT_OPTIONS;

export interface ResolvedExportOptions {
  format: string;
  imgsz: number | [number, number] | undefined;
  batch: number;
  dynamic: boolean;
  half: boolean;
  opset: number;
  outputPath: string | undefined;
  overwrite: boolean;
}

/** Checks every export option; `minOpset` is the family's (13, or RF-DETR's 17). */
export function resolveExportOptions(given: Readonly<Record<string, unknown>>, family: { name: string; exportOpset?: number }): ResolvedExportOptions {
  const raw = normalizeKeys(given, (k) => Object.hasOwn(EXPORT_OPTIONS, k));
  const unknown = Object.keys(raw).filter((k) => !Object.hasOwn(EXPORT_OPTIONS, k)).sort();
  if (unknown.length) {
    throw new LibreYOLOError('config_unknown_key', `Unsupported export option(s): ${unknown.join(', ')}. Export takes ${Object.keys(EXPORT_OPTIONS).join(', ')}.`);
  }
  const read = <K extends ExportOptionKey>(key: K): unknown => {
    const o: ExportOption<unknown> = EXPORT_OPTIONS[key];
    return raw[key] === undefined ? o.default : o.rule.check(key, raw[key]);
  };
  const minOpset = family.exportOpset ?? 13;
  const opset = (read('opset') as number | undefined) ?? minOpset;
  if (opset < minOpset) throw optionRangeError('opset', `>= ${minOpset} for ${family.name} models`, opset);
  return {
    format: read('format') as string,
    imgsz: read('imgsz') as number | [number, number] | undefined,
    batch: read('batch') as number,
    dynamic: read('dynamic') as boolean,
    half: read('half') as boolean,
    opset,
    outputPath: read('output_path') as string | undefined,
    overwrite: read('overwrite') as boolean,
  };
}
