/**
 * YOLOv9-t forward time in chromium (the browser bundle, onnxruntime-web WASM with threads in a
 * cross-origin isolated page) against onnxruntime-node CPU, in one run: the same yolo9t_ref.pt
 * loaded by both, batch 1 at 640, rounds alternating between the two so machine noise hits both
 * alike; prints each side's median and the ratio browser / Node.
 *
 *   node --import tsx bench/browser-forward.ts [--rounds 5] [--runs 5]
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildBrowser } from '../scripts/build-browser.ts';
import { LibreYOLO } from '../src/index.ts';
import { readSafetensors } from '../src/weights/safetensors.ts';
import { PAGE_HELPERS, staticServer, withBrowserPage } from '../test/helpers/browser-page.ts';
import { FIXTURES_DIR, fixture } from '../test/helpers/fixtures.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, runs: { type: 'string', default: '5' } } });
const rounds = Number(values.rounds);
const runs = Number(values.runs);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-bench-browser-'));
const { outDir } = await buildBrowser(join(tmp, 'dist'), { wasm: true });
writeFileSync(join(tmp, 'index.html'), `<!doctype html><link rel="icon" href="data:,"><script type="module">
  import * as libreyolo from '/dist/libreyolo.js'; ${PAGE_HELPERS} window.libreyolo = libreyolo;</script>`);
const input = readSafetensors(new Uint8Array(readFileSync(fixture('yolo9t_ref_io.safetensors'))), 'io').tensors.get('input_1x3x640x640')!;
const x = input.data as Float32Array;
writeFileSync(join(tmp, 'in.bin'), new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
const server = await staticServer({ '/dist/': outDir, '/fixtures/': FIXTURES_DIR, '/': tmp }, true);

const node = await LibreYOLO(fixture('yolo9t_ref.pt'), { progress: false });
const browserMs: number[] = [];
const nodeMs: number[] = [];
try {
  await withBrowserPage(tmp, `${server.url}/index.html`, async ({ page, problems }) => {
    const info = await page.evaluate(`(async () => {
      window.model = await window.libreyolo.LibreYOLO('/fixtures/yolo9t_ref.pt');
      window.input = { dtype: 'float32', dims: [1, 3, 640, 640], data: new Float32Array(await (await fetch('/in.bin')).arrayBuffer()) };
      await window.model.forward(window.input);
      return window.libreyolo.runtimeInfo();
    })()`) as { crossOriginIsolated: boolean; numThreads: number; ortVersion: string };
    await node.forward(input); // warm-up, as the page's first run
    for (let r = 0; r < rounds; r++) {
      browserMs.push(...await page.evaluate(`(async () => {
        const ms = [];
        for (let i = 0; i < ${runs}; i++) { const t0 = performance.now(); await window.model.forward(window.input); ms.push(performance.now() - t0); }
        return ms;
      })()`) as number[]);
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        await node.forward(input);
        nodeMs.push(performance.now() - t0);
      }
    }
    if (problems.length) throw new Error(`page problems: ${problems.join('; ')}`);
    console.log(`chromium: onnxruntime-web ${info.ortVersion} WASM, ${info.numThreads} threads, cross-origin isolated ${info.crossOriginIsolated}; `
      + `onnxruntime-node CPU, ${cpus().length} threads; ${rounds} alternating rounds x ${runs} runs each, batch 1 at 640`);
  });
} finally {
  await node.close();
  await server.close();
}
const b = median(browserMs);
const n = median(nodeMs);
console.log(`YOLOv9-t forward: chromium WASM ${b.toFixed(1)} ms, onnxruntime-node CPU ${n.toFixed(1)} ms, ratio browser/node ${(b / n).toFixed(2)}x`);
