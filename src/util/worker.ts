/**
 * Starts a worker thread on a sibling module of the caller: `<name>.js` in the compiled package, or
 * `<name>.ts` when running from sources under tsx (Node 20 does not apply tsx's loader to a worker's
 * .ts entry point, so the worker registers it first).
 */
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
