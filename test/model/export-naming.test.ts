/** One naming rule for reduced-precision files: `_`-joined tags, and a half export never takes a quantized file's name. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { defaultExportPath, precisionSuffix } from '../../src/export/onnx-export.ts';
import { LibreYOLO, type LibreYOLOModel } from '../../src/index.ts';

describe('export file names', () => {
  let model: LibreYOLOModel;
  before(async () => {
    model = await LibreYOLO();
  });
  after(async () => {
    await model.close();
  });

  it('half export `_fp16`, quantized `_<recipe>_quant`, plain none; all distinct', () => {
    const names = [precisionSuffix(false, null), precisionSuffix(true, null), precisionSuffix(false, 'fp16'), precisionSuffix(false, 'bf16')];
    assert.deepEqual(names, ['', '_fp16', '_fp16_quant', '_bf16_quant']);
    assert.deepEqual(names.map((s) => defaultExportPath(model, s)), [
      'weights/LibreYOLO9t-shapes.onnx', 'weights/LibreYOLO9t-shapes_fp16.onnx', 'weights/LibreYOLO9t-shapes_fp16_quant.onnx', 'weights/LibreYOLO9t-shapes_bf16_quant.onnx',
    ]);
  });
});
