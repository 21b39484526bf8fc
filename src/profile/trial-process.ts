/**
 * A `profile run` trial in a child process of its own (trial-child.ts): with --repeat, each trial
 * gets a fresh process, so the native memory a trial leaves in the allocator when its sessions close
 * is returned with the process instead of lifting every later trial's peak. The child reports its
 * log lines and its outcome over the IPC channel; the trial's files are the result.
 */
import { forkSibling } from '../util/worker.ts';
import { ProfileError } from './errors.ts';
import type { TrialSpec } from './train-run.ts';

/** Where the child imports the run's ModelSource from: a module URL and the name of its export. */
export interface ModelSourceModule {
  url: string;
  exportName: string;
}

export interface TrialRequest {
  trial: TrialSpec;
  models: ModelSourceModule;
}

export type TrialMessage =
  | { kind: 'log'; line: string }
  | { kind: 'warn'; message: string }
  | { kind: 'done' }
  | { kind: 'error'; message: string; exitCode: number | null };

export async function runTrialInChild(trial: TrialSpec, models: ModelSourceModule, out: { log?: (line: string) => void; warn?: (message: string) => void }): Promise<void> {
  const child = forkSibling(import.meta.url, 'trial-child');
  let outcome: TrialMessage | null = null;
  child.on('message', (m: TrialMessage) => {
    if (m.kind === 'log') out.log?.(m.line);
    else if (m.kind === 'warn') out.warn?.(m.message);
    else outcome = m;
  });
  // A parent that stops (Ctrl-C, an error) takes the trial with it; the child also exits when the
  // channel closes.
  const stop = (): void => void child.kill('SIGTERM');
  process.once('exit', stop);
  try {
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c, s) => resolve({ code: c, signal: s }));
      child.send({ trial, models } satisfies TrialRequest);
    });
    const o = outcome as TrialMessage | null;
    if (o?.kind === 'error') throw o.exitCode === null ? new Error(o.message) : new ProfileError(o.message, o.exitCode);
    if (o?.kind !== 'done' || code !== 0) {
      throw new Error(`profile trial ${trial.index} (its own process) ended without a result (${signal ? `signal ${signal}` : `exit code ${code}`})` +
        (signal === 'SIGKILL' ? '; killed, most likely out of memory: try a smaller --batch or --imgsz' : ''));
    }
  } finally {
    process.removeListener('exit', stop);
  }
}
