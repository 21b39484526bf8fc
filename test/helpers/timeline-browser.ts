/**
 * Our HTML pages in a real browser (`timeline.html`, the `libreyolo ui` page): Debian's chromium driven by puppeteer-core (which downloads
 * nothing), started here with a fresh profile folder. The page is opened over file:// and must load
 * with no console error, no page error and no request other than the file itself; its timeline
 * canvas must hold the profile's phase colours (pixel sample), the panel must show the verdict and
 * figures of profile.json, and a wheel event must change the visible time range. On failure a
 * screenshot is saved in `tmpDir` and its path is put in the error.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import type { ProfileAnalysis } from '../../src/profile/schema.ts';

export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

export interface PageOptions {
  /** Requests the page may make besides file: URLs (the ui page talks to its own server). */
  allowed?: (url: string) => boolean;
  /** Viewport, default 1400x800. */
  viewport?: { width: number; height: number };
  /** Failure screenshot name prefix, default `timeline`. */
  shotName?: string;
}

export async function withPage<T>(tmpDir: string, fn: (page: Page, problems: string[]) => Promise<T>, options: PageOptions = {}): Promise<T> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  const browser: Browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true, args: [...FLAGS, `--user-data-dir=${mkdtempSync(join(tmpDir, 'chromium-'))}`],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport(options.viewport ?? { width: 1400, height: 800 });
    const problems: string[] = [];
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`page error: ${(e as Error).message}`));
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
    page.on('request', (r) => { if (!r.url().startsWith('file:') && !options.allowed?.(r.url())) problems.push(`network request: ${r.url()}`); });
    try {
      return await fn(page, problems);
    } catch (err) {
      const shot = join(tmpDir, `${options.shotName ?? 'timeline'}-failure-${Date.now()}.png`);
      await page.screenshot({ path: shot, fullPage: true }).catch(() => undefined);
      (err as Error).message += `\n(screenshot: ${shot})`;
      throw err;
    }
  } finally {
    await browser.close();
  }
}

/** An element's visible text. */
export const innerText = (el: unknown): string => (el as { innerText: string }).innerText;

const hex = (c: string): [number, number, number] => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)) as [number, number, number];

/** Pixels of the canvas (by selector) whose colour is exactly `colour`. */
export async function pixelsOf(page: Page, selector: string, colour: string): Promise<number> {
  const [r, g, b] = hex(colour);
  // Runs in the page (a string, so this Node project needs no DOM types).
  return page.evaluate(`(() => {
    const c = document.querySelector(${JSON.stringify(selector)});
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] === ${r} && d[i + 1] === ${g} && d[i + 2] === ${b}) n++;
    return n;
  })()`) as Promise<number>;
}

/** The checks every timeline passes; `phases` are the phase colours that must be drawn. */
export async function checkTimeline(htmlPath: string, profile: ProfileAnalysis, tmpDir: string, phaseColours: string[]): Promise<void> {
  await withPage(tmpDir, async (page, problems) => {
    await page.goto(pathToFileURL(htmlPath).href, { waitUntil: 'load' });
    await page.waitForFunction('Boolean(window.__timeline)');
    for (const c of phaseColours) {
      const n = await pixelsOf(page, '#tl', c);
      assert.ok(n > 50, `timeline canvas: ${n} pixels of phase colour ${c}`);
    }
    const panel = await page.$eval('.panel', innerText);
    assert.ok(panel.includes(profile.bound.toUpperCase()), `panel shows the verdict ${profile.bound}: ${panel}`);
    assert.ok(panel.includes(profile.bound_why.slice(0, 40)), 'panel shows the reason');
    for (const [label, v] of [['img/s', profile.img_per_s], ['ms / step', profile.step_ms], ['kernels / step', profile.kernels_per_step], ['busy / step', profile.gpu_busy_ms_per_step]] as const) {
      assert.ok(panel.includes(String(v)), `panel shows ${label} ${v}: ${panel}`);
    }
    for (const c of profile.categories) assert.ok(panel.includes(c.name), `kernel-mix bar ${c.name}`);
    if (profile.top_kernels.length) assert.ok(panel.includes(profile.top_kernels[0]!.kernel), 'top kernel listed');
    const view = (): Promise<{ t0: number; t1: number }> => page.evaluate('window.__timeline.view()') as Promise<{ t0: number; t1: number }>;
    const before = await view();
    const box = (await page.$('#tl'))!;
    const bb = (await box.boundingBox())!;
    await page.mouse.move(bb.x + bb.width * 0.6, bb.y + 60);
    await page.mouse.wheel({ deltaY: -300 });
    await page.waitForFunction(`window.__timeline.view().t1 !== ${before.t1}`);
    const after = await view();
    assert.ok(after.t1 - after.t0 < before.t1 - before.t0, `zoomed in: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
    const range = await page.$eval('#range', (el) => el.textContent ?? '');
    assert.match(range, /^\d+\.\d{3} - \d+\.\d{3} ms$/);
    assert.deepEqual(problems, []);
  });
}
