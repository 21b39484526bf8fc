/**
 * README.md and docs/*.md run as written. Every fenced block is run, README.md first and then each
 * document in the order the README links it (any document it does not link after those, by name), in
 * one fresh copy of the working tree (`../shared` beside it, a plain shell environment, npm offline):
 * `bash` / `sh` lines and the `$ ` lines of `console` blocks through bash, each `ts` block saved as an
 * `.mts` file, type-checked under strict tsc against the package's published types and run with
 * `npx tsx`, as the README says. A document may use what an earlier one made (the README's `npm ci`).
 *
 * Published hub weights come from a 127.0.0.1 mirror (HF_ENDPOINT) that serves the YOLOv9-t fixture
 * checkpoint under the hub's path, so those commands run through the real download code with no
 * network. LIBREYOLO_README_QUICK (default 1 here; set it to 0 to run the documents verbatim) shortens
 * the long runs through the exact substitutions in QUICK below; each must match a document, so a
 * changed command fails here instead of silently running long.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { copyWorkingTree, describeRun, plainShellEnv, runShell as sh } from '../helpers/clone.ts';
import { fixture, REPO_ROOT } from '../helpers/fixtures.ts';
import { fencedBlocks, shellLines, type FencedBlock } from '../helpers/readme-blocks.ts';

const QUICK_MODE = process.env.LIBREYOLO_README_QUICK !== '0';

/** Document text -> what the quick run executes instead (fewer images, epochs and timed runs). */
const QUICK: [string, string][] = [
  ['--train 4000 --val 400', '--train 8 --val 4'],
  ['--train 420 --val 16', '--train 8 --val 4'],
  ['--train 400 --val 80', '--train 24 --val 8'],
  ['epochs=30', 'epochs=1'],
  ['epochs: 10', 'epochs: 1'],
  ['--warmup 5 --runs 20 --repeat 3', '--warmup 1 --runs 3 --repeat 2'],
  // the quick dataset (24 images) holds 6 iterations of batch 4: the default window would exit 3
  ['--batch 8 --imgsz 160 --project runs/profile/t', '--batch 4 --imgsz 160 --steps 4 --warmup 2 --project runs/profile/t'],
  ['--batch 8 --imgsz 160 --repeat 3 --project runs/profile/r', '--batch 4 --imgsz 160 --steps 4 --warmup 2 --repeat 2 --project runs/profile/r'],
  // profile infer's default window (warmup 20 + runs 100) at 640
  ['--weights LibreYOLO9t-shapes              # the bundled model', '--weights LibreYOLO9t-shapes --warmup 2 --runs 10 # the bundled model'],
  // one RF-DETR batch of 2 instead of two (test/e2e/rfdetr-train-cli.test.ts trains the same command on 4)
  ['shapes-rf --train 4 --val 1', 'shapes-rf --train 2 --val 1'],
];

/** Lines the test does not run, with the reason. */
const NOT_RUN = new Map([
  ['npm test', 'it is the suite this test is part of'],
  ['npm run test:unit', 'the unit tier runs in this suite already'],
  ['node --import tsx scripts/train-default-model.ts epochs=5 no_aug_epochs=1', 'the bundled model\'s 58-minute training, recorded in docs/default-model.md'],
  ['node --import tsx scripts/train-default-model.ts resume=runs/train/shapes6/weights/last.pt epochs=12 no_aug_epochs=3', 'part of the bundled model\'s recorded training'],
  ['node --import tsx scripts/train-default-model.ts resume=runs/train/shapes6/weights/last.pt epochs=16 no_aug_epochs=3', 'part of the bundled model\'s recorded training'],
  ['node --import tsx scripts/package-default-model.ts runs/train/shapes6/weights/best.pt assets/LibreYOLO9t-shapes.pt', 'it replaces the bundled model the other documents run'],
  ['node --import tsx scripts/train-default-model.ts resume=runs/train/shapes6/weights/last.pt epochs=22 no_aug_epochs=6', 'a further cycle of the bundled model\'s training'],
  ['npx libreyolo train model=dfinen data=shapes/data.yaml epochs=16 batch=4 imgsz=640 workers=1 seed=0 eval_interval=1 threads=2', 'a 16-epoch D-FINE run at 640, recorded in docs/dfine.md'],
  ['npx libreyolo profile run datasets/shapes160/data.yaml --weights yolo9c --device cpu --batch 16 --imgsz 160', 'an 11-minute yolo9c run at scale, recorded in docs/profiling.md'],
]);

