/**
 * Frozen parameters (requires_grad=False, `Parameter.requiresGrad`): the training graph feeds them as
 * inputs without a gradient output, and the optimizer leaves them out of its groups.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { yolo9Family } from '../../src/models/yolo9/family.ts';
import { buildTrainGraph } from '../../src/train/graph.ts';
import { Optimizer } from '../../src/train/optimizer.ts';

describe('frozen parameters in training', () => {
  it('get no gradient output and no optimizer slot, but are still fed', async () => {
    const net = yolo9Family.create({ size: 't', nc: 1 });
    const params = [...net.namedTensors()].filter(([, p]) => p.kind === 'parameter');
    const [frozenKey, frozen] = params[0]!;
    const [trainedKey] = params[1]!;
    frozen.requiresGrad = false;
    const g = await buildTrainGraph(yolo9Family, net, { batch: 1, height: 64, width: 64, maxTargets: 1 });
    assert.ok(!g.parameters.includes(frozenKey), `${frozenKey} is not differentiated`);
    assert.ok(g.buffers.includes(frozenKey), `${frozenKey} is still an input`);
    assert.ok(g.graph.inputs.some((i) => i.name === frozenKey));
    assert.ok(!g.graph.outputs.some((o) => o.name === `grad.${frozenKey}`));
    assert.ok(g.graph.outputs.some((o) => o.name === `grad.${trainedKey}`));
    const opt = Optimizer.create(net.namedTensors(), { optimizer: 'adamw' });
    const inGroups = opt.groups.flatMap((gr) => gr.params.map((p) => p.key));
    assert.ok(!inGroups.includes(frozenKey));
    assert.ok(inGroups.includes(trainedKey));
  });
});
