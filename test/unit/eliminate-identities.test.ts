/** eliminateIdentities: readers bypass Identity chains; an output Identity hands its name to the value it copies. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Graph, type Node } from '../../src/graph/ir.ts';
import { eliminateIdentities } from '../../src/graph/passes/eliminate-identities.ts';

const node = (op: string, inputs: string[], outputs: string[]): Node => ({ op, name: `/${outputs[0]}`, inputs, outputs, attrs: {} });

function sample(): Graph {
  const g = new Graph('t');
  g.inputs = [{ name: 'x', dtype: 'float32', shape: [2] }];
  g.nodes = [
    node('Relu', ['x'], ['a']),
    node('Identity', ['a'], ['a1']), // a stop-gradient
    node('Identity', ['a1'], ['a2']), // and a composite's renamed output
    node('Mul', ['a2', 'a1'], ['m']),
    node('Identity', ['m'], ['out.m']), // names a graph output: m takes the name
    node('Identity', ['x'], ['out.x']), // copies a graph input: stays
    node('Neg', ['m'], ['n']),
  ];
  g.outputs = [{ name: 'out.m', dtype: 'float32', shape: [2] }, { name: 'out.x', dtype: 'float32', shape: [2] }, { name: 'n', dtype: 'float32', shape: [2] }];
  return g;
}

describe('eliminateIdentities', () => {
  it('bypasses chains and renames an output-copied value, keeping every graph output', () => {
    const g = sample();
    assert.equal(eliminateIdentities(g), 3);
    assert.deepEqual(g.nodes.map((n) => `${n.op}(${n.inputs.join(',')})->${n.outputs.join(',')}`), [
      'Relu(x)->a', 'Mul(a,a)->out.m', 'Identity(x)->out.x', 'Neg(out.m)->n',
    ]);
    const produced = new Set(g.nodes.flatMap((n) => n.outputs));
    for (const o of g.outputs) assert.ok(produced.has(o.name), o.name);
  });

  it('keeps an output Identity whose value is itself a graph output', () => {
    const g = sample();
    g.outputs.push({ name: 'm', dtype: 'float32', shape: [2] });
    eliminateIdentities(g);
    assert.ok(g.nodes.some((n) => n.op === 'Identity' && n.inputs[0] === 'm' && n.outputs[0] === 'out.m'));
    assert.ok(g.nodes.some((n) => n.op === 'Mul' && n.outputs[0] === 'm'));
  });
});
