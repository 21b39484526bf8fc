/**
 * A project that installs libreyolo from its `npm pack` tarball, offline (npm served from its cache,
 * every other host unreachable). Offline npm cannot resolve version ranges (the registry's package
 * documents are not cached), so the project pins what our own lock file pins: its package-lock.json
 * holds the tarball and our lock's production entries, and it installs with `npm ci`.
 *
 * onnxruntime-node's postinstall downloads its Linux CUDA provider from api.nuget.org; our own
 * package.json cannot stop that in someone else's project, so the README tells consumers to skip it
 * with ONNXRUNTIME_NODE_INSTALL=skip or their own `allowScripts` entry. This checks both switches,
 * and that without either the install fails on that download.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { closedPort } from '../helpers/cli.ts';
import { copyWorkingTree, describeRun, plainShellEnv, runShell as sh, type ShellRun } from '../helpers/clone.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';

const CUDA_PROVIDER = join('node_modules', 'onnxruntime-node', 'bin', 'napi-v6', 'linux', 'x64', 'libonnxruntime_providers_cuda.so');

describe('installing the npm pack tarball into a project, offline', { concurrency: 1 }, () => {
  let parent: string;
  let tarball: string;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    parent = mkdtempSync(join(tmpdir(), 'libreyolo-consumer-'));
    const clone = copyWorkingTree(parent);
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(clone, 'node_modules'));
    // A checkout that built before: output of a module since removed must not reach the tarball.
    mkdirSync(join(clone, 'dist'), { recursive: true });
    writeFileSync(join(clone, 'dist', 'removed-module.js'), 'export {};\n');
    // Any host but npm's cache is unreachable: onnxruntime-node's downloader honours global-agent's proxy.
    const dead = `http://127.0.0.1:${await closedPort()}`;
    env = plainShellEnv({ npm_config_offline: 'true', GLOBAL_AGENT_HTTP_PROXY: dead, GLOBAL_AGENT_HTTPS_PROXY: dead });
    const pack = await sh(`npm pack --pack-destination ${parent}`, clone, env); // runs prepare: a fresh dist/
    assert.equal(pack.code, 0, describeRun('npm pack', pack));
    const tgz = readdirSync(parent).filter((f) => f.endsWith('.tgz'));
    assert.equal(tgz.length, 1, `npm pack wrote ${tgz.join(', ')}`);
    tarball = join(parent, tgz[0]!);
  });

  after(() => rmSync(parent, { recursive: true, force: true }));

  /** A project depending on the tarball, with a lock file pinned to our lock's production entries. */
  const project = (name: string, extra: Record<string, unknown> = {}): string => {
    const dir = join(parent, name);
    mkdirSync(dir);
    const ours = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    const ourLock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, Record<string, unknown>> };
    const dependencies = { libreyolo: `file:../${tarball.split('/').pop()!}` };
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type: 'module', dependencies, ...extra }, null, 2));
    const packages: Record<string, Record<string, unknown>> = {
      '': { name, version: '1.0.0', dependencies },
      'node_modules/libreyolo': {
        version: ours.version, resolved: dependencies.libreyolo, license: ours.license,
        dependencies: ours.dependencies, bin: ours.bin, engines: ours.engines,
      },
    };
    for (const [key, entry] of Object.entries(ourLock.packages)) {
      if (key === '' || entry.dev === true) continue;
      const { devOptional, ...rest } = entry;
      packages[key] = devOptional ? { ...rest, optional: true } : rest;
    }
    writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ name, version: '1.0.0', lockfileVersion: 3, requires: true, packages }, null, 2));
    return dir;
  };

  /**
   * A project installed with `ONNXRUNTIME_NODE_INSTALL=skip npm ci`, made by the first test that asks
   * and shared by the others: the library run and the type-check need the same install, paid once.
   */
  let skipInstall: Promise<{ dir: string; install: ShellRun }> | undefined;
  const installedWithSkip = (): Promise<{ dir: string; install: ShellRun }> => (skipInstall ??= (async () => {
    const dir = project('env-skip');
    return { dir, install: await sh('ONNXRUNTIME_NODE_INSTALL=skip npm ci', dir, env) };
  })());

  it('without a switch, the install fails on onnxruntime-node downloading its CUDA provider', async () => {
    const dir = project('no-switch');
    const cmd = 'npm ci';
    const r = await sh(cmd, dir, env);
    assert.notEqual(r.code, 0, describeRun(cmd, r));
    assert.match(r.stderr, /node_modules\/onnxruntime-node[\s\S]*node \.\/script\/install/, describeRun(cmd, r));
    assert.match(r.stderr, /ECONNREFUSED|ENOTFOUND|EAI_AGAIN/, describeRun(cmd, r));
  });

  it('ONNXRUNTIME_NODE_INSTALL=skip installs it; the command and the library run', async () => {
    const cmd = 'ONNXRUNTIME_NODE_INSTALL=skip npm ci';
    const { dir, install: r } = await installedWithSkip();
    assert.equal(r.code, 0, describeRun(cmd, r));
    // Only onnxruntime-node is listed as not covered (the project has no allowScripts), never libreyolo or another.
    for (const m of r.stderr.matchAll(/^npm warn install-scripts {3}(\S+)@/gm)) assert.equal(m[1], 'onnxruntime-node', describeRun(cmd, r));
    assert.doesNotMatch(r.stderr, /Unknown (project|user|env) config/);
    if (process.platform === 'linux' && process.arch === 'x64') assert.ok(!existsSync(join(dir, CUDA_PROVIDER)), 'the CUDA provider was not downloaded');

    const predict = await sh('npx libreyolo predict --json', dir, env);
    assert.equal(predict.code, 0, describeRun('npx libreyolo predict --json', predict));
    const out = JSON.parse(predict.stdout) as { results: { path: string; detections: unknown[] }[] };
    assert.match(out.results[0]!.path, /node_modules\/libreyolo\/assets\/sample\.jpg$/);
    assert.ok(out.results[0]!.detections.length > 0, 'the bundled model finds shapes in the bundled sample');

    writeFileSync(join(dir, 'app.js'), [
      "import { LibreYOLO, SAMPLE_IMAGE } from 'libreyolo';",
      'const model = await LibreYOLO();',
      'const r = await model.predictOne(SAMPLE_IMAGE);',
      'console.log(JSON.stringify(r.summary().map((d) => d.name)));',
      'await model.close();',
    ].join('\n'));
    const app = await sh('node app.js', dir, env);
    assert.equal(app.code, 0, describeRun('node app.js', app));
    assert.ok((JSON.parse(app.stdout) as string[]).length > 0);
  });

  it('the tarball holds the compiled library, its types, the CLI and the bundled model and images, and no source maps to absent sources', async () => {
    const list = await sh(`tar -tzf ${tarball}`, parent, env);
    assert.equal(list.code, 0, describeRun('tar -tzf', list));
    const files = list.stdout.split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
    for (const need of ['package.json', 'README.md', 'LICENSE', 'bin/libreyolo.js', 'dist/index.js', 'dist/index.d.ts', 'dist/cli/bin.js',
      'assets/LibreYOLO9t-shapes.pt', 'assets/sample.jpg', 'assets/sample-large.jpg']) {
      assert.ok(files.includes(need), `${need} is in the package`);
    }
    // src/ is not shipped, so a map would point a debugger at files that are not there.
    assert.deepEqual(files.filter((f) => f.endsWith('.map')), [], 'no source maps');
    assert.ok(!files.includes('dist/removed-module.js'), 'the build starts from an empty dist/: stale output is not packed');
    assert.deepEqual(files.filter((f) => /^(src|test|bench|scripts)\//.test(f)), [], 'no sources, tests, benches or scripts');
  });

  it('a strict TypeScript project type-checks against the installed declarations (nodenext, no skipLibCheck)', async () => {
    const { dir, install: r } = await installedWithSkip();
    assert.equal(r.code, 0, describeRun('ONNXRUNTIME_NODE_INSTALL=skip npm ci', r));
    symlinkSync(join(REPO_ROOT, 'node_modules', '@types'), join(dir, 'node_modules', '@types'));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, types: ['node'] },
    }));
    writeFileSync(join(dir, 'app.ts'), [
      "import { LibreYOLO, SAMPLE_IMAGE, type ImageSource, type Results, type SummaryRow } from 'libreyolo';",
      'const model = await LibreYOLO();',
      'const sources: ImageSource[] = [SAMPLE_IMAGE];',
      'const results: Results[] = await model.predictAll(sources, { conf: 0.25 });',
      'const rows: SummaryRow[] = results.flatMap((r) => r.summary());',
      'const ms: number = results[0]!.speed.inference;',
      'console.log(rows.length, ms);',
      'await model.close();',
    ].join('\n'));
    const tsc = `node ${join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc')} -p .`;
    const ok = await sh(tsc, dir, env);
    assert.equal(ok.code, 0, describeRun(tsc, ok));
    // The declarations are real types, not any: a misspelt option and a wrong field type are errors.
    writeFileSync(join(dir, 'wrong.ts'), [
      "import { LibreYOLO, SAMPLE_IMAGE } from 'libreyolo';",
      'const r = await (await LibreYOLO()).predictOne(SAMPLE_IMAGE, { conff: 0.25 });',
      'const s: string = r.length;',
      'console.log(s);',
    ].join('\n'));
    const bad = await sh(tsc, dir, env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stdout, /wrong\.ts\(2,\d+\): error TS2561: .*'conff'/);
    assert.match(bad.stdout, /wrong\.ts\(3,7\): error TS2322: Type 'number' is not assignable to type 'string'/);
  });

  it('the README\'s `npm pkg set allowScripts.onnxruntime-node=false --json` installs it too, and npm prints nothing to act on (no install-scripts warning, none for libreyolo\'s prepare)', async () => {
    const dir = project('allow-scripts');
    const set = 'npm pkg set allowScripts.onnxruntime-node=false --json';
    assert.match(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'), new RegExp(`\`${set.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} && npm install\\s+libreyolo\``), 'the README says this command');
    const s = await sh(set, dir, env);
    assert.equal(s.code, 0, describeRun(set, s));
    const cmd = 'npm ci';
    const r = await sh(cmd, dir, env);
    assert.equal(r.code, 0, describeRun(cmd, r));
    assert.doesNotMatch(r.stderr, /install-scripts|npm warn|libreyolo|prepare/, describeRun(cmd, r));
    if (process.platform === 'linux' && process.arch === 'x64') assert.ok(!existsSync(join(dir, CUDA_PROVIDER)), 'the CUDA provider was not downloaded');
    const help = await sh('npx libreyolo --version', dir, env);
    assert.equal(help.code, 0, describeRun('npx libreyolo --version', help));
  });
});
