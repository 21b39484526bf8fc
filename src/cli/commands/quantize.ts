/**
 * `libreyolo quantize model=... recipe=fp16|bf16 [out=...] [device=cpu]`: converts a model's weights
 * and compute to half precision (float32 kept at the inputs and outputs) and writes it as an ONNX
 * file that `LibreYOLO()` and `libreyolo predict` load directly. Cast recipes read no calibration
 * data, so `calib`, `samples`, `batch` and `algorithm` are accepted and ignored, as in the original.
 */
import { Command } from 'commander';
import { CALIBRATION_ALGORITHMS } from '../../quantize/recipes.ts';
import { lazyAction } from '../lazy-action.ts';
import { parseInteger } from '../values.ts';
import { DEFAULT_PREDICT_MODEL } from './predict.ts';

export function quantizeCommand(): Command {
  return new Command('quantize')
    .description('Quantize a model (recipes fp16, bf16) and write it as ONNX with float32 inputs and outputs.')
    .option('--model <weights>', 'weights to quantize', DEFAULT_PREDICT_MODEL)
    .requiredOption('--recipe <recipe>', 'fp16 or bf16')
    .option('--calib <data>', 'calibration data (ignored by the cast recipes; none to skip)')
    .option('--samples <n>', 'calibration samples (ignored by the cast recipes)', parseInteger('samples'), 128)
    .option('--batch <n>', 'calibration batch (ignored by the cast recipes)', parseInteger('batch'), 8)
    .option('--algorithm <name>', `calibration algorithm: ${CALIBRATION_ALGORITHMS.join(', ')}`, 'auto')
    .option('--out <path>', 'output file (default: <weights stem>_<recipe>_quant.onnx next to the weights)')
    .option('--device <device>', 'cpu, 0 / cuda:0, or webgpu', 'cpu')
    .action(lazyAction(async () => (await import('../actions/quantize.ts')).runQuantize));
}
