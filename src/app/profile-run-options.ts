/** What `profile run` is asked (`TrainRunOptions`) and what one of its trials receives, in its own process too. */

export interface TrainRunOptions {
  data: string;
  weights: string;
  /**
   * `weights` is the command's default (LibreYOLO9t.pt), not the user's choice: when it cannot be
   * had (offline), fresh weights of the same size stand in, with a warning. A training profile times
   * the architecture; the starting values of the weights do not change it.
   */
  weightsFromDefault?: boolean;
  size: string;
  batch: number;
  imgsz: number;
  workers: number;
  amp: boolean;
  steps: number;
  warmup: number;
  repeat: number;
  device: string;
  project: string;
  threads?: number;
  /** Epoch budget (default warmup + steps + 5, as the original; the window closes long before). */
  epochs?: number;
  /** Progress and report lines (stderr in the CLI); default: silent. */
  log?: (line: string) => void;
  warn?: (message: string) => void;
  cwd?: string;
}

/** What one trial needs, in a form a trial child process can receive (no functions). */
export interface TrialSpec {
  options: TrialOptions;
  /** The trial's folder under the project. */
  name: string;
  /** Banner prefix (`trial 2/3: `). */
  prefix: string;
  index: number;
  split: { images: number; perEpoch: number } | null;
}

export type TrialOptions = Omit<TrainRunOptions, 'log' | 'warn'>;
