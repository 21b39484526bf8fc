/**
 * The browser build in Debian's chromium: the bundle (built here by scripts/build-browser.ts) is
 * served from 127.0.0.1 with COOP/COEP, loads yolo9t_ref.pt and rfdetrn_ref.pt by URL in the page
 * (our unpickler), runs them on onnxruntime-web WASM with threads in a Web Worker, and reproduces
 * the fixtures' outputs within the Node parity tests' tolerances (and Node's own forward). The same
 * page without the headers runs single-threaded and says so once; `device: 'webgpu'` with no adapter
 * (chromium runs with --disable-gpu) is refused with the documented device_not_available error.
 * No console error, failed request or request off 127.0.0.1 is allowed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { buildBrowser } from '../../scripts/build-browser.ts';
import type { HostTensor } from '../../src/graph/tensor.ts';
import { LibreYOLO } from '../../src/index.ts';
import { rfdetrExportToPredict } from '../../src/models/rfdetr/family.ts';
import { readSafetensors } from '../../src/weights/safetensors.ts';
import { f32FromBase64, PAGE_HELPERS, staticServer, withBrowserPage } from '../helpers/browser-page.ts';
import { maxErrors } from '../helpers/compare.ts';
import { FIXTURES_DIR, fixture } from '../helpers/fixtures.ts';
import { normalizeU8, readRfdetrIo, rfdetrTolerances } from '../helpers/rfdetr-fixture.ts';

// The Node parity tests' tolerances (test/model/parity.test.ts, test/model/rfdetr-family.test.ts).
const BOX_TOL = 1e-3;
const SCORE_TOL = 1e-4;

const PAGE = `<!doctype html><meta charset="utf-8"><title>libreyolo browser test</title><link rel="icon" href="data:,">
<script type="module">
  import * as libreyolo from '/dist/libreyolo.js';
  // The WASM files are not beside the bundle: the documented option says where they are.
  libreyolo.configureRuntime({ wasmPaths: '/ort/' });
  ${PAGE_HELPERS}
  window.libreyolo = libreyolo;
</script>`;

/** Loads `weights` in the page, runs forward on the float32 input at `inputUrl`, returns the output and the runtime. */
const forwardInPage = (weights: string, inputUrl: string, dims: number[], device = 'cpu') => `(async () => {
  const L = window.libreyolo;
  const model = await L.LibreYOLO(${JSON.stringify(weights)}, { device: ${JSON.stringify(device)} });
  const input = new Float32Array(await (await fetch(${JSON.stringify(inputUrl)})).arrayBuffer());
  const out = await model.forward({ dtype: 'float32', dims: ${JSON.stringify(dims)}, data: input });
  const t0 = performance.now();
  await model.forward({ dtype: 'float32', dims: ${JSON.stringify(dims)}, data: input });
  const ms = performance.now() - t0;
  const info = await L.runtimeInfo();
  await model.close();
  return { dims: out.dims, data: window.toBase64(out.data), info, family: model.family.name, size: model.size, ms };
})()`;

type PageForward = { dims: number[]; data: string; info: { crossOriginIsolated: boolean; numThreads: number; wasmPaths: string | null }; family: string; size: string; ms: number };

const tensorOf = (r: PageForward): HostTensor => ({ dtype: 'float32', dims: r.dims, data: f32FromBase64(r.data) });

