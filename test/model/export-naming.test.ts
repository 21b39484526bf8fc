/** One naming rule for reduced-precision files: `_`-joined tags, and a half export never takes a quantized file's name. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultExportPath, exportOnnx, precisionSuffix } from '../../src/export/onnx-export.ts';
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

describe('export into a folder that already holds the name', () => {
  let model: LibreYOLOModel;
  const dir = mkdtempSync(join(tmpdir(), 'libreyolo-export-names-'));
  before(async () => {
    model = await LibreYOLO();
  });
  after(async () => {
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('numbers after a digit as -2 (`_fp16-2.onnx`, not `_fp162.onnx`); overwrite=true replaces the file in place', async () => {
    const warnings: string[] = [];
    const warn = (m: string): void => void warnings.push(m);
    const wanted = join(dir, 'm_fp16.onnx');
    const first = await exportOnnx(model, { format: 'onnx', half: true, output_path: wanted }, warn);
    const second = await exportOnnx(model, { format: 'onnx', half: true, output_path: wanted }, warn);
    assert.equal(first, wanted);
    assert.equal(second, join(dir, 'm_fp16-2.onnx'));
    assert.match(warnings[0]!, /already exists and was kept; exported to .*m_fp16-2\.onnx instead \(pass overwrite=true to replace it, or another output_path\)/);
    const plain = join(dir, 'm.onnx');
    await exportOnnx(model, { format: 'onnx', output_path: plain }, warn);
    assert.equal(await exportOnnx(model, { format: 'onnx', output_path: plain }, warn), join(dir, 'm2.onnx'));
    writeFileSync(wanted, 'old bytes');
    assert.equal(await exportOnnx(model, { format: 'onnx', half: true, output_path: wanted, overwrite: true }, warn), wanted);
    assert.notEqual(readFileSync(wanted, 'utf8').slice(0, 9), 'old bytes');
    assert.deepEqual(readdirSync(dir).sort(), ['m.onnx', 'm2.onnx', 'm_fp16-2.onnx', 'm_fp16.onnx'], 'no temporary file left, nothing else written');
    await assert.rejects(exportOnnx(model, { format: 'onnx', output_path: wanted, overwrite: 'yes' as unknown as boolean }, warn), { code: 'config_type_error' });
  });
});