/** Lines that need hardware this machine may lack: exit 0 where it exists, else exactly this failure. */
const NEEDS_HARDWARE = new Map([
  ['npx libreyolo predict device=webgpu cuda_graph=auto', { code: 1, stderr: /^Error: Device 'webgpu' is not available: .*\nThe WebGPU provider needs a GPU with a Vulkan driver\. Pass device=cpu to run on the CPU\./m }],
]);

/** The hub paths of the published weights the documents name, served from the fixtures. */
const HUB_FILES = new Map([
  ['/LibreYOLO/LibreYOLO9t/resolve/main/LibreYOLO9t.pt', fixture('yolo9t_ref.pt')],
  ['/LibreYOLO/LibreYOLO9t-seg/resolve/main/LibreYOLO9t-seg.pt', fixture('yolo9t_seg_ref.pt')],
  ['/LibreYOLO/LibreYOLOXn/resolve/main/LibreYOLOXn.pt', fixture('yoloxn_ref.pt')],
  ['/LibreYOLO/LibreRFDETRn/resolve/main/LibreRFDETRn.pt', fixture('rfdetrn_ref.pt')],
  ['/LibreYOLO/LibreDFINEn/resolve/main/LibreDFINEn.pt', fixture('dfinen_ref.pt')],
]);

/**
 * What a line's trailing comment says it prints: files it `writes` (`# writes weights/x.onnx`) are
 * named in its output, at exactly that name (not `x2.onnx`), and `N detections` after `--json` is the
 * number of detections in the JSON it printed.
 */
