/**
 * A `profile run` job in a child process of its own (trial-child.ts): with --repeat, each trial,
 * and the `--batch -1` probe before them, gets a fresh process, so the native memory a job leaves
 * in the allocator when its sessions close is returned with the process instead of lifting every
 * later trial's peak. The child reports its log lines and its outcome over the IPC channel; a
 * trial's files are its result, the probe's is the batch it found.
 */
import { forkSibling } from '../util/worker.ts';
import { LibreYOLOError, type ErrorCode } from '../errors.ts';
import type { TrialOptions, TrialSpec } from './profile-run-options.ts';

/** What a child runs: one trial, or the `--batch -1` probe. */
export type ChildJob = { kind: 'trial'; trial: TrialSpec } | { kind: 'autobatch'; options: TrialOptions };

export interface TrialRequest {
  job: ChildJob;
}

export type TrialMessage =
  | { kind: 'log'; line: string }
  | { kind: 'warn'; message: string }
  | { kind: 'done'; batch?: number }
  | { kind: 'error'; message: string; code: ErrorCode | null };

interface Output {
  log?: (line: string) => void;
  warn?: (message: string) => void;
}

async function runInChild(job: ChildJob, what: string, out: Output): Promise<Extract<TrialMessage, { kind: 'done' }>> {
  const child = forkSibling(import.meta.url, 'trial-child');
  let outcome: TrialMessage | null = null;
  child.on('message', (m: TrialMessage) => {
    if (m.kind === 'log') out.log?.(m.line);
    else if (m.kind === 'warn') out.warn?.(m.message);
    else outcome = m;
  });
  // A parent that stops (Ctrl-C, an error) takes the child with it; the child also exits when the
  // channel closes.
  const stop = (): void => void child.kill('SIGTERM');
  process.once('exit', stop);
  try {
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c, s) => resolve({ code: c, signal: s }));
      child.send({ job } satisfies TrialRequest);
    });
    const o = outcome as TrialMessage | null;
    if (o?.kind === 'error') throw o.code === null ? new Error(o.message) : new LibreYOLOError(o.code, o.message);
    if (o?.kind !== 'done' || code !== 0) {
      throw new Error(`${what} (its own process) ended without a result (${signal ? `signal ${signal}` : `exit code ${code}`})` +
        (signal === 'SIGKILL' ? '; killed, most likely out of memory: try a smaller --batch or --imgsz' : ''));
    }
    return o;
  } finally {
    process.removeListener('exit', stop);
  }
}

export async function runTrialInChild(trial: TrialSpec, out: Output): Promise<void> {
  await runInChild({ kind: 'trial', trial }, `profile trial ${trial.index}`, out);
}

/** The `--batch -1` probe in a child: the batch it found. */
export async function autoBatchInChild(options: TrialOptions, out: Output): Promise<number> {
  const done = await runInChild({ kind: 'autobatch', options }, 'the --batch -1 probe', out);
  if (done.batch === undefined) throw new Error('the --batch -1 probe (its own process) reported no batch');
  return done.batch;
}
