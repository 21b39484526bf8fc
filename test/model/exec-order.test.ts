/**
 * ONNX Runtime's execution order (src/graph/passes/exec-order.ts): the depth-first walk from the
 * leaves that ortExecutionOrder reproduces is the order a profiled session really runs, on a graph
 * with branches, several leaves and a node that reads the same producer twice, whatever order its
 * nodes are listed in; orderLike lists an optimised graph (here: renamed, relisted) in the
 * reference's execution order; the graph passes that
 * keep ORT's planner and order from holding memory (hide-shapes.ts, fold-sizes.ts) do what they say.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import * as ort from 'onnxruntime-node';
import { Graph, type Node } from '../../src/graph/ir.ts';
import { serializeModel } from '../../src/graph/onnx.ts';
import { liveness, orderLike, ortExecutionOrder } from '../../src/graph/passes/exec-order.ts';
import { hidePerImageShapes } from '../../src/graph/passes/hide-shapes.ts';
import { foldStaticSizes, pruneDeadNodes } from '../../src/graph/passes/fold-sizes.ts';
import { findOrtFile } from '../../src/runtime/ort-profile-file.ts';

const N = 1024;

/** x -> a -> {b, c}; d = b + c; e = sigmoid(a) (a leaf); f = d * d; g = sigmoid(f); h = g + e. */
function branchy(): Graph {
  const g = new Graph('order');
  g.inputs.push({ name: 'x', dtype: 'float32', shape: [N] });
  const node = (op: string, name: string, inputs: string[]): void => {
    g.nodes.push({ op, name, inputs, outputs: [name], attrs: {} });
  };
  node('Sigmoid', 'a', ['x']);
  node('Sigmoid', 'b', ['a']);
  node('Neg', 'c', ['a']);
  node('Add', 'd', ['b', 'c']);
  node('Sigmoid', 'e', ['a']);
  node('Mul', 'f', ['d', 'd']);
  node('Sigmoid', 'g', ['f']);
  node('Neg', 'leaf', ['b']);
  node('Add', 'h', ['g', 'e']);
  g.outputs.push({ name: 'h', dtype: 'float32', shape: [N] }, { name: 'leaf', dtype: 'float32', shape: [N] });
  return g;
}

