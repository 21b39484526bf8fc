/**
 * `libreyolo ui` as a user runs it: the real CLI in a child process on a free 127.0.0.1 port, the
 * bundled default model, real uploads over HTTP, and the page in Debian's chromium (puppeteer-core):
 * an image chosen through the page's file input comes back annotated with its box count. Every route
 * is covered, and the refusals: a hostile upload name, an oversized body, a non-image body, an
 * image over the pixel cap, cross-origin and DNS-rebinding requests, model paths outside the
 * working directory. Ctrl+C exits 0 and removes the temporary uploads.
 */
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { DEFAULT_MODEL_PATH, SAMPLE_IMAGE } from '../../src/assets.ts';
import { LibreYOLO } from '../../src/load.ts';
import { closedPort, startCli, type LiveCli } from '../helpers/cli.ts';
import { innerText, withPage } from '../helpers/timeline-browser.ts';

interface Line { type: string; line?: string; error?: string; name?: string; count?: number; rendered?: string; dir?: string; saved?: string }

describe('libreyolo ui', () => {
  const root = mkdtempSync(join(tmpdir(), 'libreyolo-ui-test-'));
  const cwd = join(root, 'work');
  const bin = join(root, 'bin');
  const opened = join(root, 'opened.txt');
  // Kept after the run: a failing browser check leaves its screenshot here (the path is in the error).
  const shots = mkdtempSync(join(tmpdir(), 'libreyolo-ui-shots-'));
  let ui: LiveCli;
  let base = '';
  let uploadsDir = '';
  let sampleCount = 0;

  before(async () => {
    mkdirSync(cwd);
    mkdirSync(bin);
    // The desktop opener the server spawns for "Open results folder": a stand-in that records its argument.
    // Written whole then renamed: the test polls for the file, and a shell redirect creates it empty first.
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > '${opened}.part' && mv '${opened}.part' '${opened}'\n`);
    chmodSync(join(bin, 'xdg-open'), 0o755);
    const model = await LibreYOLO();
    sampleCount = (await model.predictOne(SAMPLE_IMAGE)).boxes.length;
    await model.close();
    const port = await closedPort();
    ui = await startCli(['ui', '--port', String(port), '--no-browser', '--json', '--max-upload-mb', '2'], cwd, { PATH: `${bin}:${process.env.PATH}` });
    const started = JSON.parse(ui.firstLine) as { url: string; device: string; uploads_dir: string; schema_version: number };
    assert.equal(started.url, `http://127.0.0.1:${port}`);
    assert.equal(started.device, 'auto');
    base = started.url;
    uploadsDir = started.uploads_dir;
    assert.ok(existsSync(uploadsDir));
  });
  after(async () => {
    await ui?.stop();
    rmSync(root, { recursive: true, force: true });
    if (!readdirSync(shots).some((f) => f.endsWith('.png'))) rmSync(shots, { recursive: true, force: true });
  });

  async function infer(body: Uint8Array | string, headers: Record<string, string> = {}, query = ''): Promise<{ status: number; lines: Line[]; type: string | null }> {
    const res = await fetch(`${base}/api/infer${query}`, { method: 'POST', body, headers });
    const text = await res.text();
    const lines = res.headers.get('content-type')?.startsWith('application/x-ndjson') ? text.trim().split('\n').map((l) => JSON.parse(l) as Line) : [JSON.parse(text) as Line];
    return { status: res.status, lines, type: res.headers.get('content-type') };
  }
  const sample = readFileSync(SAMPLE_IMAGE);
  const runFiles = (dir: string): string[] => (existsSync(join(cwd, dir)) ? readdirSync(join(cwd, dir)).sort() : []);

  it('GET / serves the self-contained page', async () => {
    const res = await fetch(`${base}/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const html = await res.text();
    for (const s of ['Run inference', 'Choose files', 'Add folder', 'No images yet', 'Drop images or a folder, paste with Ctrl+V, or browse']) assert.ok(html.includes(s), s);
    // No external resource: nothing is loaded from any other origin.
    assert.doesNotMatch(html, /(src|href)\s*=\s*["']?(https?:)?\/\//i);
    assert.equal((await fetch(`${base}/index.html?x=1`)).status, 200);
  });

  it('GET /api/models lists the bundled default first; unknown paths 404, other methods 501', async () => {
    const models = await (await fetch(`${base}/api/models`)).json() as { models: string[]; default: string };
    assert.equal(models.default, 'LibreYOLO9t-shapes');
    assert.equal(models.models[0], 'LibreYOLO9t-shapes');
    assert.ok(models.models.includes('LibreYOLO9t.pt'));
    const missing = await fetch(`${base}/nope`);
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: 'not found' });
    const put = await fetch(`${base}/`, { method: 'PUT', body: 'x' });
    assert.equal(put.status, 501);
    assert.match(await put.text(), /Unsupported method \('PUT'\)/);
  });

  it('POST /api/open-folder before any run: ok false, no folder', async () => {
    assert.deepEqual(await (await fetch(`${base}/api/open-folder`, { method: 'POST' })).json(), { ok: false, dir: null });
  });

  it('POST /api/infer streams log lines then the result; a hostile name becomes a safe base name', async () => {
    const r = await infer(sample, { 'X-Filename': encodeURIComponent('../../evil/test img (1).png') });
    assert.equal(r.status, 200);
    assert.equal(r.type, 'application/x-ndjson; charset=utf-8');
    const [load, saved, result] = r.lines;
    assert.match(load!.line!, /^\d\d:\d\d:\d\d \| INFO {2}\| Loading model LibreYOLO9t-shapes$/);
    assert.match(saved!.line!, /^\d\d:\d\d:\d\d \| INFO {2}\| Results saved to runs\/detect\/predict\/test_img_1_\.jpg$/);
    assert.equal(result!.type, 'result');
    assert.equal(result!.name, 'test_img_1_.png');
    assert.equal(result!.count, sampleCount);
    assert.ok(sampleCount >= 6, `the sample's shapes are found (${sampleCount})`);
    assert.equal(result!.dir, 'runs/detect/predict');
    assert.equal(result!.saved, 'runs/detect/predict/test_img_1_.jpg');
    const onDisk = readFileSync(join(cwd, result!.saved!));
    assert.equal(result!.rendered, `data:image/jpeg;base64,${onDisk.toString('base64')}`);
    const meta = await sharp(onDisk).metadata();
    assert.deepEqual([meta.width, meta.height, meta.format], [640, 360, 'jpeg']);
    assert.ok(!existsSync(join(root, 'evil')) && !existsSync(join(cwd, 'evil')), 'nothing written where the name pointed');
    assert.deepEqual(readdirSync(uploadsDir), [], 'the upload is removed after its inference');
    // The same name again is numbered, and the model is not loaded twice.
    const again = await infer(sample, { 'X-Filename': 'test img (1).png' });
    assert.equal(again.lines.length, 2);
    assert.equal(again.lines[1]!.saved, 'runs/detect/predict/test_img_1__2.jpg');
    assert.equal(again.lines[1]!.name, 'test_img_1_.png');
    assert.deepEqual(runFiles('runs/detect/predict'), ['test_img_1_.jpg', 'test_img_1__2.jpg']);
  });

  it('POST /api/run/new starts the next numbered folder; open-folder opens it', async () => {
    assert.deepEqual(await (await fetch(`${base}/api/run/new`, { method: 'POST' })).json(), { dir: 'runs/detect/predict2' });
    assert.ok(existsSync(join(cwd, 'runs/detect/predict2')));
    assert.deepEqual(await (await fetch(`${base}/api/open-folder`, { method: 'POST' })).json(), { ok: true, dir: 'runs/detect/predict2' });
    for (let i = 0; i < 50 && !existsSync(opened); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(readFileSync(opened, 'utf8'), join(cwd, 'runs/detect/predict2'));
  });

  it('refuses an oversized body (413), then keeps serving', async () => {
    const r = await infer(new Uint8Array(3 * 2 ** 20));
    assert.equal(r.status, 413);
    assert.equal(r.lines[0]!.error, "Upload too large: 3.0 MB over this server's limit of 2.0 MB. Send a smaller image, or restart with --max-upload-mb.");
    assert.equal((await fetch(`${base}/api/models`)).status, 200);
  });

  it('a non-image body, an empty body and an image over the pixel cap get an error line', async () => {
    const garbage = await infer('this is not an image', { 'X-Filename': 'notes.txt' });
    assert.equal(garbage.status, 200);
    assert.deepEqual(garbage.lines, [{ type: 'error', error: "Cannot read 'notes.txt' as an image (Input buffer contains unsupported image format). Upload a JPEG, PNG, WebP, GIF, TIFF or AVIF file." }]);
    assert.deepEqual((await infer(new Uint8Array(0))).lines, [{ type: 'error', error: 'empty upload' }]);
    // 8000 x 7000 = 56 MP of one colour: a small PNG that would decode to 168 MB.
    const huge = await sharp({ create: { width: 8000, height: 7000, channels: 3, background: '#808080' } }).png().toBuffer();
    assert.ok(huge.length < 2 * 2 ** 20);
    const big = await infer(huge, { 'X-Filename': 'huge.png' });
    assert.deepEqual(big.lines, [{ type: 'error', error: "'huge.png' is 8000x7000 = 56,000,000 pixels, over this server's limit of 50,000,000. Downscale the image, or restart with --max-megapixels." }]);
    const conf = await infer(sample, {}, '?conf=7');
    assert.deepEqual(conf.lines, [{ type: 'error', error: 'conf must be in [0, 1], got 7' }]);
    assert.deepEqual(runFiles('runs/detect/predict2'), [], 'no result written for a refused upload');
  });

  it('refuses cross-origin and DNS-rebinding requests (403) before reading them', async () => {
    const cross = await infer(sample, { Origin: 'http://evil.example' });
    assert.equal(cross.status, 403);
    assert.match(cross.lines[0]!.error!, /^Origin 'http:\/\/evil\.example' is not this server's/);
    const site = await fetch(`${base}/api/run/new`, { method: 'POST', headers: { 'Sec-Fetch-Site': 'cross-site' } });
    assert.equal(site.status, 403);
    // A rebinding page reaches 127.0.0.1 under its own host name: the Host header gives it away.
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${base}/api/models`, { headers: { Host: `evil.example:${new URL(base).port}` } }, (res) => { res.resume(); resolve(res.statusCode!); });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 403);
    assert.ok(!existsSync(join(cwd, 'runs/detect/predict3')), 'the refused run/new made no folder');
  });

  it('loads model paths only from under the working directory', async () => {
    const outside = join(root, 'outside.pt');
    copyFileSync(DEFAULT_MODEL_PATH, outside);
    symlinkSync(outside, join(cwd, 'link.pt'));
    for (const model of [outside, '../outside.pt', 'link.pt']) {
      const r = await infer(sample, {}, `?model=${encodeURIComponent(model)}`);
      assert.equal(r.lines.length, 1, JSON.stringify(r.lines));
      assert.match(r.lines[0]!.error!, /is outside the working directory .*; the UI only loads weights from under it\./, model);
    }
    const absent = await infer(sample, {}, '?model=nosuch.pt');
    assert.match(absent.lines[0]!.error!, /^Model 'nosuch\.pt' is not in the list and no such file exists under the working directory/);
    // The same weights under the working directory are accepted.
    copyFileSync(DEFAULT_MODEL_PATH, join(cwd, 'mine.pt'));
    const inside = await infer(sample, { 'X-Filename': 'inside.jpg' }, '?model=mine.pt');
    assert.equal(inside.lines.at(-1)!.type, 'result', JSON.stringify(inside.lines.at(-1)));
    assert.equal(inside.lines.at(-1)!.count, sampleCount);
  });

  it('the page in chromium: a file chosen through its input comes back annotated with its box count', async () => {
    const origin = new URL(base).origin;
    await withPage(shots, async (page, problems) => {
      await page.goto(`${base}/`, { waitUntil: 'load' });
      await page.waitForFunction("document.querySelectorAll('#model option').length > 1");
      assert.equal(await page.$eval('#model', (el) => (el as unknown as { value: string }).value), 'LibreYOLO9t-shapes');
      assert.equal(await page.$eval('#run', (el) => (el as unknown as { disabled: boolean }).disabled), true);
      const input = (await page.$('#files'))!;
      await (input as unknown as { uploadFile(p: string): Promise<void> }).uploadFile(SAMPLE_IMAGE);
      await page.waitForFunction("document.querySelector('.card .caption').textContent === '640x360'");
      await page.click('#run');
      await page.waitForSelector('.card[data-status=rendered]', { timeout: 60_000 });
      assert.equal(await page.$eval('.card .caption', innerText), `${sampleCount} obj`);
      assert.equal(await page.$eval('.card .badge', innerText), 'rendered');
      assert.match(await page.$eval('.card img', (el) => (el as unknown as { src: string }).src), /^data:image\/jpeg;base64,/);
      const log = await page.$eval('#log', innerText);
      assert.ok(log.includes('$ libreyolo predict --model LibreYOLO9t-shapes --source sample.jpg --conf 0.25 --save'), log);
      assert.ok(log.includes(`\u2713 sample.jpg: ${sampleCount} object(s)  \u2192  runs/detect/predict2`), log);
      assert.equal(await page.$eval('#resulttext', innerText), '1 rendered image saved to runs/detect/predict2');
      assert.ok(runFiles('runs/detect/predict2').includes('sample.jpg'));
      assert.deepEqual(problems, []);
    }, { allowed: (url) => url.startsWith(`${origin}/`) || url.startsWith('data:') || url.startsWith('blob:'), shotName: 'ui', viewport: { width: 1280, height: 900 } });
  });

  it('Ctrl+C exits 0 and removes the temporary uploads', async () => {
    assert.equal(await ui.stop(), 0);
    assert.match(ui.stderr(), /Shutting down UI\.\.\.\n$/);
    assert.ok(!existsSync(uploadsDir), `${uploadsDir} removed`);
  });
});
