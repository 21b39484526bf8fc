/** Runs the real `libreyolo` command (src/cli/bin.ts through tsx) as a child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from './fixtures.ts';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Wall time of the child, ms. */
  ms: number;
  /** Peak resident set of the CLI process (its own VmHWM at exit, see RSS_HOOK), MB; with `{ rss: true }`. */
  peakRssMb?: number;
  /**
   * Peak resident sets of the processes and worker threads it started that inherited the hook
   * (each reports when it exits, so before the CLI process does), MB; with `{ rss: true }`.
   */
  childPeakRssMb?: number[];
}

/**
 * Preloaded into the child with `{ rss: true }`: prints its peak RSS on stderr as it exits. On Linux
 * that is VmHWM from /proc/self/status, the high-water mark of this process image alone: getrusage's
 * maxRSS keeps, across the exec, the RSS of the process that forked it (libuv forks the test file's
 * process, which had grown to 648 MB after an in-process probe, and the CLI process then read 648
 * MB though it held 131). Elsewhere, resourceUsage().maxRSS.
 */
const RSS_HOOK = "data:text/javascript,import{readFileSync,writeSync}from'node:fs';process.on('exit',()=>{let kb=process.resourceUsage().maxRSS;try{kb=Number(/VmHWM:\\s*(\\d+)/.exec(readFileSync('/proc/self/status','utf8'))[1])}catch{}writeSync(2,'\\nLIBREYOLO_TEST_MAXRSS_KB='+kb+'\\n')})";
const RSS_LINE = /\n?LIBREYOLO_TEST_MAXRSS_KB=(\d+)\n/g;

// Resolved here so the child finds tsx even when its cwd is a temp folder outside the repo.
const TSX = import.meta.resolve('tsx');
const BIN = join(REPO_ROOT, 'src', 'cli', 'bin.ts');
const BUILT_BIN = join(REPO_ROOT, 'dist', 'cli', 'bin.js');

/** Newest modification time (ms) of a file under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const rel of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const st = statSync(join(dir, rel));
    if (st.isFile()) newest = Math.max(newest, st.mtimeMs);
  }
  return newest;
}

let cliEntry: string[] | undefined;
/**
 * How a child runs the CLI: the compiled dist/cli/bin.js (what the package's bin runs) when it was
 * built after the last change to any file under src/, as `npm ci` leaves a fresh clone (its
 * `prepare` builds); else src/cli/bin.ts through tsx. The same code either way; the compiled one
 * starts in about a third of the CPU time (tsx resolves and loads every module on its hooks thread),
 * and the e2e tier starts some 250 children. LIBREYOLO_TEST_CLI=src always runs the source.
 */
export function cliEntryArgs(): string[] {
  cliEntry ??= process.env.LIBREYOLO_TEST_CLI !== 'src' && existsSync(BUILT_BIN) && statSync(BUILT_BIN).mtimeMs > newestMtime(join(REPO_ROOT, 'src'))
    ? [BUILT_BIN]
    : ['--import', TSX, BIN];
  return cliEntry;
}

/** The child's node arguments: `hook` preloads (`--import ...`) before the entry, then `args`. */
const cliArgv = (args: string[], hook: string[] = []): string[] => {
  const entry = cliEntryArgs();
  return entry.length === 1 ? [...hook, entry[0]!, ...args] : [entry[0]!, entry[1]!, ...hook, entry[2]!, ...args];
};

/**
 * `libreyolo ...args` in `cwd`. The child never reaches the network: HF_HUB_OFFLINE=1 unless `env`
 * overrides it (set a key to undefined to remove it). It is killed after `timeoutMs` (default 5 min: a
 * training run takes 2 min on a loaded 2-core machine), and its stderr then says so.
 */
export function runCli(args: string[], cwd: string, env: Record<string, string | undefined> = {}, opts: { rss?: boolean; timeoutMs?: number } = {}): Promise<CliRun> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, HF_HUB_OFFLINE: '1', ...env };
  delete childEnv.NODE_TEST_CONTEXT; // the child is not part of the test runner
  delete childEnv.LIBREYOLO_DEBUG;
  // Started as plain `libreyolo` (an outer `npx` would make its hints say `npx libreyolo`).
  if (!('npm_command' in env)) delete childEnv.npm_command;
  for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const hook = opts.rss ? ['--import', RSS_HOOK] : [];
    const child = spawn(process.execPath, cliArgv(args, hook), { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const timeoutMs = opts.timeoutMs ?? 300_000;
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const ms = performance.now() - started;
      if (killed) stderr += `\n[runCli: killed after ${timeoutMs} ms: libreyolo ${args.join(' ')}]\n`;
      // The CLI process exits last, after everything it started: its line is the last one.
      const peaks = [...stderr.matchAll(RSS_LINE)].map((m) => Number(m[1]) / 1024);
      if (!peaks.length) return resolve({ code, stdout, stderr, ms });
      resolve({ code, stdout, stderr: stderr.replace(RSS_LINE, ''), ms, peakRssMb: peaks.at(-1)!, childPeakRssMb: peaks.slice(0, -1) });
    });
  });
}

/** A long-running `libreyolo ...args` (a server): its first stdout line, and a stop that sends SIGINT and waits for the exit. */
export interface LiveCli {
  child: ChildProcess;
  firstLine: string;
  stderr(): string;
  /** SIGINT, then the exit code once it has exited. */
  stop(): Promise<number | null>;
}

export function startCli(args: string[], cwd: string, env: Record<string, string | undefined> = {}, timeoutMs = 60_000): Promise<LiveCli> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, HF_HUB_OFFLINE: '1', ...env };
  delete childEnv.NODE_TEST_CONTEXT;
  delete childEnv.LIBREYOLO_DEBUG;
  for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
  const child = spawn(process.execPath, cliArgv(args), { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no output from libreyolo ${args.join(' ')} in ${timeoutMs} ms: ${stderr}`)); }, timeoutMs);
    child.stdout!.setEncoding('utf8').on('data', (s: string) => {
      stdout += s;
      const nl = stdout.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      resolve({
        child, firstLine: stdout.slice(0, nl), stderr: () => stderr,
        stop: async () => { if (child.exitCode === null) child.kill('SIGINT'); return exited; },
      });
    });
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`libreyolo ${args.join(' ')} exited ${code} before printing: ${stderr}`)); });
  });
}

/** A 127.0.0.1 port nothing listens on: bind one, then close it. */
/**
 * Resolves once something listens on 127.0.0.1:`port` (Linux: a LISTEN row in /proc/net/tcp), without
 * connecting: a server that takes one client (ffmpeg's `listen=1`) keeps it for the test.
 */
export async function listening(port: number, timeoutMs = 30_000): Promise<void> {
  const row = new RegExp(`^\\s*\\d+: 0100007F:${port.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A `, 'm');
  for (const t0 = performance.now(); performance.now() - t0 < timeoutMs;) {
    if (row.test(readFileSync('/proc/net/tcp', 'utf8'))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listened on 127.0.0.1:${port} within ${timeoutMs} ms`);
}

export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}