async function profiledOrder(g: Graph): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'exec-order-'));
  try {
    const prefix = join(dir, 'p');
    const s = await ort.InferenceSession.create(serializeModel(g), { graphOptimizationLevel: 'disabled', enableProfiling: true, profileFilePrefix: prefix, intraOpNumThreads: 1 });
    await s.run({ x: new ort.Tensor('float32', new Float32Array(N), [N]) });
    s.endProfiling();
    await s.release();
    const events = JSON.parse(readFileSync((await findOrtFile(prefix))!, 'utf8')) as Array<{ cat: string; name: string; ts: number }>;
    return events.filter((e) => e.cat === 'Node').sort((p, q) => p.ts - q.ts).map((e) => e.name.replace(/_kernel_time$/, ''));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("ONNX Runtime's execution order", () => {
  it('is the depth-first walk from the leaves that ortExecutionOrder reproduces', async () => {
    const g = branchy();
    const predicted = ortExecutionOrder(g).map((k) => g.nodes[k]!.name);
    assert.deepEqual(await profiledOrder(g), predicted);
    // And it is not simply the node order: the leaves are walked last-first.
    assert.notDeepEqual(predicted, g.nodes.map((n) => n.name));
    // The same graph with its nodes listed in another (still topological) order runs another way.
    const shuffled = branchy();
    shuffled.nodes = [0, 4, 1, 2, 7, 3, 5, 6, 8].map((k) => shuffled.nodes[k]!);
    assert.deepEqual(await profiledOrder(shuffled), ortExecutionOrder(shuffled).map((k) => shuffled.nodes[k]!.name));
  });

  it("orderLike lists an optimised graph's renumbered, renamed nodes in the reference's execution order", () => {
    const ref = branchy();
    const want = ortExecutionOrder(ref).map((k) => ref.nodes[k]!.name);
    // An "optimised" copy: listed in another valid order, one node renamed as a fusion names it,
    // one with a new output name (mapped through its name), one new node (after its producer).
    const opt = branchy();
    opt.nodes = [0, 4, 1, 7, 2, 3, 5, 6, 8].map((k) => ({ ...opt.nodes[k]!, inputs: [...opt.nodes[k]!.inputs], outputs: [...opt.nodes[k]!.outputs] } as Node));
    opt.nodes[2]!.name = 'b/SomeFusion/';
    const cOut = opt.nodes.find((n) => n.name === 'c')!;
    cOut.outputs = ['c2'];
    opt.nodes.find((n) => n.name === 'd')!.inputs[1] = 'c2';
    opt.nodes.push({ op: 'Identity', name: 'extra', inputs: ['f'], outputs: ['extra'], attrs: {} });
    const listed = orderLike(opt.nodes, ref).map((k) => opt.nodes[k]!.name.replace('b/SomeFusion/', 'b'));
    assert.deepEqual(listed.filter((n) => n !== 'extra'), want);
    assert.ok(listed.indexOf('extra') > listed.indexOf('f'));
  });

  it('liveness frees a value after its last reader and keeps graph outputs', () => {
    const g = branchy();
    const r = liveness(g, g.nodes.map((_, k) => k), () => 4);
    // After `a` (node 0) and before anything is freed: a alone; graph outputs stay to the end.
    assert.equal(r.curve[0], 4);
    assert.equal(r.after.at(-1), 8);
  });
});

describe('graph passes for ORT memory', () => {
  it('hidePerImageShapes unshapes the per-image inputs and opens the Reshape targets below them', () => {
    const g = new Graph('hide');
    g.inputs.push({ name: 'images', dtype: 'float32', shape: [2, 3, 4, 4] }, { name: 'w', dtype: 'float32', shape: [6, 8] });
    g.initializers.set('shape', { dtype: 'int64', dims: [2], data: BigInt64Array.of(6n, 16n) });
    g.nodes.push({ op: 'Reshape', name: 'r', inputs: ['images', 'shape'], outputs: ['r'], attrs: {} });
    g.nodes.push({ op: 'Reshape', name: 'rw', inputs: ['w', 'shape2'], outputs: ['rw'], attrs: {} });
    g.initializers.set('shape2', { dtype: 'int64', dims: [2], data: BigInt64Array.of(8n, 6n) });
    g.outputs.push({ name: 'r', dtype: 'float32', shape: [6, 16] }, { name: 'rw', dtype: 'float32', shape: [8, 6] });
    assert.deepEqual(hidePerImageShapes(g, ['images']), { inputs: 1, reshapes: 1 });
    assert.equal(g.inputs[0]!.unshaped, true);
    assert.equal(g.inputs[1]!.unshaped, undefined);
    const opened = g.initializers.get(g.nodes[0]!.inputs[1]!)!;
    assert.deepEqual(Array.from(opened.data as BigInt64Array), [6n, -1n]);
    // The weight's Reshape does not depend on the images: untouched.
    assert.equal(g.nodes[1]!.inputs[1], 'shape2');
  });

  it('foldStaticSizes turns Size and Shape of static values into constants; pruneDeadNodes drops unread nodes', () => {
    const g = new Graph('fold');
    g.inputs.push({ name: 'x', dtype: 'float32', shape: [2, 3] });
    g.nodes.push({ op: 'Size', name: 'n', inputs: ['x'], outputs: ['n'], attrs: {} });
    g.nodes.push({ op: 'Shape', name: 's', inputs: ['x'], outputs: ['s'], attrs: {} });
    g.nodes.push({ op: 'Neg', name: 'dead', inputs: ['x'], outputs: ['dead'], attrs: {} });
    g.nodes.push({ op: 'Cast', name: 'c', inputs: ['n'], outputs: ['c'], attrs: { to: { i: 1 } } });
    g.outputs.push({ name: 'c', dtype: 'float32', shape: [] }, { name: 's', dtype: 'int64', shape: [2] });
    const shapes = new Map([['x', { dtype: 'float32' as const, dims: [2, 3] }]]);
    assert.equal(foldStaticSizes(g, shapes), 1, 'Size folds; a Shape that is a graph output stays');
    assert.deepEqual(Array.from(g.initializers.get('n')!.data as BigInt64Array), [6n]);
    assert.equal(pruneDeadNodes(g), 1);
    assert.deepEqual(g.nodes.map((n) => n.name), ['s', 'c']);
  });
});
