import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { LibreYOLOError } from '../../src/errors.ts';
import { parseWeightName, resolveWeights, suggestName, weightsUrl } from '../../src/models/hub.ts';

const root = mkdtempSync(join(tmpdir(), 'libreyolo-hub-'));
let caseNo = 0;
/** A fresh working directory per test, passed as `cwd` (the process never chdirs). */
const freshCwd = () => {
  const d = join(root, `case${++caseNo}`);
  mkdirSync(d);
  return d;
};

const PAYLOAD = Buffer.alloc(300_000, 0);
for (let i = 0; i < PAYLOAD.length; i++) PAYLOAD[i] = (i * 31) & 0xff;

type Handler = (req: IncomingMessage, res: import('node:http').ServerResponse) => void;
const requests: { url: string; auth: string | undefined }[] = [];
let handler: Handler | undefined;
let server: Server;
let endpoint = '';

before(async () => {
  server = createServer((req, res) => {
    requests.push({ url: req.url ?? '', auth: req.headers.authorization });
    if (handler) return handler(req, res);
    // Like the Hub: /resolve/ answers with a redirect to the file's storage location.
    const m = /^\/LibreYOLO\/([^/]+)\/resolve\/main\/([^/]+)$/.exec(req.url ?? '');
    if (m && m[2] === `${m[1]}.pt`) {
      res.writeHead(302, { location: `/blobs/${m[2]}` }).end();
    } else if (req.url?.startsWith('/blobs/')) {
      res.writeHead(200, { 'content-length': PAYLOAD.length, 'content-type': 'application/octet-stream' });
      // Two writes so the client sees the body arrive in pieces.
      res.write(PAYLOAD.subarray(0, 100_000));
      setTimeout(() => res.end(PAYLOAD.subarray(100_000)), 20);
    } else {
      res.writeHead(404, 'Not Found').end('Entry not found');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  await new Promise((r) => server.close(r));
  rmSync(root, { recursive: true, force: true });
});

const quiet = { progress: false } as const;
const env = (extra: Record<string, string> = {}) => ({ HF_ENDPOINT: endpoint, HF_TOKEN: 'secret-token', ...extra });

/** A port nothing listens on: bind one, then close it. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

function rejectsWith(code: string, ...patterns: (RegExp | string)[]) {
  return (e: unknown) => {
    assert.ok(e instanceof LibreYOLOError, `expected LibreYOLOError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    for (const p of patterns) {
      if (typeof p === 'string') assert.ok(e.message.includes(p), `message should contain ${p}:\n${e.message}`);
      else assert.match(e.message, p);
    }
    return true;
  };
}

test('weight names parse to size, task and canonical URL', () => {
  assert.deepEqual(parseWeightName('LibreYOLO9t.pt'), { family: 'yolo9', size: 't', taskSuffix: '', stem: 'LibreYOLO9t' });
  assert.deepEqual(parseWeightName('weights/libreyolo9S-SEG.pt'), { family: 'yolo9', size: 's', taskSuffix: '-seg', stem: 'LibreYOLO9s-seg' });
  assert.equal(parseWeightName('LibreYOLO9x.pt'), null);
  assert.equal(parseWeightName('LibreYOLO9t.onnx'), null);
  assert.equal(weightsUrl('LibreYOLO9t'), 'https://huggingface.co/LibreYOLO/LibreYOLO9t/resolve/main/LibreYOLO9t.pt');
  assert.equal(weightsUrl('LibreYOLO9c-cls', 'http://mirror/'), 'http://mirror/LibreYOLO/LibreYOLO9c-cls/resolve/main/LibreYOLO9c-cls.pt');
  assert.equal(suggestName('LibreYOLO9x.pt'), 'LibreYOLO9t.pt');
  assert.equal(suggestName('totally-different.bin'), undefined);
});

test('name forms download the right file into weights/<name>, following the redirect', async () => {
  const forms: [string, string, string][] = [
    ['LibreYOLO9t.pt', 'LibreYOLO9t', 'LibreYOLO9t.pt'],
    ['LibreYOLO9t', 'LibreYOLO9t', 'LibreYOLO9t.pt'],
    ['LibreYOLO/LibreYOLO9t', 'LibreYOLO9t', 'LibreYOLO9t.pt'],
    ['libreyolo9m.pt', 'LibreYOLO9m', 'libreyolo9m.pt'],
  ];
  for (const [given, stem, file] of forms) {
    const cwd = freshCwd();
    requests.length = 0;
    const got = await resolveWeights(given, { cwd, env: env(), ...quiet });
    assert.equal(got, join(cwd, 'weights', file), given);
    assert.deepEqual(readFileSync(got), PAYLOAD);
    assert.equal(requests[0]!.url, `/LibreYOLO/${stem}/resolve/main/${stem}.pt`, given);
    assert.equal(requests[1]!.url, `/blobs/${stem}.pt`);
    assert.ok(requests.every((r) => r.auth === undefined), 'the HF token is only sent to huggingface.co');
    assert.deepEqual(readdirSync(join(cwd, 'weights')), [file], 'no .part file left');
  }
});

test('a task the family does not run (-pose, -cls, ...) is refused before any request: loading would refuse it after the whole download', async () => {
  for (const given of ['LibreYOLO9m-pose.pt', 'libreyolo9s-CLS', 'LibreYOLO/LibreYOLO9t-cls']) {
    const cwd = freshCwd();
    requests.length = 0;
    await assert.rejects(resolveWeights(given, { cwd, env: env(), ...quiet }),
      rejectsWith('model_task_unsupported', /^Task '(pose|cls)' is not supported yet: this package runs detection and instance segmentation \(segment\) models only, so \S+ is not downloaded\. For detection use LibreYOLO9[mst]\.pt\.$/));
    assert.equal(requests.length, 0, `${given}: nothing fetched`);
    assert.equal(existsSync(join(cwd, 'weights')), false);
  }
});

test('a segment name of a family that segments (LibreYOLO9<size>-seg.pt) downloads from its own repository', async () => {
  for (const [given, file, stem] of [['LibreYOLO9t-seg.pt', 'LibreYOLO9t-seg.pt', 'LibreYOLO9t-seg'], ['libreyolo9c-SEG', 'libreyolo9c-SEG.pt', 'LibreYOLO9c-seg']] as const) {
    const cwd = freshCwd();
    requests.length = 0;
    const got = await resolveWeights(given, { cwd, env: env(), ...quiet });
    assert.equal(got, join(cwd, 'weights', file));
    assert.equal(requests[0]!.url, `/LibreYOLO/${stem}/resolve/main/${stem}.pt`, given);
  }
});

test('downloads into <target>.part-<random> and renames only when complete', async () => {
  const cwd = freshCwd();
  const seen: string[][] = [];
  const progress: number[] = [];
  const got = await resolveWeights('LibreYOLO9s.pt', {
    cwd, env: env(), ...quiet,
    onProgress: (received, total) => {
      assert.equal(total, PAYLOAD.length);
      progress.push(received);
      seen.push(readdirSync(join(cwd, 'weights')));
    },
  });
  assert.equal(progress.at(-1), PAYLOAD.length);
  assert.ok(progress.length >= 2);
  for (const listing of seen) {
    assert.equal(listing.length, 1);
    assert.match(listing[0]!, /^LibreYOLO9s\.pt\.part-[0-9a-f]+$/);
  }
  assert.deepEqual(readdirSync(join(cwd, 'weights')), ['LibreYOLO9s.pt']);
  assert.deepEqual(readFileSync(got), PAYLOAD);
});

test('a non-bare missing path is downloaded to that literal path', async () => {
  const cwd = freshCwd();
  const got = await resolveWeights('models/v1/LibreYOLO9c.pt', { cwd, env: env(), ...quiet });
  assert.equal(got, join(cwd, 'models/v1/LibreYOLO9c.pt'));
  assert.deepEqual(readFileSync(got), PAYLOAD);
});

test('progress is printed as 25 % lines when stderr is not a TTY', async () => {
  const cwd = freshCwd();
  const lines: string[] = [];
  const write = process.stderr.write;
  const isTTY = process.stderr.isTTY;
  process.stderr.isTTY = false;
  process.stderr.write = ((chunk: string) => (lines.push(String(chunk)), true)) as typeof process.stderr.write;
  try {
    await resolveWeights('LibreYOLO9t.pt', { cwd, env: env() });
  } finally {
    process.stderr.write = write;
    process.stderr.isTTY = isTTY;
  }
  const text = lines.join('');
  assert.match(text, /Downloading http:\/\/127\.0\.0\.1:\d+\/LibreYOLO\/LibreYOLO9t\/resolve\/main\/LibreYOLO9t\.pt/);
  for (const pct of [25, 50, 75, 100]) assert.match(text, new RegExp(`\\b${pct}%`));
});

test('HTTP 404 fails with download_failed naming the URL; nothing is left behind', async () => {
  const cwd = freshCwd();
  handler = (_req, res) => res.writeHead(404, 'Not Found').end('nope');
  try {
    const url = `${endpoint}/LibreYOLO/LibreYOLO9t/resolve/main/LibreYOLO9t.pt`;
    await assert.rejects(resolveWeights('LibreYOLO9t.pt', { cwd, env: env(), ...quiet }),
      rejectsWith('download_failed', url, 'HTTP 404', join(cwd, 'weights', 'LibreYOLO9t.pt')));
    assert.deepEqual(existsSync(join(cwd, 'weights')) ? readdirSync(join(cwd, 'weights')) : [], []);
  } finally {
    handler = undefined;
  }
});

test('a connection cut mid-file removes the partial file', async () => {
  const cwd = freshCwd();
  handler = (_req, res) => {
    res.writeHead(200, { 'content-length': 1000 });
    res.write(Buffer.alloc(400));
    setTimeout(() => res.destroy(), 20);
  };
  try {
    await assert.rejects(resolveWeights('LibreYOLO9t.pt', { cwd, env: env(), ...quiet }), rejectsWith('download_failed', endpoint));
    assert.deepEqual(readdirSync(join(cwd, 'weights')), []);
  } finally {
    handler = undefined;
  }
});

test('an unreachable server fails naming the URL and how to supply the file', async () => {
  const cwd = freshCwd();
  const port = await closedPort();
  const url = `http://127.0.0.1:${port}/LibreYOLO/LibreYOLO9m/resolve/main/LibreYOLO9m.pt`;
  await assert.rejects(resolveWeights('LibreYOLO9m', { cwd, env: {}, endpoint: `http://127.0.0.1:${port}`, ...quiet }),
    rejectsWith('download_failed', url, `place it at ${join(cwd, 'weights', 'LibreYOLO9m.pt')}`, 'HF_ENDPOINT', /ECONNREFUSED/));
  assert.equal(existsSync(join(cwd, 'weights', 'LibreYOLO9m.pt')), false);
});

test('HF_HUB_OFFLINE=1 refuses to download, with a clear message', async () => {
  const cwd = freshCwd();
  requests.length = 0;
  await assert.rejects(resolveWeights('LibreYOLO9t.pt', { cwd, env: env({ HF_HUB_OFFLINE: '1' }), ...quiet }),
    rejectsWith('model_not_found', 'HF_HUB_OFFLINE=1', `${endpoint}/LibreYOLO/LibreYOLO9t/resolve/main/LibreYOLO9t.pt`,
      join(cwd, 'weights', 'LibreYOLO9t.pt'), /local path/));
  await assert.rejects(resolveWeights('LibreYOLO9t.pt', { cwd, env: env(), allowDownload: false, ...quiet }),
    rejectsWith('model_not_found', /Downloading is disabled/));
  assert.equal(requests.length, 0);
});

test('existing files are used without touching the network', async () => {
  const cwd = freshCwd();
  const offline = { cwd, env: { HF_HUB_OFFLINE: '1', HF_ENDPOINT: `http://127.0.0.1:${await closedPort()}` }, ...quiet };
  mkdirSync(join(cwd, 'weights'));
  writeFileSync(join(cwd, 'weights', 'LibreYOLO9t.pt'), 'w');
  writeFileSync(join(cwd, 'LibreYOLO9t.pt'), 'here');
  writeFileSync(join(cwd, 'LibreYOLO9s.pt'), 'here');
  mkdirSync(join(cwd, 'sub'));
  writeFileSync(join(cwd, 'sub', 'custom.pt'), 'x');
  // bare names: weights/<name> wins over ./<name>, as in the original
  assert.equal(await resolveWeights('LibreYOLO9t.pt', offline), join(cwd, 'weights', 'LibreYOLO9t.pt'));
  assert.equal(await resolveWeights('LibreYOLO9t', offline), join(cwd, 'weights', 'LibreYOLO9t.pt'));
  assert.equal(await resolveWeights('./LibreYOLO9t.pt', offline), join(cwd, 'LibreYOLO9t.pt')); // explicit ./ is a path
  assert.equal(await resolveWeights('LibreYOLO/LibreYOLO9t', offline), join(cwd, 'weights', 'LibreYOLO9t.pt'));
  assert.equal(await resolveWeights('LibreYOLO9s', offline), join(cwd, 'LibreYOLO9s.pt')); // then ./<name>
  assert.equal(await resolveWeights('sub/custom.pt', offline), join(cwd, 'sub', 'custom.pt'));
  assert.equal(await resolveWeights(join(cwd, 'sub', 'custom.pt'), offline), join(cwd, 'sub', 'custom.pt'));
});

test('unknown names fail with model_not_found and a suggestion when close', async () => {
  const cwd = freshCwd();
  await assert.rejects(resolveWeights('LibreYOLO9x.pt', { cwd, env: env(), ...quiet }),
    rejectsWith('model_not_found', 'LibreYOLO9x.pt', "Did you mean 'LibreYOLO9t.pt'?"));
  await assert.rejects(resolveWeights('mymodel.onnx', { cwd, env: env(), ...quiet }), (e: unknown) => {
    assert.ok(e instanceof LibreYOLOError && e.code === 'model_not_found');
    assert.doesNotMatch(e.message, /Did you mean/);
    return true;
  });
});
