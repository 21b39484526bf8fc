/** What `libreyolo info` does once its flags are parsed (imported only when it runs). */
import { loadForTraining } from '../../load.ts';
import type { LibreYOLOModel } from '../../model.ts';
import { numel } from '../../graph/tensor.ts';
import { printResult, progress, type OutputFlags } from '../output.ts';

export interface InfoFlags extends OutputFlags {
  model: string;
  detailed: boolean;
}

interface TensorDetail {
  name: string;
  params: number;
  shape: number[];
  trainable: boolean;
  kind: 'parameter' | 'buffer';
}

export function describeModel(model: LibreYOLOModel, name: string, detailed: boolean): Record<string, unknown> {
  const tensors: TensorDetail[] = [];
  for (const [key, p] of model.network?.namedTensors() ?? []) {
    tensors.push({ name: key, params: numel(p.dims), shape: [...p.dims], trainable: p.kind === 'parameter' && p.requiresGrad, kind: p.kind });
  }
  const params = tensors.filter((t) => t.kind === 'parameter');
  const trainable = params.filter((t) => t.trainable).reduce((a, t) => a + t.params, 0);
  const total = params.reduce((a, t) => a + t.params, 0);
  // Modules that own tensors (a conv, a batch norm): the counterpart of torch's leaf layers.
  const layers = new Set(tensors.map((t) => t.name.slice(0, Math.max(0, t.name.lastIndexOf('.'))))).size;
  const [h, w] = model.imgsz;
  return {
    model: name, model_family: model.family.name, size: model.size, task: model.task, input_size: [h, w],
    num_classes: model.nc, class_names: model.names, parameters: total, trainable_parameters: trainable,
    non_trainable_parameters: total - trainable, layers, device: model.device.id, model_path: model.weightsPath, format: model.format,
    ...(detailed ? { details: params.map(({ name: n, params: k, shape, trainable: t }) => ({ name: n, params: k, shape, trainable: t })) } : {}),
  };
}

const n = (v: unknown): string => Number(v).toLocaleString('en-US');

function humanInfo(r: Record<string, unknown>): string {
  const [h, w] = r.input_size as [number, number];
  const lines = [
    `Model:      ${String(r.model)}`,
    `Family:     ${String(r.model_family)}`,
    `Size:       ${String(r.size)}`,
    `Task:       ${String(r.task)}`,
    `Classes:    ${String(r.num_classes)}`,
    `Parameters: ${n(r.parameters)}`,
    `Trainable:  ${n(r.trainable_parameters)}`,
    `Layers:     ${String(r.layers)}`,
    `Input size: ${h}x${w}`,
    `Device:     ${String(r.device)}`,
    `Weights:    ${String(r.model_path ?? 'fresh weights')}`,
  ];
  const details = r.details as Array<{ name: string; params: number; shape: number[]; trainable: boolean }> | undefined;
  if (details) {
    lines.push('', 'Parameters:');
    for (const d of details) lines.push(`  ${d.name}: ${d.params} params, shape=[${d.shape.join(', ')}], trainable=${d.trainable ? 'True' : 'False'}`);
  }
  return lines.join('\n');
}

export async function runInfo(flags: InfoFlags): Promise<void> {
  progress(flags, `Loading ${flags.model}...`);
  const model = await loadForTraining(flags.model, { device: 'cpu', progress: !flags.quiet && !flags.json });
  try {
    const r = describeModel(model, flags.model, flags.detailed);
    printResult(r, flags, () => humanInfo(r));
  } finally {
    await model.close();
  }
}
