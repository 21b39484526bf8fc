/** The synthetic datasets and CLI runner the `profile run` e2e files share. */
import { before } from 'node:test';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { runCli, type CliRun } from './cli.ts';
import { tempDir } from './temp.ts';

/** Training runs build a train-step session first: minutes on a loaded 2-core machine. */
export const runTrainCli = (args: string[], cwd: string): Promise<CliRun> => runCli(args, cwd, {}, { timeoutMs: 900_000 });

export interface ProfileRunData {
  /** A temp folder for the describe(), removed when the file's process exits. */
  readonly tmp: string;
  /** data.yaml of 52 images at 64 px: 26 iterations of batch 2, enough for the default window in one epoch. */
  readonly yaml: string;
  /** data.yaml of 8 images: too few for the default window at batch 4. */
  readonly small: string;
}

/** Makes both datasets before the enclosing describe()'s tests; read them from the returned object. */
export function useProfileRunData(): ProfileRunData {
  const tmp = tempDir();
  const paths = { yaml: '', small: '' };
  const classes = ['circle', 'square', 'triangle'];
  before(async () => {
    paths.yaml = (await generateSynthDataset({ out: `${tmp}/shapes`, seed: 2, train: 52, val: 2, imgsz: 64, classes })).yaml;
    paths.small = (await generateSynthDataset({ out: `${tmp}/tiny`, seed: 3, train: 8, val: 2, imgsz: 64, classes })).yaml;
  });
  return { tmp, get yaml() { return paths.yaml; }, get small() { return paths.small; } };
}
