/** ONNX metadata_props as the original writes them (all strings); weights/model-metadata.ts reads them back. */

export const SUPPORTED_TASKS = ['detect', 'segment', 'semantic', 'pose', 'classify', 'obb'];

export interface ExportMetadataInput {
  version: string;
  family: string;
  size: string;
  task: string;
  names: Record<number, string>;
  imgsz: [number, number];
  dynamic: boolean;
  precision: 'fp32' | 'fp16' | 'bf16';
  /** `supported_tasks` and `default_task` name only the model's own task (RF-DETR's exporter); default: the original's whole task list and detect. */
  ownTaskOnly?: boolean;
  /** A quantize recipe baked into the file (its IO stays float32, so `half` stays False). */
  quantRecipe?: 'fp16' | 'bf16';
}

export function exportMetadata(m: ExportMetadataInput): Map<string, string> {
  const nc = String(Object.keys(m.names).length);
  const names = JSON.stringify(Object.fromEntries(Object.entries(m.names).map(([k, v]) => [String(k), v])));
  return new Map([
    ['schema_version', '1.0'],
    ['libreyolo_version', m.version],
    ['model_family', m.family],
    ['size', m.size],
    ['model_size', m.size],
    ['task', m.task],
    ['supported_tasks', JSON.stringify(m.ownTaskOnly ? [m.task] : SUPPORTED_TASKS).replace(/,/g, ', ')],
    ['default_task', m.ownTaskOnly ? m.task : 'detect'],
    ['nc', nc],
    ['nb_classes', nc],
    ['names', names],
    ['imgsz', String(Math.max(...m.imgsz))],
    ['imgsz_h', String(m.imgsz[0])],
    ['imgsz_w', String(m.imgsz[1])],
    ['dynamic', m.dynamic ? 'True' : 'False'],
    ['precision', m.precision],
    ['half', m.precision === 'fp16' && !m.quantRecipe ? 'True' : 'False'],
    ['segmentation', m.task === 'segment' ? 'true' : 'false'],
    ['obb', 'false'],
    ...(m.quantRecipe ? [['quant_recipe', m.quantRecipe] as [string, string]] : []),
  ]);
}
