/**
 * Entry point of a `profile run` child process (trial-process.ts starts it): receives a trial or
 * the `--batch -1` probe, imports the run's ModelSource by name, runs the job and reports log lines
 * and the outcome.
 */
import { deviceOrError } from './device.ts';
import { ProfileError } from './errors.ts';
import { autoBatch, runTrial, type ModelSource } from './train-run.ts';
import type { TrialMessage, TrialRequest } from './trial-process.ts';

if (!process.send) throw new Error('trial-child must run as a child process with an IPC channel');
const send = (m: TrialMessage): Promise<void> => new Promise((resolve) => process.send!(m, undefined, {}, () => resolve()));

process.once('disconnect', () => process.exit(130));
process.once('message', (req: TrialRequest) => {
  void (async (): Promise<void> => {
    let code = 0;
    try {
      const mod = (await import(req.models.url)) as Record<string, ModelSource>;
      const models = mod[req.models.exportName];
      if (!models) throw new Error(`${req.models.url} has no export ${req.models.exportName}`);
      const log = (line: string): void => void send({ kind: 'log', line });
      const warn = (message: string): void => void send({ kind: 'warn', message });
      const { job } = req;
      if (job.kind === 'trial') {
        await runTrial(job.trial, models, deviceOrError(job.trial.options.device), log, warn);
        await send({ kind: 'done' });
      } else {
        const batch = await autoBatch({ ...job.options, models, log, warn }, deviceOrError(job.options.device));
        await send({ kind: 'done', batch });
      }
    } catch (err) {
      code = 1;
      const exitCode = err instanceof ProfileError ? err.exitCode : null;
      const message = err instanceof Error ? (exitCode === null && process.env.LIBREYOLO_DEBUG ? err.stack ?? err.message : err.message) : String(err);
      await send({ kind: 'error', message, exitCode });
    }
    // The job's sessions are closed; nothing else may keep the process (and its memory) alive.
    process.exit(code);
  })();
});
