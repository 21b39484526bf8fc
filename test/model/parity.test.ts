/**
 * Numerical parity with the Python original (../shared/fixtures): the predict-path sessions and the
 * exported ONNX files reproduce the reference outputs at both shapes within the fixture tolerances
 * (boxes <= 1e-3 px, scores <= 1e-4).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LibreYOLO } from '../../src/index.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { buildInferenceGraph } from '../../src/runtime/graph-engine.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { summarizeModel } from '../../src/graph/onnx.ts';
import { fixture } from '../helpers/fixtures.ts';
import { maxErrors } from '../helpers/compare.ts';
import * as ort from 'onnxruntime-node';
import { useModel } from '../helpers/model.ts';
import { tempDir } from '../helpers/temp.ts';

const BOX_TOL = 1e-3;
const SCORE_TOL = 1e-4;
const CASES = [
  { input: 'input_1x3x640x640', output: 'predictions_1x3x640x640' },
  { input: 'input_2x3x320x256', output: 'predictions_2x3x320x256' },
];

describe('parity with the original YOLOv9-t', () => {
  const io = readSafetensors(new Uint8Array(readFileSync(fixture('yolo9t_ref_io.safetensors'))), 'io').tensors;
  const model = useModel('yolo9t_ref.pt');
  const dir = tempDir();

  it('loads the reference checkpoint with its metadata', () => {
    assert.equal(model().family.name, 'yolo9');
    assert.equal(model().size, 't');
    assert.equal(model().nc, 80);
    assert.equal(model().names[0], 'class0');
    assert.deepEqual(model().imgsz, [640, 640]);
    assert.equal(model().parameterCount(), 2_036_544);
  });

  for (const c of CASES) {
    it(`predict-path session reproduces ${c.output}`, async () => {
      const out = await model().forward(io.get(c.input)!);
      const err = maxErrors(out, io.get(c.output)!);
      assert.ok(err.box <= BOX_TOL, `box error ${err.box}`);
      assert.ok(err.score <= SCORE_TOL, `score error ${err.score}`);
    });
  }

  it('raw head maps match raw_level{0,1,2} before decoding', async () => {
    const graph = buildInferenceGraph(model().network!, { batch: 1, height: 640, width: 640, rawOutputs: true });
    const session = await ort.InferenceSession.create(serializeModel(graph));
    const x = io.get('input_1x3x640x640')!;
    const out = await session.run({ images: new ort.Tensor('float32', x.data as Float32Array, x.dims) });
    for (let k = 0; k < 3; k++) {
      const ref = io.get(`raw_level${k}_1x3x640x640`)!;
      const got = out[`raw_level${k}`]!;
      assert.deepEqual([...got.dims], ref.dims);
      const a = got.data as Float32Array;
      const e = ref.data as Float32Array;
      let m = 0;
      for (let i = 0; i < e.length; i++) m = Math.max(m, Math.abs(a[i]! - e[i]!));
      assert.ok(m <= 1e-3, `raw level ${k} max error ${m}`);
    }
    await session.release();
  });

  it('exported dynamic ONNX reloads through LibreYOLO() and reproduces both shapes', async () => {
    const path = await model().export({ format: 'onnx', dynamic: true, output_path: join(dir, 'yolo9t_dynamic.onnx') });
    const summary = summarizeModel(new Uint8Array(readFileSync(path)));
    assert.equal(summary.inputs[0]!.name, 'images');
    assert.deepEqual(summary.inputs[0]!.shape, ['batch', 3, 'height', 'width']);
    assert.equal(summary.outputs[0]!.name, 'output');
    assert.equal(summary.opset, 13);
    assert.equal(summary.metadata.get('model_family'), 'yolo9');
    assert.equal(summary.metadata.get('dynamic'), 'True');
    assert.equal(JSON.parse(summary.metadata.get('names')!)['0'], 'class0');
    const exported = await LibreYOLO(path);
    try {
      assert.equal(exported.format, 'onnx');
      assert.equal(exported.size, 't');
      for (const c of CASES) {
        const err = maxErrors(await exported.forward(io.get(c.input)!), io.get(c.output)!);
        assert.ok(err.box <= BOX_TOL && err.score <= SCORE_TOL, `${c.output}: box ${err.box}, score ${err.score}`);
      }
    } finally {
      await exported.close();
    }
  });

  it('exported static ONNX (batch 2, 320x256) reproduces the batch-2 reference', async () => {
    const path = await model().export({ format: 'onnx', batch: 2, imgsz: [320, 256], output_path: join(dir, 'yolo9t_static.onnx') });
    const exported = await LibreYOLO(path);
    try {
      const c = CASES[1]!;
      const err = maxErrors(await exported.forward(io.get(c.input)!), io.get(c.output)!);
      assert.ok(err.box <= BOX_TOL && err.score <= SCORE_TOL, `box ${err.box}, score ${err.score}`);
    } finally {
      await exported.close();
    }
  });
});
