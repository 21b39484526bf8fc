/**
 * `profileInference` in Debian's chromium: YOLOv9-t (the bundled shapes model, a `.pt` loaded in the
 * page: the fixture's weights find nothing in a real image, so it has no detections to compare) profiled in an isolated page
 * on onnxruntime-web WASM with threads gives a profile.json object that the shared schema
 * (validateProfile) accepts in the page and in Node, has the Node profile's fields, and carries real
 * detail: the three inference phases with positive wall times, ORT-web's own node events as kernels
 * (the forward phase's, with positive durations) and the host spans as ops. The model still predicts
 * Node's detections afterwards. No console error, failed request or request off 127.0.0.1 is allowed.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { buildBrowser } from '../../scripts/build-browser.ts';
import { LibreYOLO, profileInference, validateProfile } from '../../src/index.ts';
import type { ProfileAnalysis } from '../../src/profile/schema.ts';
import { staticServer, withBrowserPage } from '../helpers/browser-page.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WEIGHTS = join(ROOT, 'assets', 'LibreYOLO9t-shapes.pt');
// Enough timed runs for a traced window past the two cold steps (profile/window.ts); little else, as chromium's WASM is slow here.
const OPTIONS = { warmup: 1, runs: 5, batch: 1, imgsz: 640, conf: 0.25, iou: 0.45, maxDet: 300, trace: true };

const PAGE = `<!doctype html><meta charset="utf-8"><title>libreyolo browser profile test</title><link rel="icon" href="data:,">
<script type="module">
  import * as libreyolo from '/dist/libreyolo.js';
  libreyolo.configureRuntime({ wasmPaths: '/ort/' });
  window.libreyolo = libreyolo;
</script>`;

type Detections = { xyxy: number[]; conf: number[]; cls: number[] };
type PageProfile = { profile: ProfileAnalysis; valid: string | null; refused: string | null; detections: Detections; info: { crossOriginIsolated: boolean; numThreads: number } };

describe('browser profileInference in chromium', { timeout: 1_800_000 }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'libreyolo-browser-profile-'));
  const data = join(tmp, 'data');
  const image = join(data, 'sample.png');
  let server: Awaited<ReturnType<typeof staticServer>>;

  before(async () => {
    const { outDir } = await buildBrowser(join(tmp, 'dist'));
    writeFileSync(join(tmp, 'index.html'), PAGE);
    // A PNG decodes to the same pixels in sharp and chromium, so both builds see one image.
    mkdirSync(data);
    writeFileSync(image, await sharp(join(ROOT, 'assets', 'sample.jpg')).removeAlpha().png().toBuffer());
    const ortDist = dirname(fileURLToPath(import.meta.resolve('onnxruntime-web')));
    server = await staticServer({ '/ort/': ortDist, '/dist/': outDir, '/assets/': join(ROOT, 'assets'), '/data/': data, '/': tmp }, true);
  });
  after(async () => {
    await server?.close();
  });

  it('YOLOv9-t: a valid profile.json with phases, ORT-web kernels and host ops; detections as in Node', async () => {
    const page = await withBrowserPage(tmp, `${server.url}/index.html`, async (run) => {
      const r = await run.page.evaluate(`(async () => {
        const L = window.libreyolo;
        const model = await L.LibreYOLO('/assets/LibreYOLO9t-shapes.pt');
        const profile = await L.profileInference(model, '/data/sample.png', ${JSON.stringify(OPTIONS)});
        let valid = null, refused = null;
        try { L.validateProfile(profile); } catch (e) { valid = e.message; }
        // The validator is the schema's, not a formality: a broken field is refused.
        try { L.validateProfile({ ...profile, step_ms: 'fast' }); } catch (e) { refused = e.message; }
        const res = await model.predict('/data/sample.png');
        const info = await L.runtimeInfo();
        await model.close();
        return { profile, valid, refused, info, detections: { xyxy: [...res.boxes.xyxyData], conf: [...res.boxes.confData], cls: [...res.boxes.clsData] } };
      })()`) as PageProfile;
      return { ...r, problems: run.problems };
    });
    assert.deepEqual(page.problems, []);
    assert.equal(page.info.crossOriginIsolated, true);
    assert.ok(page.info.numThreads > 1, `WASM threads: ${page.info.numThreads}`);
    const p = page.profile;
    assert.equal(page.valid, null, `the page's validateProfile: ${page.valid}`);
    assert.match(page.refused ?? '', /^field 'step_ms' must be a finite number, got "fast"$/);
    validateProfile(p);

    // The same object as Node's profile infer: the same fields, mode, phases and latency count.
    const node = await LibreYOLO(WEIGHTS, { progress: false, threads: 2 });
    let nodeProfile: ProfileAnalysis;
    let nodeDet: Detections;
    try {
      nodeProfile = await profileInference(node, [image], { ...OPTIONS, saveDir: null });
      const one = await node.predictOne(image);
      nodeDet = { xyxy: [...one.boxes.xyxyData], conf: [...one.boxes.confData], cls: [...one.boxes.clsData] };
    } finally {
      await node.close();
    }
    assert.deepEqual(Object.keys(p).filter((k) => k !== 'peak_rss_mb').sort(), Object.keys(nodeProfile).filter((k) => k !== 'peak_rss_mb').sort());
    assert.deepEqual(Object.keys(p.metrics).sort(), Object.keys(nodeProfile.metrics).filter((k) => k !== 'peak_rss_mb').sort());
    assert.equal(p.mode, 'inference');
    assert.equal(p.schema, nodeProfile.schema);
    assert.equal(p.latency!.n, OPTIONS.runs);
    assert.equal(p.config.device, 'cpu');
    assert.ok(p.step_ms > 0 && p.img_per_s! > 0, `step ${p.step_ms} ms, ${p.img_per_s} img/s`);

    // Real detail from the trace: the phases with their walls, ORT-web's node events as the kernels.
    assert.deepEqual(p.phases.map((r) => r.phase), ['preprocess', 'forward', 'postprocess']);
    for (const r of p.phases) assert.ok(r.wall_ms_per_step! > 0, `${r.phase} wall ${r.wall_ms_per_step} ms`);
    const fwd = p.phases.find((r) => r.phase === 'forward')!;
    assert.ok(fwd.kernels_per_step > 50 && fwd.gpu_ms_per_step > 0, `forward: ${fwd.kernels_per_step} kernels, ${fwd.gpu_ms_per_step} ms`);
    assert.ok(p.kernels.length > 5 && p.kernels.every((k) => k.ms_per_step >= 0 && k.count_per_step >= 1), 'kernel rows');
    assert.ok(p.kernels[0]!.ms_per_step > 0 && /Conv/.test(p.kernels[0]!.raw_name), `top kernel: ${JSON.stringify(p.kernels[0])}`);
    assert.ok(p.kernels_by_phase.forward!.length > 0 && p.kernels_by_phase.forward![0]!.ms_per_step > 0, 'forward kernels');
    assert.ok(p.gpu_busy_ms_per_step > 0 && p.kernels_per_step > 50, `busy ${p.gpu_busy_ms_per_step} ms, ${p.kernels_per_step} kernels per step`);
    assert.ok(p.ops.some((o) => o.ms_per_step > 0), `host ops: ${p.ops.map((o) => o.op).join(', ')}`);
    assert.ok(p.trace_window?.forward_ms && p.trace_window.forward_ms > 0, 'the traced forward time');
    assert.ok(p.notes!.some((n) => n.startsWith('browser:')) && p.notes!.some((n) => n.startsWith('cpu: a kernel is one ONNX Runtime node execution')), p.notes!.join(' | '));
    assert.ok(!('peak_rss_mb' in p) && !('peak_rss_mb' in p.metrics), 'a page has no resident set to report');

    // The same detections as Node, after profiling turned ORT's profiler on and off again.
    assert.ok(nodeDet.cls.length >= 3, `Node finds the sample's shapes: ${nodeDet.cls.length}`);
    assert.deepEqual(page.detections.cls, nodeDet.cls);
    page.detections.xyxy.forEach((v, i) => assert.ok(Math.abs(v - nodeDet.xyxy[i]!) <= 0.05, `box coord ${i}: ${v} vs ${nodeDet.xyxy[i]}`));
    page.detections.conf.forEach((v, i) => assert.ok(Math.abs(v - nodeDet.conf[i]!) <= 1e-4, `conf ${i}: ${v} vs ${nodeDet.conf[i]}`));
  });
});
