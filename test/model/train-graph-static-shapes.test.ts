/**
 * Every trainable family's train graph has dims ORT's shape inference can tell without running it,
 * at one size and built for several (multi-scale), so building one costs no forward pass: an open
 * dim sends probeShapes to a run of the whole train-mode forward in a session of its own (RF-DETR's
 * cls-token Expand to a Shape-derived batch did: 2.1 s of a 2.2 s build, 23 s of the 27 s it took
 * to open an 11-size RF-DETR-n train session).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import '../../src/models/index.ts';
import { shapeProbeRuns } from '../../src/graph/autodiff/shapes.ts';
import { familySizes, listFamilies } from '../../src/models/registry.ts';
import { buildTrainGraph } from '../../src/train/graph.ts';

/** A side every trainable family trains at (D-FINE-n's decoder needs 300 proposal tokens from strides 16 and 32). */
const SIDE = 320;

describe('train graphs need no shape-probe run', () => {
  for (const family of listFamilies().filter((f) => f.train)) {
    const size = familySizes(family)[0]!;
    for (const anySize of [false, true]) {
      it(`${family.name} ${size} at ${SIDE}${anySize ? ', built for any size' : ''}`, async () => {
        const network = family.create({ size });
        const before = shapeProbeRuns();
        await buildTrainGraph(family, network, { batch: 2, height: SIDE, width: SIDE, maxTargets: 8, anySize });
        assert.equal(shapeProbeRuns() - before, 0, `${family.name}'s train graph has dims only a run can tell`);
      });
    }
  }
});
