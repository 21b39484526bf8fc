/**
 * `libreyolo quantize model=... recipe=fp16|bf16 [out=...] [device=cpu]`: converts a model's weights
 * and compute to half precision (float32 kept at the inputs and outputs) and writes it as an ONNX
 * file that `LibreYOLO()` and `libreyolo predict` load directly. Cast recipes read no calibration
 * data, so `calib`, `samples`, `batch` and `algorithm` are accepted and ignored, as in the original.
 */
import { Command } from 'commander';
import { LibreYOLO } from '../../load.ts';
import { LibreYOLOError } from '../../errors.ts';
import { parseInteger } from '../values.ts';
import { DEFAULT_PREDICT_MODEL } from './predict.ts';

const ALGORITHMS = ['auto', 'percentile', 'minmax', 'mse', 'entropy'];

interface QuantizeFlags {
  model: string;
  recipe: string;
  calib?: string;
  samples: number;
  batch: number;
  algorithm: string;
  out?: string;
  device: string;
}

export function quantizeCommand(): Command {
  return new Command('quantize')
    .description('Quantize a model (recipes fp16, bf16) and write it as ONNX with float32 inputs and outputs.')
    .option('--model <weights>', 'weights to quantize', DEFAULT_PREDICT_MODEL)
    .requiredOption('--recipe <recipe>', 'fp16 or bf16')
    .option('--calib <data>', 'calibration data (ignored by the cast recipes; none to skip)')
    .option('--samples <n>', 'calibration samples (ignored by the cast recipes)', parseInteger('samples'), 128)
    .option('--batch <n>', 'calibration batch (ignored by the cast recipes)', parseInteger('batch'), 8)
    .option('--algorithm <name>', `calibration algorithm: ${ALGORITHMS.join(', ')}`, 'auto')
    .option('--out <path>', 'output file (default: <weights stem>_<recipe>_quant.onnx next to the weights)')
    .option('--device <device>', 'cpu, 0 / cuda:0, or webgpu', 'cpu')
    .action(async (flags: QuantizeFlags) => {
      if (!ALGORITHMS.includes(flags.algorithm.toLowerCase())) {
        throw new LibreYOLOError('config_range_error', `algorithm must be one of ${ALGORITHMS.join(', ')}, got '${flags.algorithm}'`);
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
    });
}
