/**
 * Optimizer, LR schedule and EMA: the update rules worked out by hand from torch's definitions,
 * the original's parameter groups on a real yolo9t network, and torch-layout state dicts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Parameter } from '../../src/graph/module.ts';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { ModelEMA } from '../../src/train/ema.ts';
import { buildParamGroups, Optimizer } from '../../src/train/optimizer.ts';
import { LRSchedule } from '../../src/train/schedule.ts';
import { PyOrderedDict, type PyValue } from '../../src/weights/pickle/index.ts';
import { readTorchCheckpoint, writeTorchCheckpoint } from '../../src/weights/torch-checkpoint.ts';

function param(values: number[], kind: 'parameter' | 'buffer' = 'parameter'): Parameter {
  return new Parameter({ dtype: 'float32', dims: [values.length], data: new Float32Array(values) }, kind);
}

/** A conv weight, a BN (weight, bias, running stats) and a conv bias: one of each group. */
function tinyModel(): Array<[string, Parameter]> {
  return [
    ['conv.weight', param([1, -2])],
    ['bn.weight', param([1])],
    ['bn.bias', param([0.5])],
    ['bn.running_mean', param([0], 'buffer')],
    ['bn.running_var', param([1], 'buffer')],
    ['head.bias', param([2])],
  ];
}

