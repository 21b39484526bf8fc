/** What `libreyolo quantize` does once its flags are parsed (imported only when it runs). */
import { LibreYOLO } from '../../load.ts';
import { LibreYOLOError } from '../../errors.ts';
import { CALIBRATION_ALGORITHMS } from '../../quantize/recipes.ts';

export interface QuantizeFlags {
  model: string;
  recipe: string;
  calib?: string;
  samples: number;
  batch: number;
  algorithm: string;
  out?: string;
  device: string;
}

export async function runQuantize(flags: QuantizeFlags): Promise<void> {
  if (!CALIBRATION_ALGORITHMS.includes(flags.algorithm.toLowerCase())) {
    throw new LibreYOLOError('config_range_error', `algorithm must be one of ${CALIBRATION_ALGORITHMS.join(', ')}, got '${flags.algorithm}'`);
  }
  const model = await LibreYOLO(flags.model, { device: flags.device, warn: (m) => process.stderr.write(`Warning: ${m}\n`) });
  try {
    // The file is written by export, which needs the network: refuse before announcing a quantize it cannot save.
    if (!model.network) {
      throw new LibreYOLOError('format_precision_unsupported',
        `Cannot quantize ${flags.model}: it is an exported ONNX file, and quantize writes its .onnx from the network of the .pt or .safetensors weights. Pass those weights instead.`);
    }
    await model.quantize({ recipe: flags.recipe, calib: flags.calib ?? null });
    process.stdout.write(`Quantized ${model.family.name} to ${model.precision} (cast only, no calibration; float32 inputs and outputs)\n`);
    const path = await model.export({ format: 'onnx', dynamic: true, ...(flags.out ? { output_path: flags.out } : {}) });
    process.stdout.write(`Saved ${path}\n`);
  } finally {
    await model.close();
  }
}
