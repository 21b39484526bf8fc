/**
 * README.md runs as written. Every fenced block is run in README order in a fresh copy of the working
 * tree (`../shared` beside it, a plain shell environment, npm offline): `bash` / `sh` lines and the
 * `$ ` lines of `console` blocks through bash, each `ts` block saved as an `.mts` file, type-checked
 * under strict tsc against the package's published types and run with `npx tsx`, as the README says.
 *
 * Published hub weights come from a 127.0.0.1 mirror (HF_ENDPOINT) that serves the YOLOv9-t fixture
 * checkpoint under the hub's path, so those commands run through the real download code with no
 * network. LIBREYOLO_README_QUICK (default 1 here; set it to 0 to run the README verbatim) shortens the
 * long runs through the exact substitutions in QUICK below; each must match the README, so a changed
 * command fails here instead of silently running long.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { copyWorkingTree, describeRun, plainShellEnv, runShell as sh } from '../helpers/clone.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { fencedBlocks, shellLines, type FencedBlock } from '../helpers/readme-blocks.ts';

const QUICK_MODE = process.env.LIBREYOLO_README_QUICK !== '0';

/** README text -> what the quick run executes instead (fewer images, epochs and timed runs). */
const QUICK: [string, string][] = [
  ['--train 400 --val 80', '--train 24 --val 8'],
  ['epochs=30', 'epochs=1'],
  ['epochs: 10', 'epochs: 1'],
  ['--warmup 5 --runs 20 --repeat 3', '--warmup 1 --runs 3 --repeat 2'],
  // the quick dataset (24 images) holds 6 iterations of batch 4: the default window would exit 3
  ['--batch 8 --imgsz 160 --project runs/profile/t', '--batch 4 --imgsz 160 --steps 4 --warmup 2 --project runs/profile/t'],
  ['--batch 8 --imgsz 160 --repeat 3 --project runs/profile/r', '--batch 4 --imgsz 160 --steps 4 --warmup 2 --repeat 2 --project runs/profile/r'],
];

/** Lines the test does not run, with the reason. */
const NOT_RUN = new Map([['npm test', 'it is the suite this test is part of']]);

/** Lines that need hardware this machine may lack: exit 0 where it exists, else exactly this failure. */
const NEEDS_HARDWARE = new Map([
  ['npx libreyolo predict device=webgpu cuda_graph=auto', { code: 1, stderr: /^Error: Device 'webgpu' is not available: .*\nThe WebGPU provider needs a GPU with a Vulkan driver\. Pass device=cpu to run on the CPU\./m }],
]);

/** The hub path of the published weights the README names, served from the fixture. */
const HUB_FILES = new Map([['/LibreYOLO/LibreYOLO9t/resolve/main/LibreYOLO9t.pt', fixture('yolo9t_ref.pt')]]);

const SHELL_LANGS = new Set(['bash', 'sh', 'console']);
const RUNNABLE_LANGS = new Set([...SHELL_LANGS, 'ts']);

function readmeText(): string {
  let text = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  if (!QUICK_MODE) return text;
  for (const [from, to] of QUICK) {
    assert.ok(text.includes(from), `LIBREYOLO_README_QUICK substitution "${from}" no longer matches README.md: update QUICK in test/e2e/readme.test.ts`);
    text = text.split(from).join(to);
  }
  return text;
}

const blocks = fencedBlocks(readmeText());
const firstTs = blocks.findIndex((b) => b.lang === 'ts');
const snippetFile = (b: FencedBlock) => `readme-snippet-${b.line}.mts`;

describe('README.md runs as written', { concurrency: 1 }, () => {
  let parent: string;
  let clone: string;
  let env: NodeJS.ProcessEnv;
  let server: Server;
  const hubRequests: string[] = [];

  before(async () => {
    parent = mkdtempSync(join(tmpdir(), 'libreyolo-readme-'));
    clone = copyWorkingTree(parent);
    server = createServer((req, res) => {
      hubRequests.push(req.url ?? '');
      const file = HUB_FILES.get(req.url ?? '');
      if (!file) return void res.writeHead(404).end('Entry not found');
      res.writeHead(200, { 'content-length': statSync(file).size, 'content-type': 'application/octet-stream' }).end(readFileSync(file));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    env = plainShellEnv({ HF_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, npm_config_offline: 'true' });
  });

  after(async () => {
    await new Promise((r) => server.close(r));
    rmSync(parent, { recursive: true, force: true });
  });

  it('has only block languages this test knows how to run or knowingly leaves alone', () => {
    const unknown = blocks.filter((b) => !RUNNABLE_LANGS.has(b.lang) && b.lang !== 'text');
    assert.deepEqual(unknown.map((b) => `README.md:${b.line} \`\`\`${b.lang}`), []);
    const all = blocks.filter((b) => SHELL_LANGS.has(b.lang)).flatMap(shellLines).map((l) => l.command);
    for (const line of [...NOT_RUN.keys(), ...NEEDS_HARDWARE.keys()]) assert.ok(all.includes(line), `"${line}" is listed in test/e2e/readme.test.ts but no longer in README.md`);
    const bare = all.filter((l) => /^libreyolo\b/.test(l));
    assert.deepEqual(bare, [], 'bare `libreyolo` is not on PATH after npm ci: write `npx libreyolo ...`');
  });

  blocks.forEach((block, index) => {
    if (index === firstTs) {
      it('its TypeScript snippets type-check under strict tsc against the built package types', async () => {
        const snippets = blocks.filter((b) => b.lang === 'ts');
        for (const b of snippets) writeFileSync(join(clone, snippetFile(b)), `${b.code}\n`);
        const cmd = `npx tsc --noEmit --strict --target es2022 --module nodenext --moduleResolution nodenext --types node ${snippets.map(snippetFile).join(' ')}`;
        const r = await sh(cmd, clone, env);
        assert.equal(r.code, 0, describeRun(cmd, r));
      });
    }
    if (block.lang === 'ts') {
      it(`README.md:${block.line} ts snippet runs with npx tsx`, async () => {
        writeFileSync(join(clone, snippetFile(block)), `${block.code}\n`);
        const cmd = `npx tsx ${snippetFile(block)}`;
        const r = await sh(cmd, clone, env);
        assert.equal(r.code, 0, describeRun(cmd, r));
      });
      return;
    }
    if (!SHELL_LANGS.has(block.lang)) return;
    for (const { line, text, command } of shellLines(block)) {
      const reason = NOT_RUN.get(command);
      if (reason) {
        it(`README.md:${line} \`${text}\` (not run: ${reason})`, () => {});
        continue;
      }
      it(`README.md:${line} \`${text}\``, async () => {
        const r = await sh(text, clone, env);
        assert.doesNotMatch(r.stderr, /Unknown (project|user|env|global|builtin) config/, 'npm warns about a config key it does not know');
        const hw = NEEDS_HARDWARE.get(command);
        if (hw && r.code !== 0) {
          assert.equal(r.code, hw.code, describeRun(text, r));
          assert.match(r.stderr, hw.stderr, describeRun(text, r));
          return;
        }
        assert.equal(r.code, 0, describeRun(text, r));
      });
    }
  });

  it('fetched the published weights from the hub mirror and nothing else', () => {
    assert.deepEqual([...new Set(hubRequests)], [...HUB_FILES.keys()]);
    assert.equal(statSync(join(clone, 'weights', 'LibreYOLO9t.pt')).size, statSync(fixture('yolo9t_ref.pt')).size);
  });
});
