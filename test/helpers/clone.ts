/**
 * A fresh-clone stand-in for tests that run what a newcomer runs: the working tree's files (tracked and
 * untracked-but-not-ignored, as `git ls-files` lists them) copied into a temp folder with `../shared`
 * (links to the real one) beside it, and a shell environment without the test runner's npm variables or its PATH additions.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { REPO_ROOT } from './fixtures.ts';

/** Copies the working tree to `<parent>/libreyolo-ts` and links `<parent>/shared`; returns the copy. */
export function copyWorkingTree(parent: string): string {
  const shared = resolve(REPO_ROOT, '../shared');
  if (!existsSync(join(shared, 'fixtures'))) throw new Error(`Missing ${shared}/fixtures: these tests need ../shared beside the checkout, as CI provides it.`);
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  const dest = join(parent, 'libreyolo-ts');
  for (const rel of new Set(listed.split('\0').filter(Boolean))) {
    const from = join(REPO_ROOT, rel);
    if (!existsSync(from)) continue; // tracked but deleted in the working tree
    mkdirSync(dirname(join(dest, rel)), { recursive: true });
    cpSync(from, join(dest, rel));
  }
  // ../shared holds links, never the real folders' files: a command that writes beside a fixture
  // (an export next to its weights) writes into the temp folder, not into the shared fixtures.
  mkdirSync(join(parent, 'shared', 'fixtures'), { recursive: true });
  for (const entry of readdirSync(shared)) if (entry !== 'fixtures') symlinkSync(join(shared, entry), join(parent, 'shared', entry));
  for (const f of readdirSync(join(shared, 'fixtures'))) symlinkSync(join(shared, 'fixtures', f), join(parent, 'shared', 'fixtures', f));
  return dest;
}

/**
 * The environment of a plain shell: no `npm_*` variables (npm test sets its own config and package
 * paths), no `node_modules/.bin` on PATH (npm adds it; a newcomer's shell has none), no test-runner
 * context, no offline or install switches from CI; then `extra` (undefined removes a key).
 */
export function plainShellEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) || ['NODE_TEST_CONTEXT', 'INIT_CWD', 'ONNXRUNTIME_NODE_INSTALL', 'HF_HUB_OFFLINE', 'HF_ENDPOINT', 'LIBREYOLO_DEBUG', 'NODE_OPTIONS'].includes(k)) continue;
    env[k] = v;
  }
  env.PATH = (process.env.PATH ?? '').split(':').filter((p) => !p.includes('node_modules/.bin') && !p.includes('node-gyp-bin')).join(':');
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export interface ShellRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `bash -c command` in `cwd` with exactly `env`; its whole process group is killed after `timeoutMs`. */
export function runShell(command: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 600_000): Promise<ShellRun> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a timeout also ends what npx and npm started below it.
    const child = spawn('bash', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A failure message: the command, its exit code and the tails of its output. */
export function describeRun(command: string, r: ShellRun, tail = 4000): string {
  const cut = (s: string) => (s.length > tail ? `...${s.slice(-tail)}` : s);
  return `\`${command}\` exited ${r.code}\n--- stdout\n${cut(r.stdout)}\n--- stderr\n${cut(r.stderr)}`;
}
