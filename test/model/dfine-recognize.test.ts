/** D-FINE checkpoint recognition (dfine.md 2.2): size from shapes at every size, family only from metadata or file name. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { DFINE_SIZES } from '../../src/models/dfine/config.ts';
import { DfineNetwork } from '../../src/models/dfine/network.ts';
import { dfineSizeFromShapes, looksLikeDfineOrDeim, resolveDfineOrDeim } from '../../src/models/dfine/recognize.ts';
import { loadCheckpointFile } from '../../src/weights/checkpoint.ts';
import { fixture } from '../helpers/fixtures.ts';

describe('D-FINE checkpoint recognition', () => {
  it('the reference checkpoint is D-FINE-like and size n by shapes', async () => {
    const sd = (await loadCheckpointFile(fixture('dfinen_ref.pt'))).stateDict;
    assert.ok(looksLikeDfineOrDeim(sd.keys()));
    assert.equal(dfineSizeFromShapes(sd), 'n');
  });

  for (const size of DFINE_SIZES) {
    it(`size ${size} is read back from the shapes of its own state dict (module. prefix too)`, () => {
      const net = new DfineNetwork({ size, nc: 80 });
      const sd = new Map<string, HostTensor>([...net.namedTensors()].map(([k, p]) => [`module.${k}`, p.value]));
      assert.equal(dfineSizeFromShapes(sd), size);
    });
  }

  it('D-FINE vs DEIM: metadata first, then the file name; otherwise a clear ambiguity error', () => {
    assert.equal(resolveDfineOrDeim('deim', 'LibreDFINEn.pt'), 'deim');
    assert.equal(resolveDfineOrDeim(undefined, '/w/LibreDFINEs.pt'), 'dfine');
    assert.equal(resolveDfineOrDeim(undefined, 'LibreDEIMx.pt'), 'deim');
    assert.equal(resolveDfineOrDeim(undefined, 'dfine_hgnetv2_l_coco.pth'), 'dfine');
    assert.equal(resolveDfineOrDeim(undefined, 'deim_hgnetv2_m_coco.pth'), 'deim');
    assert.throws(() => resolveDfineOrDeim(undefined, 'weights/best.pt'),
      (e: Error & { code?: string }) => e.code === 'model_load_failed' && /Ambiguous D-FINE\/DEIM checkpoint 'best\.pt'/.test(e.message));
  });
});
