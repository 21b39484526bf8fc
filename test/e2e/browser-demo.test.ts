/**
 * The browser demo (examples/browser/): `npm run demo`'s server starts, its page loads in chromium
 * without console errors or failed requests, runs cross-origin isolated, and detects on an image
 * chosen in its file input what the Node build detects on the same file.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { LibreYOLO } from '../../src/index.ts';
import { withBrowserPage } from '../helpers/browser-page.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('browser demo', { timeout: 900_000 }, () => {
  it('serves a page that detects on a chosen image as Node does', async (t) => {
    const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-demo-test-'));
    const server = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'examples', 'browser', 'serve.mjs'), '--port', '0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(async () => {
      if (server.exitCode === null) {
        server.kill('SIGTERM');
        await once(server, 'exit');
      }
    });
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      server.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /(http:\/\/127\.0\.0\.1:\d+\/index\.html)/.exec(out);
        if (m) resolve(m[1]!);
      });
      server.once('exit', (code) => reject(new Error(`the demo server exited (code ${code}) before printing its URL: ${out}`)));
    });
    const sample = join(ROOT, 'assets', 'sample.jpg');
    const node = await LibreYOLO(join(ROOT, 'assets', 'LibreYOLO9t-shapes.pt'), { progress: false, threads: 2 });
    const want = await node.predictOne(sample).finally(() => node.close());
    const got = await withBrowserPage(tmp, url, async ({ page, problems }) => {
      await page.waitForFunction("document.getElementById('status').textContent.includes('ready')", { timeout: 300_000 });
      const input = await page.$('#file');
      await input!.uploadFile(sample);
      await page.waitForFunction("document.getElementById('status').textContent.includes('detections')", { timeout: 300_000 });
      const status = await page.evaluate("document.getElementById('status').textContent") as string;
      const rows = await page.evaluate('window.lastResults.toJSON()') as Array<{ name: string; confidence: number; box: { x1: number; y1: number; x2: number; y2: number } }>;
      const canvas = await page.evaluate("[document.getElementById('canvas').width, document.getElementById('canvas').height]") as number[];
      return { status, rows, canvas, problems: [...problems] };
    });
    assert.deepEqual(got.problems, []);
    assert.match(got.status, /cross-origin isolated true/);
    assert.match(got.status, /\d+ ms \(preprocess [\d.]+, inference [\d.]+, postprocess [\d.]+ ms\)/);
    assert.deepEqual(got.canvas, [want.orig_shape[1], want.orig_shape[0]], 'the canvas shows the image at its size');
    // chromium and sharp decode the JPEG a little differently: the confident detections agree.
    const strong = want.summary().filter((r) => r.confidence > 0.5);
    assert.ok(strong.length >= 3, `Node finds the sample's shapes: ${strong.length}`);
    for (const w of strong) {
      const hit = got.rows.find((r) => r.name === w.name && Math.abs(r.box.x1 - w.box.x1) < 3 && Math.abs(r.box.y1 - w.box.y1) < 3 && Math.abs(r.box.x2 - w.box.x2) < 3 && Math.abs(r.box.y2 - w.box.y2) < 3);
      assert.ok(hit, `the page finds ${w.name} at ${JSON.stringify(w.box)}: ${JSON.stringify(got.rows.map((r) => [r.name, r.box]))}`);
    }
    assert.match(got.status, new RegExp(`^${got.rows.length} detections`));
  });
});
