/**
 * Starts a worker thread on a sibling module of the caller: `<name>.js` in the compiled package, or
 * `<name>.ts` when running from sources under tsx (Node 20 does not apply tsx's loader to a worker's
 * .ts entry point, so the worker registers it first). Also a child process on a sibling module.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * The parent's Node flags minus those that only make sense for the main script: a worker inherits
 * `process.execArgv`, and `--input-type` (from `node --input-type=module -e ...`) makes Node refuse a
 * worker's file entry point; `-e`/`-p` carry the parent's inline code.
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    if (a === '--input-type' || a === '-e' || a === '--eval' || a === '-p' || a === '--print') { i++; continue; }
    if (a.startsWith('--input-type=') || a.startsWith('--eval=') || a.startsWith('--print=')) continue;
    out.push(a);
  }
  return out;
}

export function spawnSiblingWorker(callerUrl: string, name: string): Worker {
  const execArgv = workerExecArgv();
  if (!callerUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, callerUrl), { execArgv });
  const entry = new URL(`./${name}.ts`, callerUrl).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`, { eval: true, execArgv });
}

/**
 * Forks a child process on a sibling module of the caller (`<name>.js` compiled, `<name>.ts` under
 * tsx, which the child then loads too) with an IPC channel; its stdout goes to our stderr so a
 * command's stdout (`--json`) carries only what the command itself prints.
 */
export function forkSibling(callerUrl: string, name: string): ChildProcess {
  const ts = callerUrl.endsWith('.ts');
  const execArgv = workerExecArgv();
  if (ts && !execArgv.some((a) => a.includes('tsx'))) execArgv.unshift('--import', import.meta.resolve('tsx'));
  const entry = fileURLToPath(new URL(`./${name}.${ts ? 'ts' : 'js'}`, callerUrl));
  return fork(entry, [], { execArgv, stdio: ['ignore', 2, 2, 'ipc'] });
}
