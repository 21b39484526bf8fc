/** graph/state-dict.ts: load_state_dict's report (copied, mismatched, missing, unexpected) and strict mode. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LibreYOLOError } from '../../src/errors.ts';
import { Parameter } from '../../src/graph/module.ts';
import { loadStateDict, snapshot, stateDictOf } from '../../src/graph/state-dict.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';

const f32 = (dims: number[], ...values: number[]): HostTensor => ({ dtype: 'float32', dims, data: Float32Array.from(values) });

function net(): { namedTensors(): Iterable<[string, Parameter]> } {
  const tensors: Array<[string, Parameter]> = [
    ['conv.weight', new Parameter(f32([2], 0, 0), 'parameter')],
    ['conv.bias', new Parameter(f32([1], 0), 'parameter')],
    ['bn.running_mean', new Parameter(f32([2], 0, 0), 'buffer')],
  ];
  return { namedTensors: () => tensors };
}

describe('loadStateDict', () => {
  it('copies matching keys and reports the others by key', () => {
    const m = net();
    const sd = new Map([['conv.weight', f32([2], 1, 2)], ['conv.bias', f32([2], 3, 4)], ['head.weight', f32([1], 5)]]);
    const r = loadStateDict(m, sd);
    assert.deepEqual(r, { copied: 1, mismatched: ['conv.bias'], missing: ['bn.running_mean'], unexpected: ['head.weight'] });
    const now = stateDictOf(m);
    assert.deepEqual([...now.get('conv.weight')!.data], [1, 2]);
    assert.deepEqual([...now.get('conv.bias')!.data], [0], 'a mismatched key is left as it was');
  });

  it('strict refuses a partial match before copying anything', () => {
    const m = net();
    const sd = new Map([['conv.weight', f32([2], 1, 2)], ['conv.bias', f32([1], 3)]]);
    assert.throws(() => loadStateDict(m, sd, { strict: true }), (e: unknown) =>
      e instanceof LibreYOLOError && e.code === 'model_load_failed' && /1 missing \(bn\.running_mean\)/.test(e.message));
    assert.deepEqual([...stateDictOf(m).get('conv.weight')!.data], [0, 0]);
    sd.set('bn.running_mean', f32([2], 7, 8));
    assert.equal(loadStateDict(m, sd, { strict: true }).copied, 3);
  });

  it('snapshot copies the data, stateDictOf does not', () => {
    const m = net();
    const live = stateDictOf(m);
    const copy = snapshot(live);
    (live.get('conv.weight')!.data as Float32Array)[0] = 9;
    assert.equal(copy.get('conv.weight')!.data[0], 0);
    assert.equal(stateDictOf(m).get('conv.weight')!.data[0], 9);
  });
});
