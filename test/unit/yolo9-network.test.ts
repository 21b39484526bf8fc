/** YOLOv9 architecture: parameter and key counts per size, both key spellings, graph naming. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Yolo9Network } from '../../src/models/yolo9/network.ts';
import { defaultClassWidth, type Yolo9Size } from '../../src/models/yolo9/config.ts';
import { yolo9Family, detectKeyLayout } from '../../src/models/yolo9/family.ts';
import { GraphBuilder } from '../../src/graph/builder.ts';
import { buildInferenceGraph } from '../../src/runtime/graph-engine.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';

const EXPECTED: Record<Yolo9Size, { params: number; keys: number }> = {
  t: { params: 2_036_544, keys: 1338 },
  s: { params: 7_226_192, keys: 1338 },
  m: { params: 20_123_984, keys: 906 },
  c: { params: 25_498_736, keys: 936 },
};

describe('YOLOv9 network', () => {
  for (const [size, want] of Object.entries(EXPECTED) as Array<[Yolo9Size, { params: number; keys: number }]>) {
    it(`size ${size} has the original's parameter and state_dict key counts at nc=80`, () => {
      const net = new Yolo9Network({ size, nc: 80, classWidth: defaultClassWidth(size, 80) });
      assert.equal(net.parameterCount(), want.params);
      assert.equal([...net.namedTensors()].length, want.keys);
    });
  }

  it('class-tower width follows nc for t and is read back from a checkpoint', () => {
    assert.equal(defaultClassWidth('t', 20), 64);
    assert.equal(defaultClassWidth('t', 80), 80);
    assert.equal(defaultClassWidth('t', 200), 100);
    assert.equal(defaultClassWidth('s', 1), 128);
    const fresh = yolo9Family.create({ size: 't', nc: 3 });
    const sd = new Map<string, HostTensor>([...fresh.namedTensors()].map(([k, p]) => [k, p.value]));
    // Sticky width: a t model fine-tuned from COCO keeps its 80-wide class tower with 3 classes.
    const wide = new Yolo9Network({ size: 't', nc: 3, classWidth: 80 });
    const wideSd = new Map<string, HostTensor>([...wide.namedTensors()].map(([k, p]) => [k, p.value]));
    assert.equal(yolo9Family.create({ size: 't', stateDict: wideSd }).parameterCount(), wide.parameterCount());
    assert.equal(yolo9Family.create({ size: 't', stateDict: sd }).nc, 3);
  });

  it('loads the newer key spelling (conv/bottleneck/anchor_convs) onto the same tensors', () => {
    const net = yolo9Family.create({ size: 't', nc: 80 });
    const legacy = [...net.namedTensors('legacy')];
    const current = [...net.namedTensors('current')];
    assert.ok(current.some(([k]) => k === 'backbone.elan2.conv2.0.bottleneck.1.conv1.conv2.bn.bias'));
    assert.ok(current.some(([k]) => k === 'head.anchor_convs.1.2.bias'));
    assert.ok(legacy.some(([k]) => k === 'backbone.elan2.cv2.0.m.1.cv1.conv2.bn.bias'));
    const sd = new Map<string, HostTensor>(current.map(([k, p]) => [k, p.value]));
    assert.equal(detectKeyLayout(sd), 'current');
    assert.equal(yolo9Family.detectSize(sd), 't');
    const loaded = yolo9Family.create({ size: 't', stateDict: sd });
    const a = [...loaded.namedTensors('legacy')];
    for (let k = 0; k < a.length; k++) assert.equal(a[k]![1].value, legacy[k]![1].value, a[k]![0]);
  });

  it('detects size from the stem and elan1 widths', () => {
    for (const size of ['t', 's', 'm', 'c'] as const) {
      const net = new Yolo9Network({ size, nc: 80, classWidth: defaultClassWidth(size, 80) });
      const sd = new Map<string, HostTensor>([...net.namedTensors()].map(([k, p]) => [k, p.value]));
      assert.equal(yolo9Family.detectSize(sd), size);
      assert.ok(yolo9Family.canLoad([...sd.keys()]));
    }
    assert.equal(yolo9Family.canLoad(['model.0.conv.weight', 'model.1.bn.bias']), false);
  });

  it('names every node readably and folds all BatchNorms for inference', () => {
    const net = yolo9Family.create({ size: 't', nc: 80 });
    const b = new GraphBuilder();
    net.emitInference(b, { batch: 1, height: 640, width: 640 });
    const names = new Set(b.graph.nodes.map((n) => n.name));
    assert.equal(names.size, b.graph.nodes.length, 'node names are unique');
    assert.ok(names.has('/backbone/conv0/conv/Conv'));
    assert.ok(names.has('/backbone/conv0/bn/BatchNormalization'));
    assert.ok(b.graph.nodes.every((n) => n.name.startsWith('/')));
    const optimized = buildInferenceGraph(net, { batch: 1, height: 640, width: 640 });
    assert.equal(optimized.nodes.filter((n) => n.op === 'BatchNormalization').length, 0);
    // 42 RepConvN pairs become single 3x3 convolutions.
    assert.equal(b.graph.nodes.filter((n) => n.op === 'Conv').length - optimized.nodes.filter((n) => n.op === 'Conv').length, 42);
  });
});
