/**
 * Child process of test/e2e/shape-probe.test.ts: probeShapes on a chain of `depth` elementwise ops over
 * one [8, 1024, 1024] float32 tensor (32 MB per value) beside a data-dependent one (NonZero, whose
 * dims only a run tells), then prints the values' shapes and its own peak RSS as one JSON line. A
 * probe that kept every value alive would hold depth x 32 MB.
 */
import { GraphBuilder } from '../../src/graph/builder.ts';
import { probeShapes } from '../../src/graph/autodiff/shapes.ts';
import { zeros } from '../../src/graph/tensor.ts';
import { peakRssKb } from './peak-rss.ts';

const depth = Number(process.argv[2] ?? 40);
const b = new GraphBuilder('shape_probe_chain');
const dims = [8, 1024, 1024];
let v = b.input('x', 'float32', dims);
const values: string[] = [];
for (let k = 0; k < depth; k++) {
  v = b.op(k % 2 ? 'Neg' : 'Relu', [v]);
  values.push(v);
}
const mask = b.op('Greater', [v, b.scalar(0)]);
const shape = b.op('Shape', [mask]);
const m = b.input('m', 'float32', [6]);
const nonzero = b.op('NonZero', [m]);
b.output('y', b.op('ReduceSum', [v], { keepdims: { i: 0 } }), 'float32', []);
b.output('nz', nonzero, 'int64', [1, 'n']);
const shapes = await probeShapes(b.graph, {
  x: zeros('float32', dims),
  m: { dtype: 'float32', dims: [6], data: Float32Array.of(0, 1, 0, 2, 3, 0) },
});
const meta = (name: string) => shapes.get(name);
process.stdout.write(`${JSON.stringify({
  peakRssMb: peakRssKb() / 1024,
  chain: values.map(meta),
  mask: meta(mask),
  shape: meta(shape),
  nonzero: meta(nonzero),
})}\n`);