function checkCommentedOutput(text: string, command: string, stdout: string, context: string): void {
  const comment = text.slice(command.length).replace(/^\s*#/, '');
  for (const [, file] of comment.matchAll(/\bwrites ((?:weights|runs)\/[\w./-]+\.\w+)/g)) {
    const named = new RegExp(`(^|[\\s/])${file!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\s|$)`, 'm');
    assert.match(stdout, named, `the comment says it writes ${file}\n${context}`);
  }
  const count = /\b(\d+) detections\b/.exec(comment);
  if (count && /--json\b/.test(command)) {
    const results = (JSON.parse(stdout) as { results: Array<{ detections: unknown[] }> }).results;
    assert.equal(results.reduce((n, r) => n + r.detections.length, 0), Number(count[1]), `the comment says ${count[0]}\n${context}`);
  }
}

const SHELL_LANGS = new Set(['bash', 'sh', 'console']);
const RUNNABLE_LANGS = new Set([...SHELL_LANGS, 'ts']);

/** README.md, then docs/*.md in the order the README links them, then any it does not link. */
function documentOrder(): string[] {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const docs = existsSync(join(REPO_ROOT, 'docs')) ? readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort() : [];
  const linked = [...readme.matchAll(/\]\(docs\/([^)#\s]+\.md)/g)].map((m) => m[1]!).filter((f, i, all) => docs.includes(f) && all.indexOf(f) === i);
  return ['README.md', ...linked.map((f) => `docs/${f}`), ...docs.filter((f) => !linked.includes(f)).map((f) => `docs/${f}`)];
}

interface DocBlock extends FencedBlock {
  /** `README.md` or `docs/<name>.md` */
  file: string;
}

function documentBlocks(): DocBlock[] {
  const texts = documentOrder().map((file) => ({ file, text: readFileSync(join(REPO_ROOT, file), 'utf8') }));
  if (QUICK_MODE) {
    for (const [from, to] of QUICK) {
      assert.ok(texts.some((d) => d.text.includes(from)), `LIBREYOLO_README_QUICK substitution "${from}" no longer matches README.md or docs/*.md: update QUICK in test/e2e/readme.test.ts`);
      for (const d of texts) d.text = d.text.split(from).join(to);
    }
  }
  return texts.flatMap(({ file, text }) => fencedBlocks(text, file).map((b) => ({ ...b, file })));
}

const blocks = documentBlocks();
const firstTs = blocks.findIndex((b) => b.lang === 'ts');
const lastReadme = blocks.map((b) => b.file).lastIndexOf('README.md');
const where = (b: { file: string }, line: number) => `${b.file}:${line}`;
const snippetFile = (b: DocBlock) => `readme-snippet-${b.file.replace(/\W+/g, '-')}-${b.line}.mts`;

describe('README.md and docs/*.md run as written', { concurrency: 1 }, () => {
  let parent: string;
  let clone: string;
  let env: NodeJS.ProcessEnv;
  let server: Server;
  const hubRequests: string[] = [];
  let copied: Set<string>;

  before(async () => {
    parent = mkdtempSync(join(tmpdir(), 'libreyolo-readme-'));
    clone = copyWorkingTree(parent);
    copied = new Set(readdirSync(clone));
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
    assert.deepEqual(unknown.map((b) => `${where(b, b.line)} \`\`\`${b.lang}`), []);
    const all = blocks.filter((b) => SHELL_LANGS.has(b.lang)).flatMap(shellLines).map((l) => l.command);
    for (const line of [...NOT_RUN.keys(), ...NEEDS_HARDWARE.keys()]) assert.ok(all.includes(line), `"${line}" is listed in test/e2e/readme.test.ts but no longer in README.md or docs/*.md`);
    const bare = all.filter((l) => /^libreyolo\b/.test(l));
    assert.deepEqual(bare, [], 'bare `libreyolo` is not on PATH after npm ci: write `npx libreyolo ...`');
  });

  blocks.forEach((block, index) => {
    if (index === firstTs) {
      it('the TypeScript snippets type-check under strict tsc against the built package types', async () => {
        const snippets = blocks.filter((b) => b.lang === 'ts');
        for (const b of snippets) writeFileSync(join(clone, snippetFile(b)), `${b.code}\n`);
        const cmd = `npx tsc --noEmit --strict --target es2022 --module nodenext --moduleResolution nodenext --types node ${snippets.map(snippetFile).join(' ')}`;
        const r = await sh(cmd, clone, env);
        assert.equal(r.code, 0, describeRun(cmd, r));
      });
    }
    if (block.lang === 'ts') {
      it(`${where(block, block.line)} ts snippet runs with npx tsx`, async () => {
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
        it(`${where(block, line)} \`${text}\` (not run: ${reason})`, () => {});
        continue;
      }
      it(`${where(block, line)} \`${text}\``, async () => {
        const r = await sh(text, clone, env);
        assert.doesNotMatch(r.stderr, /Unknown (project|user|env|global|builtin) config/, 'npm warns about a config key it does not know');
        // package.json's allowScripts covers every install script, so npm (11) has nothing to ask.
        assert.doesNotMatch(r.stderr, /install-scripts/, describeRun(text, r));
        const hw = NEEDS_HARDWARE.get(command);
        if (hw && r.code !== 0) {
          assert.equal(r.code, hw.code, describeRun(text, r));
          assert.match(r.stderr, hw.stderr, describeRun(text, r));
          return;
        }
        assert.equal(r.code, 0, describeRun(text, r));
        checkCommentedOutput(text, command, r.stdout, describeRun(text, r));
      });
    }
    if (index === lastReadme) {
      it("what README.md's commands made (runs/, weights/, dist/, ...) is in .gitignore, so git status stays clean", () => {
        const made = readdirSync(clone).filter((f) => !copied.has(f) && !f.startsWith('readme-snippet-'));
        assert.ok(made.length > 0, 'the README made something');
        // The clone is no git checkout: its .gitignore is read by git in an empty repository beside it.
        const repo = join(parent, 'ignore-check');
        mkdirSync(repo);
        copyFileSync(join(clone, '.gitignore'), join(repo, '.gitignore'));
        assert.equal(spawnSync('git', ['init', '-q'], { cwd: repo }).status, 0);
        const ignored = spawnSync('git', ['check-ignore', '--no-index', ...made.map((f) => statSync(join(clone, f)).isDirectory() ? `${f}/` : f)], { cwd: repo, encoding: 'utf8' });
        const listed = new Set(ignored.stdout.split('\n').filter(Boolean).map((f) => f.replace(/\/$/, '')));
        assert.deepEqual(made.filter((f) => !listed.has(f)), [], `made by README.md and not in .gitignore (all made: ${made.join(', ')})`);
      });
    }
  });

  it('fetched the published weights from the hub mirror and nothing else', () => {
    assert.deepEqual([...new Set(hubRequests)].sort(), [...HUB_FILES.keys()].sort());
    for (const [path, file] of HUB_FILES) assert.equal(statSync(join(clone, 'weights', path.split('/').at(-1)!)).size, statSync(file).size, path);
  });
});
