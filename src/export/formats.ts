/** The export formats this package writes, as `libreyolo formats` lists them and `export` checks them. */

export interface ExportFormat {
  name: string;
  extension: string;
  /** `quantize recipe=int8` style integer weights. */
  int8: boolean;
  /** `export half=true` (and `quantize recipe=fp16`). */
  fp16: boolean;
  /** Written by converting an ONNX export first. */
  requires_onnx: boolean;
  aliases?: string[];
}

export const EXPORT_FORMATS: readonly ExportFormat[] = [
  { name: 'onnx', extension: '.onnx', int8: false, fp16: true, requires_onnx: false },
];

/** The format for a name or alias (case-insensitive), else null. */
export function findExportFormat(name: string): ExportFormat | null {
  const n = name.trim().toLowerCase();
  return EXPORT_FORMATS.find((f) => f.name === n || f.aliases?.includes(n)) ?? null;
}
