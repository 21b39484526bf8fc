/**
 * YOLOv9-t forward time in chromium (the browser bundle, onnxruntime-web WASM with threads in a
 * cross-origin isolated page) against onnxruntime-node CPU, in one run: the same yolo9t_ref.pt
 * loaded by both (the same graph and session options: graph optimisation 'all', the same intra-op
 * thread count, no spinning), batch 1 at 640, rounds alternating between the two so machine noise
 * hits both alike. Prints what the page runs with (isolation, WASM threads, SIMD), each side's median
 * of the whole forward and of session.run alone (the rest is moving the 4.9 MB input and 2.8 MB
 * output between threads), the ratio browser / Node, and the load average.
 *
 *   node --import tsx bench/browser-forward.ts [--rounds 5] [--runs 5] [--web-threads N (the page's WASM threads; default the core count)]
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildBrowser } from '../scripts/build-browser.ts';
import { LibreYOLO } from '../src/index.ts';
import { readSafetensors } from '../src/weights/safetensors.ts';
import { PAGE_HELPERS, staticServer, withBrowserPage } from '../test/helpers/browser-page.ts';
import { FIXTURES_DIR, fixture } from '../test/helpers/fixtures.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, runs: { type: 'string', default: '5' }, 'web-threads': { type: 'string' } } });
const rounds = Number(values.rounds);
const runs = Number(values.runs);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = (): string => loadavg().map((v) => v.toFixed(2)).join(', ');

const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-bench-browser-'));
const { outDir } = await buildBrowser(join(tmp, 'dist'), { wasm: true });
writeFileSync(join(tmp, 'index.html'), `<!doctype html><link rel="icon" href="data:,"><script type="module">
  import * as libreyolo from '/dist/libreyolo.js'; ${PAGE_HELPERS} window.libreyolo = libreyolo;</script>`);
const input = readSafetensors(new Uint8Array(readFileSync(fixture('yolo9t_ref_io.safetensors'))), 'io').tensors.get('input_1x3x640x640')!;
const x = input.data as Float32Array;
writeFileSync(join(tmp, 'in.bin'), new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
const server = await staticServer({ '/dist/': outDir, '/fixtures/': FIXTURES_DIR, '/': tmp }, true);

const node = await LibreYOLO(fixture('yolo9t_ref.pt'), { progress: false });
const browser = { total: [] as number[], run: [] as number[] };
const nodeMs = { total: [] as number[], run: [] as number[] };
const loadBefore = load();
try {
  await withBrowserPage(tmp, `${server.url}/index.html`, async ({ page, problems }) => {
    const info = await page.evaluate(`(async () => {
      ${values['web-threads'] ? `window.libreyolo.configureRuntime({ threads: ${Number(values['web-threads'])} });` : ''}
      window.model = await window.libreyolo.LibreYOLO('/fixtures/yolo9t_ref.pt');
      window.input = { dtype: 'float32', dims: [1, 3, 640, 640], data: new Float32Array(await (await fetch('/in.bin')).arrayBuffer()) };
      await window.model.forward(window.input);
      // A module with one v128 instruction validates only where WASM SIMD is on.
      const simd = WebAssembly.validate(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]));
      return { ...(await window.libreyolo.runtimeInfo()), simd, cores: navigator.hardwareConcurrency };
    })()`) as { crossOriginIsolated: boolean; numThreads: number; ortVersion: string; simd: boolean; cores: number };
    await node.engine.forward(input); // warm-up, as the page's first run
    for (let r = 0; r < rounds; r++) {
      const b = await page.evaluate(`(async () => {
        const total = [], run = [];
        for (let i = 0; i < ${runs}; i++) {
          const t0 = performance.now();
          const r = await window.model.engine.forward(window.input);
          total.push(performance.now() - t0);
          run.push(r.runMs);
        }
        return { total, run };
      })()`) as { total: number[]; run: number[] };
      browser.total.push(...b.total);
      browser.run.push(...b.run);
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const r = await node.engine.forward(input);
        nodeMs.total.push(performance.now() - t0);
        nodeMs.run.push(r.runMs);
      }
    }
    if (problems.length) throw new Error(`page problems: ${problems.join('; ')}`);
    console.log(`chromium: onnxruntime-web ${info.ortVersion} WASM, ${info.numThreads} threads (of ${info.cores} cores), cross-origin isolated ${info.crossOriginIsolated}, SIMD ${info.simd}; `
      + `onnxruntime-node CPU, ${cpus().length} threads; ${rounds} alternating rounds x ${runs} runs each, batch 1 at 640`);
  });
} finally {
  await node.close();
  await server.close();
}
const row = (name: string, m: { total: number[]; run: number[] }): string => `${name} ${median(m.total).toFixed(1)} ms (session.run ${median(m.run).toFixed(1)} ms)`;
console.log(`YOLOv9-t forward: ${row('chromium WASM', browser)}, ${row('onnxruntime-node CPU', nodeMs)}, `
  + `ratio browser/node ${(median(browser.total) / median(nodeMs.total)).toFixed(2)}x (session.run alone ${(median(browser.run) / median(nodeMs.run)).toFixed(2)}x)`);
console.log(`load average (1, 5, 15 min): ${loadBefore} before, ${load()} after`);
