/**
 * The browser build swaps the core modules listed in scripts/browser-seams.ts for their browser
 * counterparts. Each pair must export the same names, and where both can run here the browser side
 * must compute what the Node side computes.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { deflateRawSync, crc32 as nodeCrc32 } from 'node:zlib';
import * as nodePlatform from '../../src/util/platform.ts';
import * as webPlatform from '../../src/browser/platform.ts';
import { BROWSER_SEAMS } from '../../scripts/browser-seams.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';

describe('browser seams', () => {
  it('each browser counterpart exports the names of the module it replaces', async () => {
    const pairs = Object.entries(BROWSER_SEAMS);
    assert.ok(pairs.length >= 1);
    for (const [node, web] of pairs) {
      // Type-only exports vanish at run time on both sides alike.
      const a = Object.keys(await import(join(REPO_ROOT, 'src', node))).sort();
      const b = Object.keys(await import(join(REPO_ROOT, 'src', web))).sort();
      assert.deepEqual(b, a, `src/${web} exports what src/${node} does`);
    }
  });

  it('platform.browser inflate and CRC-32 agree with node:zlib, overflow included', () => {
    const text = new TextEncoder().encode('libreyolo '.repeat(5000));
    const packed = new Uint8Array(deflateRawSync(text));
    for (const p of [nodePlatform, webPlatform]) {
      assert.deepEqual(p.inflateRaw(packed, text.length), text);
      assert.throws(() => p.inflateRaw(packed, text.length - 1), p.InflateOverflowError);
      assert.equal(p.crc32(text), nodeCrc32(text) >>> 0);
      assert.equal(p.crc32(new Uint8Array(0)), 0);
    }
    assert.ok(webPlatform.cpuCount() >= 1);
  });
});
