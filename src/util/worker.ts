/**
 * Starts a worker thread on a sibling module of the caller: `<name>.js` in the compiled package, or
 * `<name>.ts` when running from sources under tsx (Node 20 does not apply tsx's loader to a worker's
 * .ts entry point, so the worker registers it first).
 */
import { Worker } from 'node:worker_threads';

export function spawnSiblingWorker(callerUrl: string, name: string): Worker {
  if (!callerUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, callerUrl));
  const entry = new URL(`./${name}.ts`, callerUrl).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`, { eval: true });
}