const close = (a: number, b: number, tol = 1e-6): void => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${a} != ${b}`);
const value = (named: Array<[string, Parameter]>, key: string): Float32Array => named.find(([k]) => k === key)![1].value.data as Float32Array;

describe('parameter groups', () => {
  it('split BN weights (g0), other weights (g1) and biases (g2) on yolo9t', () => {
    const net = yolo9Family.create({ size: 't', nc: 80 });
    const named = [...net.namedTensors()];
    const { g0, g1, g2 } = buildParamGroups(named);
    const bnCount = named.filter(([k]) => k.endsWith('.running_mean')).length;
    assert.equal(g0.length, bnCount);
    assert.ok(g0.every((p) => p.key.endsWith('bn.weight')));
    // every ConvBN has one conv weight; the 6 head output convs add a weight and a bias each
    assert.equal(g1.length, bnCount + 6);
    assert.equal(g2.length, bnCount + 6);
    assert.ok(g2.every((p) => p.key.endsWith('.bias')));
    const total = [...g0, ...g1, ...g2].reduce((n, p) => n + p.param.value.data.length, 0);
    assert.equal(total, net.parameterCount());
  });

  it('weight decay per group: SGD/Adam decay g1 only, AdamW adds 0.01 on g0 and g2', () => {
    for (const [name, wd] of [['sgd', [0, 5e-4, 0]], ['adam', [0, 5e-4, 0]], ['adamw', [0.01, 5e-4, 0.01]]] as const) {
      const opt = Optimizer.create(tinyModel(), { optimizer: name });
      assert.deepEqual(opt.groups.map((g) => g.weightDecay), wd, name);
      assert.deepEqual(opt.groups.map((g) => g.params.map((p) => p.key)), [['bn.weight'], ['conv.weight'], ['bn.bias', 'head.bias']]);
    }
  });

  it('rejects an unknown optimizer name', () => {
    assert.throws(() => Optimizer.create(tinyModel(), { optimizer: 'rmsprop' as never }), /Unknown optimizer 'rmsprop'/);
  });
});

describe('SGD (torch semantics)', () => {
  it('Nesterov momentum, worked by hand', () => {
    // p=1, g=0.5, lr=0.1, momentum=0.9, no decay:
    // step 1: buf = g = 0.5; d = g + 0.9*buf = 0.95; p = 1 - 0.095 = 0.905
    // step 2: buf = 0.9*0.5 + 0.5 = 0.95; d = 0.5 + 0.9*0.95 = 1.355; p = 0.905 - 0.1355 = 0.7695
    const named: Array<[string, Parameter]> = [['bn.weight', param([1])], ['bn.running_mean', param([0], 'buffer')]];
    const opt = Optimizer.create(named, { lr0: 0.1, momentum: 0.9, nesterov: true });
    const g = new Map([['bn.weight', new Float32Array([0.5])]]);
    opt.step(g);
    close(value(named, 'bn.weight')[0]!, 0.905);
    opt.step(g);
    close(value(named, 'bn.weight')[0]!, 0.7695);
  });

  it('weight decay enters the gradient (and the momentum buffer) of g1 only', () => {
    const named = tinyModel();
    const opt = Optimizer.create(named, { lr0: 0.1, momentum: 0.937, weightDecay: 0.1, nesterov: true });
    const grads = new Map([
      ['conv.weight', new Float32Array([0.2, 0.4])],
      ['bn.weight', new Float32Array([0.3])],
      ['bn.bias', new Float32Array([-0.1])],
      ['head.bias', new Float32Array([1])],
    ]);
    opt.step(grads);
    // conv.weight[0]: d = 0.2 + 0.1*1 = 0.3; buf = 0.3; d' = 0.3 + 0.937*0.3 = 0.5811; p = 1 - 0.05811
    close(value(named, 'conv.weight')[0]!, 1 - 0.05811);
    // conv.weight[1]: d = 0.4 + 0.1*(-2) = 0.2; d' = 0.2*1.937 = 0.3874; p = -2 - 0.03874
    close(value(named, 'conv.weight')[1]!, -2 - 0.03874);
    // no decay on BN weight and biases: p -= lr * g * 1.937
    close(value(named, 'bn.weight')[0]!, 1 - 0.1 * 0.3 * 1.937);
    close(value(named, 'bn.bias')[0]!, 0.5 + 0.1 * 0.1 * 1.937);
    close(value(named, 'head.bias')[0]!, 2 - 0.1 * 1.937);
    // running stats are buffers: never touched
    assert.equal(value(named, 'bn.running_mean')[0], 0);
  });

  it('plain momentum (nesterov=false) steps by the buffer; a missing gradient leaves the parameter alone', () => {
    const named = tinyModel();
    const opt = Optimizer.create(named, { lr0: 0.5, momentum: 0.5, nesterov: false, weightDecay: 0 });
    const g = new Map([['head.bias', new Float32Array([1])]]);
    opt.step(g); // buf = 1; p = 2 - 0.5
    opt.step(g); // buf = 0.5 + 1 = 1.5; p = 1.5 - 0.75
    close(value(named, 'head.bias')[0]!, 0.75);
    close(value(named, 'bn.bias')[0]!, 0.5);
  });

  it('matches a float64 reference of torch.optim.SGD over many steps within float32 rounding', () => {
    const n = 1000;
    const init = Array.from({ length: n }, (_, i) => Math.sin(i) * 0.3);
    const named: Array<[string, Parameter]> = [['conv.weight', param(init)]];
    const opt = Optimizer.create(named, { lr0: 0.01 });
    const p = [...init];
    const buf = new Array<number>(n).fill(0);
    for (let s = 0; s < 20; s++) {
      const grad = Float32Array.from({ length: n }, (_, i) => Math.cos(i * 0.7 + s) * 0.1);
      opt.setLr(0.01 * (1 - s / 40));
      opt.step(new Map([['conv.weight', grad]]));
      const lr = 0.01 * (1 - s / 40);
      for (let i = 0; i < n; i++) {
        const d = grad[i]! + 5e-4 * p[i]!;
        buf[i] = s === 0 ? d : 0.937 * buf[i]! + d;
        p[i] = p[i]! - lr * (d + 0.937 * buf[i]!);
      }
    }
    const got = value(named, 'conv.weight');
    for (let i = 0; i < n; i++) close(got[i]!, p[i]!, 1e-5);
  });
});

describe('Adam / AdamW (torch semantics)', () => {
  it('first steps worked by hand', () => {
    // p=1, g=0.5, lr=0.1: m = 0.05, v = 0.00025; m_hat = 0.5, v_hat = 0.25; p -= 0.1 * 0.5 / (0.5 + 1e-8)
    const named: Array<[string, Parameter]> = [['w.weight', param([1])]];
    const adam = Optimizer.create(named, { optimizer: 'adam', lr0: 0.1, weightDecay: 0 });
    adam.step(new Map([['w.weight', new Float32Array([0.5])]]));
    close(value(named, 'w.weight')[0]!, 0.9);
    // step 2 with g = -0.5: m = 0.9*0.05 - 0.05 = -0.005, v = 0.999*0.00025 + 0.00025 = 0.00049975
    // m_hat = -0.005/0.19 ; v_hat = 0.00049975/0.001999 ; p -= 0.1 * m_hat / (sqrt(v_hat) + 1e-8)
    adam.step(new Map([['w.weight', new Float32Array([-0.5])]]));
    const mHat = -0.005 / (1 - 0.81);
    const vHat = 0.00049975 / (1 - 0.999 ** 2);
    close(value(named, 'w.weight')[0]!, 0.9 - 0.1 * mHat / Math.sqrt(vHat));
  });

  it('Adam adds decay to the gradient; AdamW decays the weight first', () => {
    const a: Array<[string, Parameter]> = [['w.weight', param([1])]];
    Optimizer.create(a, { optimizer: 'adam', lr0: 0.1, weightDecay: 0.1 }).step(new Map([['w.weight', new Float32Array([0.5])]]));
    // g' = 0.5 + 0.1 = 0.6; the first Adam step is lr * sign: p = 0.9
    close(value(a, 'w.weight')[0]!, 0.9);
    const b: Array<[string, Parameter]> = [['w.bias', param([1])]];
    Optimizer.create(b, { optimizer: 'adamw', lr0: 0.1 }).step(new Map([['w.bias', new Float32Array([0.5])]]));
    // bias is g2: AdamW default decay 0.01: p = 1 * (1 - 0.1*0.01) - 0.1 = 0.899
    close(value(b, 'w.bias')[0]!, 0.899);
  });
});

describe('optimizer state_dict', () => {
  it('has torch layout, survives a .pt round trip and restores the momentum', () => {
    const named = tinyModel();
    const opt = Optimizer.create(named, { lr0: 0.01 });
    const grads = new Map([['conv.weight', new Float32Array([0.2, 0.4])], ['bn.weight', new Float32Array([0.3])], ['bn.bias', new Float32Array([0.1])], ['head.bias', new Float32Array([1])]]);
    opt.step(grads);
    const bytes = writeTorchCheckpoint({ optimizer: opt.stateDict() });
    const top = readTorchCheckpoint(bytes, 'mem') as Map<string, PyValue>;
    const sd = top.get('optimizer') as Map<string, PyValue>;
    const groups = sd.get('param_groups') as Array<Map<string, PyValue>>;
    assert.equal(groups.length, 3);
    assert.deepEqual(groups.map((g) => g.get('params')), [[0], [1], [2, 3]]);
    assert.equal(groups[1]!.get('weight_decay'), 5e-4);
    assert.equal(groups[0]!.get('nesterov'), true);
    assert.equal(groups[0]!.get('momentum'), 0.937);
    const state = sd.get('state') as Map<number, Map<string, PyValue>>;
    assert.deepEqual([...state.keys()], [0, 1, 2, 3]);
    assert.ok(state.get(1)!.has('momentum_buffer'));

    // Same steps continued: from the original optimizer vs from a restored copy.
    const twin = tinyModel();
    for (const [k, p] of named) (value(twin, k)).set(p.value.data as Float32Array);
    const restored = Optimizer.create(twin, { lr0: 0.01 });
    restored.loadStateDict(sd);
    opt.step(grads);
    restored.step(grads);
    for (const [k] of named) assert.deepEqual(value(twin, k), value(named, k), k);
  });

  it('a mismatched optimizer state is an error', () => {
    const opt = Optimizer.create(tinyModel());
    assert.throws(() => opt.loadStateDict(new PyOrderedDict([['state', new Map()], ['param_groups', []]])), /parameter groups/);
  });
});

describe('LR schedule', () => {
  const base = { lr0: 0.01, epochs: 10, stepsPerEpoch: 10, warmupEpochs: 3, warmupLrStart: 1e-4, minLrRatio: 0.01 };
  it('linear: warm-up from min(1e-4, lr0), then linear decay to lr0 * min_lr_ratio', () => {
    const s = new LRSchedule({ ...base, scheduler: 'linear' });
    close(s.lr(0), 1e-4);
    close(s.lr(15), 1e-4 + (0.01 - 1e-4) * 15 / 30);
    close(s.lr(30), 0.01);
    close(s.lr(65), 0.01 - (0.01 - 1e-4) * 35 / 70);
    close(s.lr(100), 1e-4);
  });
  it('cos / warmcos: same warm-up, then half a cosine to min_lr', () => {
    for (const scheduler of ['cos', 'warmcos'] as const) {
      const s = new LRSchedule({ ...base, scheduler });
      close(s.lr(10), 1e-4 + (0.01 - 1e-4) / 3);
      close(s.lr(30), 0.01);
      close(s.lr(65), 1e-4 + 0.5 * (0.01 - 1e-4) * (1 + Math.cos(Math.PI * 0.5)));
      close(s.lr(100), 1e-4);
    }
  });
  it('lr_start is capped at lr0; no warm-up epochs means lr0 at step 0', () => {
    close(new LRSchedule({ ...base, lr0: 1e-5, scheduler: 'linear' }).lr(0), 1e-5);
    close(new LRSchedule({ ...base, warmupEpochs: 0, scheduler: 'linear' }).lr(0), 0.01);
  });
  it('lr_drop multiplies any scheduler by 0.1 from step stepsPerEpoch x lr_drop on; null never drops', () => {
    const s = new LRSchedule({ ...base, scheduler: 'linear', lrDrop: 5 });
    const plain = new LRSchedule({ ...base, scheduler: 'linear' });
    close(s.lr(49), plain.lr(49));
    close(s.lr(50), plain.lr(50) * 0.1);
    close(s.lr(100), plain.lr(100) * 0.1);
    close(new LRSchedule({ ...base, scheduler: 'cos', lrDrop: null }).lr(99), new LRSchedule({ ...base, scheduler: 'cos' }).lr(99));
  });
  it('rejects an unknown scheduler', () => {
    assert.throws(() => new LRSchedule({ ...base, scheduler: 'step' as never }), /Unknown scheduler/);
  });
});

describe('EMA', () => {
  it('decay ramps as 0.9999 * (1 - exp(-u/2000)); floats are averaged, int buffers are not', () => {
    const named: Array<[string, Parameter]> = [
      ['w.weight', param([1, 2])],
      ['bn.running_var', param([1], 'buffer')],
      ['bn.num_batches_tracked', new Parameter({ dtype: 'int64', dims: [], data: new BigInt64Array([0n]) }, 'buffer')],
    ];
    const ema = new ModelEMA(named);
    close(ema.decayAt(1), 0.9999 * (1 - Math.exp(-1 / 2000)));
    close(ema.decayAt(2000), 0.9999 * (1 - Math.exp(-1)));
    (named[0]![1].value.data as Float32Array).set([3, 4]);
    (named[1]![1].value.data as Float32Array).set([5]);
    (named[2]![1].value.data as BigInt64Array)[0] = 7n;
    ema.update(named);
    const d = ema.decayAt(1);
    close((ema.state.get('w.weight')!.data as Float32Array)[0]!, d * 1 + (1 - d) * 3);
    close((ema.state.get('w.weight')!.data as Float32Array)[1]!, d * 2 + (1 - d) * 4);
    close((ema.state.get('bn.running_var')!.data as Float32Array)[0]!, d * 1 + (1 - d) * 5);
    assert.equal((ema.state.get('bn.num_batches_tracked')!.data as BigInt64Array)[0], 0n);
    assert.equal(ema.updates, 1);
    // the copy is independent of the model
    assert.notEqual(ema.state.get('w.weight')!.data, named[0]![1].value.data);
  });
});
