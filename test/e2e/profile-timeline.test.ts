/**
 * `timeline.html` in a real browser (Debian chromium via puppeteer-core) for an inference profile
 * written by `profile infer` through the real CLI; `profile report` regenerating it (and never
 * replacing a file); `profile compare --html`; `--no-trace` writing no timeline. The training
 * profile's timeline is checked the same way in train-profile.test.ts.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { ProfileAnalysis } from '../../src/profile/schema.ts';
import { PHASE_COLOURS } from '../../src/profile/timeline-html.ts';
import { runCli } from '../helpers/cli.ts';
import { fixture } from '../helpers/fixtures.ts';
import { checkTimeline, innerText, pixelsOf, withPage } from '../helpers/timeline-browser.ts';

let dir: string;
let weights: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ly-profile-timeline-'));
  weights = fixture('yolo9t_ref.pt');
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const infer = (project: string, ...extra: string[]) => runCli(['profile', 'infer', '--weights', weights, '--device', 'cpu', '--warmup', '2', '--runs', '12',
  '--imgsz', '160', '--threads', '2', '--project', project, ...extra], dir, {}, { timeoutMs: 600_000 });
const readProfile = (p: string): ProfileAnalysis => JSON.parse(readFileSync(p, 'utf8')) as ProfileAnalysis;

describe('timeline.html', () => {
  let inferDir = '';
  before(async () => {
    const r = await infer('runs/a');
    assert.equal(r.code, 0, r.stderr);
    inferDir = join(dir, 'runs', 'a', 'infer');
  });

  it('an inference profile: lanes in the stage colours, panel figures, wheel zoom, latency histogram', { timeout: 300_000 }, async () => {
    const html = join(inferDir, 'timeline.html');
    const text = readFileSync(html, 'utf8');
    assert.doesNotMatch(text, /<(script|link|img)[^>]+(src|href)=/i, 'self-contained: nothing loaded from elsewhere');
    const a = readProfile(join(inferDir, 'profile.json'));
    await checkTimeline(html, a, dir, [PHASE_COLOURS.preprocess!, PHASE_COLOURS.forward!]);
    await withPage(dir, async (page, problems) => {
      await page.goto(pathToFileURL(html).href, { waitUntil: 'load' });
      const panel = await page.$eval('.panel', innerText);
      assert.ok(panel.includes(`${a.latency!.p50_ms} / ${a.latency!.p90_ms} / ${a.latency!.p99_ms} ms`), panel);
      assert.ok(await pixelsOf(page, '.hist', '#3498db') > 100, 'histogram bars drawn');
      assert.ok(await pixelsOf(page, '.hist', '#2ecc71') > 10, 'p50 marked');
      assert.deepEqual(problems, []);
    });
  });

  it('profile report regenerates it from profile.json (never replacing a file); --out refuses an existing file', { timeout: 300_000 }, async () => {
    const pj = join(inferDir, 'profile.json');
    const r = await runCli(['profile', 'report', pj], dir);
    assert.equal(r.code, 0, r.stderr);
    const out = join(inferDir, 'timeline2.html');
    assert.equal(r.stdout, `timeline: ${out}\n`);
    await checkTimeline(out, readProfile(pj), dir, [PHASE_COLOURS.forward!]);
    const again = await runCli(['profile', 'report', pj, '--out', out], dir);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /already exists; pass another --out path/);
    const custom = join(dir, 'custom.html');
    const c = await runCli(['profile', 'report', join(inferDir, 'profile_trace.json'), '--out', custom, '--json'], dir);
    assert.equal(c.code, 0, c.stderr);
    assert.deepEqual(JSON.parse(c.stdout), { timeline: custom, traced: true });
  });

  it('profile compare --html writes both panels and the deltas; --no-trace writes no timeline', { timeout: 600_000 }, async () => {
    const nt = await infer('runs/b', '--no-trace');
    assert.equal(nt.code, 0, nt.stderr);
    const bDir = join(dir, 'runs', 'b', 'infer');
    assert.ok(existsSync(join(bDir, 'profile.json')));
    assert.ok(!existsSync(join(bDir, 'timeline.html')), '--no-trace: no timeline');
    const out = join(dir, 'compare.html');
    const r = await runCli(['profile', 'compare', join(inferDir, 'profile.json'), join(bDir, 'profile.json'), '--html', out], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^img\/s {10}/);
    assert.ok(r.stdout.endsWith(`html           ${out}\n`), r.stdout);
    const a = readProfile(join(inferDir, 'profile.json'));
    const b = readProfile(join(bDir, 'profile.json'));
    await withPage(dir, async (page, problems) => {
      await page.goto(pathToFileURL(out).href, { waitUntil: 'load' });
      const panels = await page.$$eval('.panel', (els) => els.map((el) => (el as unknown as { innerText: string }).innerText));
      assert.equal(panels.length, 2);
      assert.ok(panels[0]!.includes(String(a.img_per_s)) && panels[1]!.includes(String(b.img_per_s)));
      const deltas = await page.$eval('#deltas', innerText);
      assert.ok(deltas.includes(`img/s          ${a.img_per_s} -> ${b.img_per_s}`), deltas);
      assert.deepEqual(problems, []);
    });
    assert.equal((await runCli(['profile', 'compare', join(inferDir, 'profile.json'), join(bDir, 'profile.json'), '--html', out], dir)).code, 2);
  });
});
