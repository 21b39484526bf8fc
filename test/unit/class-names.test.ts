/**
 * Class names with control and bidi characters (`a\x01b`, U+202E) load, as in the original, and are
 * escaped wherever they are written: terminal lines (summaryLine, Results.toString), SVG labels, the
 * browser's canvas labels (same helper), JSON (as JSON). Lone surrogates stay refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Boxes, Results, summaryLine } from '../../src/predict/results.ts';
import { detectionsSvg } from '../../src/predict/save.ts';
import { checkNames } from '../../src/weights/model-metadata.ts';
import { printable } from '../../src/util/text.ts';

const CONTROL = 'a\u0001b';
const BIDI = 'x\u202Eevil';
// Anything a terminal or a renderer would act on rather than show.
const RAW = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

function result(): Results {
  return new Results({
    boxes: new Boxes(Float32Array.of(10, 10, 50, 50, 60, 60, 90, 90), Float32Array.of(0.9, 0.8), Float32Array.of(0, 1)),
    names: checkNames({ 0: CONTROL, 1: BIDI }, 'names.pt', 2),
    orig_shape: [100, 100],
  });
}

describe('class names with control and bidi characters', () => {
  it('load from checkpoint metadata (dict, list and JSON text); a lone surrogate is still refused', () => {
    assert.deepEqual(checkNames({ 0: CONTROL, 1: BIDI }, 'x.pt', 2), { 0: CONTROL, 1: BIDI });
    assert.deepEqual(checkNames([CONTROL, BIDI], 'x.pt', 2), { 0: CONTROL, 1: BIDI });
    assert.deepEqual(checkNames(JSON.stringify({ 0: CONTROL, 1: BIDI }), 'x.onnx', 2), { 0: CONTROL, 1: BIDI });
    assert.throws(() => checkNames({ 0: 'a\ud800b' }, 'x.pt', 1), (e: Error & { code?: string }) => e.code === 'model_metadata_invalid' && /lone surrogate/.test(e.message));
  });

  it('printable() writes each control and bidi character as its escape and leaves the rest', () => {
    assert.equal(printable(CONTROL), 'a\\u0001b');
    assert.equal(printable(BIDI), 'x\\u202eevil');
    assert.equal(printable('tab\there\u2066'), 'tab\\u0009here\\u2066');
    assert.equal(printable('café 猫 🐈'), 'café 猫 🐈');
  });

  it('terminal: the per-image summary and Results.toString() carry escapes, no raw control or bidi character', () => {
    const r = result();
    assert.equal(summaryLine(r), 'a\\u0001b: 1, x\\u202eevil: 1');
    assert.doesNotMatch(String(r), RAW);
    assert.match(String(r), /a\\u0001b: 1, x\\u202eevil: 1/);
  });

  it('SVG labels: escaped text, well-formed XML characters only', () => {
    const svg = detectionsSvg(100, 100, result());
    assert.doesNotMatch(svg, RAW);
    assert.match(svg, />a\\u0001b 0\.90</);
    assert.match(svg, />x\\u202eevil 0\.80</);
  });

  it('JSON: the names as they are, JSON-escaped, and read back unchanged', () => {
    const text = JSON.stringify(result());
    assert.match(text, /"a\\u0001b"/);
    assert.deepEqual((JSON.parse(text) as Array<{ name: string }>).map((d) => d.name), [CONTROL, BIDI]);
  });
});
