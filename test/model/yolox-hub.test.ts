/**
 * Published YOLOX names as the original's (`LibreYOLOX<size>.pt`, repo `LibreYOLO/LibreYOLOX<size>`):
 * downloaded from a Hub-like server on 127.0.0.1 into ./weights/ and loaded at the size's input size.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { LibreYOLO } from '../../src/index.ts';
import { fixture } from '../helpers/fixtures.ts';

let server: Server;
let endpoint = '';
const served: string[] = [];
const cwd = mkdtempSync(join(tmpdir(), 'libreyolo-yolox-hub-'));

before(async () => {
  const bytes = readFileSync(fixture('yoloxn_ref.pt'));
  server = createServer((req, res) => {
    served.push(req.url ?? '');
    if (req.url === '/LibreYOLO/LibreYOLOXn/resolve/main/LibreYOLOXn.pt') res.writeHead(200, { 'content-length': bytes.length }).end(bytes);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(cwd, { recursive: true, force: true });
});

it('LibreYOLOXn.pt downloads from LibreYOLO/LibreYOLOXn into ./weights/ and loads as yolox-n at 416', async () => {
  const model = await LibreYOLO('LibreYOLOXn.pt', { cwd, env: { HF_ENDPOINT: endpoint }, progress: false });
  try {
    assert.deepEqual(served, ['/LibreYOLO/LibreYOLOXn/resolve/main/LibreYOLOXn.pt']);
    assert.ok(existsSync(join(cwd, 'weights', 'LibreYOLOXn.pt')));
    assert.equal(model.family.name, 'yolox');
    assert.equal(model.size, 'n');
    assert.deepEqual(model.imgsz, [416, 416]);
  } finally {
    await model.close();
  }
  // Second time: the repo id resolves to the cached file, nothing is fetched.
  const again = await LibreYOLO('LibreYOLO/LibreYOLOXn', { cwd, env: { HF_ENDPOINT: endpoint }, progress: false });
  await again.close();
  assert.equal(served.length, 1);
});
