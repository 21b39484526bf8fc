/**
 * The browser build in Debian's chromium (puppeteer-core, a fresh profile): a static server on
 * 127.0.0.1 serving the bundle and the test's files, with or without the COOP/COEP headers that make
 * a page cross-origin isolated. Console errors, page errors and failed or non-local requests are
 * collected; on failure a screenshot is saved and named in the error.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { staticServer as serveStatic } from '../../scripts/static-server.ts';
import { CHROMIUM } from './timeline-browser.ts';

/** Serves `routes` (URL prefix -> folder) on 127.0.0.1; `isolated` adds COOP/COEP (scripts/static-server.ts). */
export const staticServer = (routes: Record<string, string>, isolated: boolean): ReturnType<typeof serveStatic> => serveStatic(routes, { isolated });

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

export interface PageRun {
  page: Page;
  /** Console errors, page errors, failed requests and requests that left 127.0.0.1. */
  problems: string[];
  /** Console messages of every type, as `type: text`. */
  console: string[];
}

export async function withBrowserPage<T>(tmpDir: string, url: string, fn: (run: PageRun) => Promise<T>): Promise<T> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  const browser: Browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true, protocolTimeout: 600_000, args: [...FLAGS, `--user-data-dir=${mkdtempSync(join(tmpDir, 'chromium-'))}`],
  });
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(600_000);
    const run: PageRun = { page, problems: [], console: [] };
    page.on('console', (m) => {
      run.console.push(`${m.type()}: ${m.text()}`);
      if (m.type() === 'error') run.problems.push(`console error: ${m.text()}`);
    });
    page.on('pageerror', (e) => run.problems.push(`page error: ${(e as Error).message}`));
    page.on('requestfailed', (r) => run.problems.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));
    page.on('response', (r) => { if (r.status() >= 400) run.problems.push(`HTTP ${r.status()}: ${r.url()}`); });
    page.on('request', (r) => { if (!r.url().startsWith('http://127.0.0.1:') && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) run.problems.push(`non-local request: ${r.url()}`); });
    try {
      await page.goto(url, { waitUntil: 'load' });
      await page.waitForFunction('window.libreyolo !== undefined');
      return await fn(run);
    } catch (err) {
      const shot = join(tmpDir, `browser-failure-${Date.now()}.png`);
      await page.screenshot({ path: shot, fullPage: true }).catch(() => undefined);
      (err as Error).message += `\n(screenshot: ${shot}; console: ${run.console.slice(-10).join(' | ')})`;
      throw err;
    }
  } finally {
    await browser.close();
  }
}

/** A float32 array sent out of the page as base64 (page.evaluate returns JSON). */
export function f32FromBase64(b64: string): Float32Array {
  const bytes = Buffer.from(b64, 'base64');
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

/** The page-side counterpart of f32FromBase64, as source text for page.evaluate. */
export const PAGE_HELPERS = `
  window.toBase64 = (f32) => {
    const u8 = new Uint8Array(f32.buffer, f32.byteOffset, f32.byteLength);
    let s = '';
    for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000));
    return btoa(s);
  };
`;
