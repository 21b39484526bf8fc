/**
 * Entry point of a `profile run` trial process (trial-process.ts starts it): receives the trial,
 * imports the run's ModelSource by name, runs the trial and reports log lines and the outcome.
 */
import { deviceOrError } from './device.ts';
import { ProfileError } from './errors.ts';
import { runTrial, type ModelSource } from './train-run.ts';
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
      await runTrial(req.trial, models, deviceOrError(req.trial.options.device),
        (line) => void send({ kind: 'log', line }), (message) => void send({ kind: 'warn', message }));
      await send({ kind: 'done' });
    } catch (err) {
      code = 1;
      const exitCode = err instanceof ProfileError ? err.exitCode : null;
      const message = err instanceof Error ? (exitCode === null && process.env.LIBREYOLO_DEBUG ? err.stack ?? err.message : err.message) : String(err);
      await send({ kind: 'error', message, exitCode });
    }
    // The trial's sessions are closed; nothing else may keep the process (and its memory) alive.
    process.exit(code);
  })();
});
