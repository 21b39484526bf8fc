/**
 * Entry point of a `profile run` child process (trial-process.ts starts it): receives a trial or
 * the `--batch -1` probe, runs the job and reports log lines and the outcome.
 */
import { deviceOrError } from '../profile/device.ts';
import { LibreYOLOError } from '../errors.ts';
import { autoBatch, runTrial } from './profile-run.ts';
import type { TrialMessage, TrialRequest } from './trial-process.ts';

if (!process.send) throw new Error('trial-child must run as a child process with an IPC channel');
const send = (m: TrialMessage): Promise<void> => new Promise((resolve) => process.send!(m, undefined, {}, () => resolve()));

process.once('disconnect', () => process.exit(130));
process.once('message', (req: TrialRequest) => {
  void (async (): Promise<void> => {
    let code = 0;
    try {
      const log = (line: string): void => void send({ kind: 'log', line });
      const warn = (message: string): void => void send({ kind: 'warn', message });
      const { job } = req;
      if (job.kind === 'trial') {
        await runTrial(job.trial, deviceOrError(job.trial.options.device), log, warn);
        await send({ kind: 'done' });
      } else {
        const batch = await autoBatch({ ...job.options, log, warn }, deviceOrError(job.options.device));
        await send({ kind: 'done', batch });
      }
    } catch (err) {
      code = 1;
      const errorCode = err instanceof LibreYOLOError ? err.code : null;
      const message = err instanceof Error ? (errorCode === null && process.env.LIBREYOLO_DEBUG ? err.stack ?? err.message : err.message) : String(err);
      await send({ kind: 'error', message, code: errorCode });
    }
    // The job's sessions are closed; nothing else may keep the process (and its memory) alive.
    process.exit(code);
  })();
});