describe('browser build in chromium', { timeout: 1_800_000 }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-browser-'));
  const data = join(tmp, 'data');
  let bundleDir: string;
  let io: Map<string, HostTensor>;
  const servers: Array<{ close(): Promise<void> }> = [];
  let isolatedUrl: string;
  let plainUrl: string;

  before(async () => {
    ({ outDir: bundleDir } = await buildBrowser(join(tmp, 'dist')));
    writeFileSync(join(tmp, 'index.html'), PAGE);
    io = readSafetensors(new Uint8Array(readFileSync(fixture('yolo9t_ref_io.safetensors'))), 'io').tensors;
    const { mkdirSync } = await import('node:fs');
    mkdirSync(data);
    const yin = io.get('input_1x3x640x640')!.data as Float32Array;
    writeFileSync(join(data, 'yolo9_in.bin'), new Uint8Array(yin.buffer, yin.byteOffset, yin.byteLength));
    const rin = normalizeU8(readRfdetrIo().tensors.get('input_u8_1x3x384x384')!).data as Float32Array;
    writeFileSync(join(data, 'rfdetr_in.bin'), new Uint8Array(rin.buffer, rin.byteOffset, rin.byteLength));
    fixture('yolo9t_ref.pt');
    fixture('rfdetrn_ref.pt');
    const ortDist = dirname(fileURLToPath(import.meta.resolve('onnxruntime-web')));
    const routes = { '/ort/': ortDist, '/dist/': bundleDir, '/fixtures/': FIXTURES_DIR, '/data/': data, '/': tmp };
    const isolated = await staticServer(routes, true);
    const plain = await staticServer(routes, false);
    servers.push(isolated, plain);
    isolatedUrl = `${isolated.url}/index.html`;
    plainUrl = `${plain.url}/index.html`;
  });
  after(async () => {
    for (const s of servers) await s.close();
  });

  it('isolated page: YOLOv9-t (.pt) and RF-DETR-n on WASM threads match the fixtures and Node', async () => {
    const { yolo, rfdetr, problems, console: log } = await withBrowserPage(tmp, isolatedUrl, async (run) => {
      const yolo = await run.page.evaluate(forwardInPage('/fixtures/yolo9t_ref.pt', '/data/yolo9_in.bin', [1, 3, 640, 640])) as PageForward;
      const rfdetr = await run.page.evaluate(forwardInPage('/fixtures/rfdetrn_ref.pt', '/data/rfdetr_in.bin', [1, 3, 384, 384])) as PageForward;
      return { yolo, rfdetr, problems: run.problems, console: run.console };
    });
    assert.deepEqual(problems, []);
    assert.equal(yolo.info.crossOriginIsolated, true);
    assert.ok(yolo.info.numThreads > 1, `WASM threads in an isolated page: ${yolo.info.numThreads}`);
    assert.ok(!log.some((l) => l.includes('single-threaded')), 'no single-threaded notice when isolated');
    assert.equal(yolo.info.wasmPaths, '/ort/', 'the wasmPaths option reaches onnxruntime-web');
    assert.deepEqual([yolo.family, yolo.size], ['yolo9', 't']);

    const y = tensorOf(yolo);
    const yErr = maxErrors(y, io.get('predictions_1x3x640x640')!);
    assert.ok(yErr.box <= BOX_TOL && yErr.score <= SCORE_TOL, `YOLOv9-t vs fixture: box ${yErr.box} px, score ${yErr.score}`);

    const rf = readRfdetrIo();
    const tol = rfdetrTolerances(rf.metadata);
    const u8 = rf.tensors.get('input_u8_1x3x384x384')!;
    const want = rfdetrExportToPredict(rf.tensors.get('pred_boxes_1x3x384x384')!, { extra: { labels: rf.tensors.get('pred_logits_1x3x384x384')! }, inputDims: u8.dims });
    const r = tensorOf(rfdetr);
    assert.deepEqual(r.dims, want.dims);
    const rErr = maxErrors(r, want);
    assert.ok(rErr.box <= tol.pred_boxes! * 384 * 2 && rErr.score <= tol.pred_logits! / 4, `RF-DETR-n vs fixture: box ${rErr.box} px, score ${rErr.score}`);

    // And against Node's own forward of the same files.
    for (const [file, got, x] of [['yolo9t_ref.pt', y, io.get('input_1x3x640x640')!], ['rfdetrn_ref.pt', r, normalizeU8(u8)]] as const) {
      const model = await LibreYOLO(fixture(file), { progress: false, threads: 2 });
      try {
        const node = await model.forward(x);
        const e = maxErrors(got, node);
        assert.ok(e.box <= BOX_TOL && e.score <= SCORE_TOL, `${file} browser vs Node: box ${e.box}, score ${e.score}`);
      } finally {
        await model.close();
      }
    }
  });

  it('non-isolated page runs single-threaded and says so once; webgpu without an adapter is refused', async () => {
    const { result, webgpu, problems, console: log } = await withBrowserPage(tmp, plainUrl, async (run) => {
      const result = await run.page.evaluate(forwardInPage('/fixtures/yolo9t_ref.pt', '/data/yolo9_in.bin', [1, 3, 640, 640])) as PageForward;
      const webgpu = await run.page.evaluate(`(async () => {
        const model = await window.libreyolo.LibreYOLO('/fixtures/yolo9t_ref.pt', { device: 'webgpu' });
        try {
          await model.forward({ dtype: 'float32', dims: [1, 3, 64, 64], data: new Float32Array(3 * 64 * 64) });
          return { ok: true };
        } catch (e) {
          return { ok: false, code: e.code, message: e.message };
        } finally {
          await model.close();
        }
      })()`) as { ok: boolean; code?: string; message?: string };
      return { result, webgpu, problems: run.problems, console: run.console };
    });
    assert.deepEqual(problems, []);
    assert.equal(result.info.crossOriginIsolated, false);
    assert.equal(result.info.numThreads, 1);
    assert.equal(log.filter((l) => l.includes('runs single-threaded')).length, 1, `one notice: ${log.join(' | ')}`);
    const err = maxErrors(tensorOf(result), io.get('predictions_1x3x640x640')!);
    assert.ok(err.box <= BOX_TOL && err.score <= SCORE_TOL, `single-threaded YOLOv9-t: box ${err.box}, score ${err.score}`);
    assert.equal(webgpu.ok, false, 'no adapter: webgpu must not fall back silently');
    assert.equal(webgpu.code, 'device_not_available');
    assert.match(webgpu.message!, /^Device 'webgpu' is not available: navigator\.gpu (gives no adapter|is undefined)/);
  });
});
