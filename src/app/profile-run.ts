/**
 * `libreyolo profile run <data>`: loads the weights, trains through the profile
 * window with the training profiler (`profile/train-profiler.ts`) one trial at a time, and with
 * `--repeat` writes the trials' aggregate. Trials (and the `--batch -1` probe) of a repeated run each
 * get a process of their own (trial-process.ts).
 */
import { existsSync } from 'node:fs';
import { rm, rmdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { LibreYOLOError } from '../errors.ts';
import { ensureDataset, loadDatasetConfig, loadSplit } from '../data/dataset.ts';
import { createFreshModel, loadForTraining } from '../load.ts';
import type { LibreYOLOModel } from '../model.ts';
import type { Device } from '../runtime/device.ts';
import { probeAutoBatch } from '../train/autobatch.ts';
import { accumulateSteps, TRAIN_DEFAULTS } from '../train/config.ts';
import { profileWindow } from '../train/setup.ts';
import type { TrainProfiler } from '../train/profiler-port.ts';
import { writeFileAtomic } from '../util/fs.ts';
import { parseWeightName } from '../models/hub.ts';
import { aggregateRunTrials, RUN_REPEAT_FILE } from '../profile/aggregate.ts';
import { deviceOrError, ensureDeviceAvailable } from '../profile/device.ts';
import { asProfileError } from '../profile/errors.ts';
import { loadProfile } from '../profile/load.ts';
import { pyJson } from '../profile/pyfmt.ts';
import { PROFILE_FILE, TRACE_FILE, type ProfileAnalysis } from '../profile/schema.ts';
import { trainProfilerFactory, TrainStepProfiler, WindowNotFilled } from '../profile/train-profiler.ts';
import { validateProfile } from '../profile/validate.ts';
import { autoBatchInChild, runTrialInChild } from './trial-process.ts';
import type { TrainRunOptions, TrialOptions, TrialSpec } from './profile-run-options.ts';

export interface TrainRunResult {
  /** profile.json of a single run, or the aggregate of a repeated one. */
  profilePath: string;
  profile: ProfileAnalysis;
  /** The last trial's trace. */
  tracePath: string;
}

async function loadWeights(o: TrainRunOptions, device: Device): Promise<LibreYOLOModel> {
  try {
    return await loadForTraining(o.weights, { device: device.id, size: o.size, ...(o.cwd ? { cwd: o.cwd } : {}), ...(o.threads ? { threads: o.threads } : {}) });
  } catch (err) {
    if (!o.weightsFromDefault || !(err instanceof LibreYOLOError) || !UNAVAILABLE.has(err.code)) throw err;
    const named = parseWeightName(o.weights);
    if (!named) throw err;
    const fresh = `${named.family}${o.size.toLowerCase()}`;
    o.warn?.(`the default weights ${o.weights} are not available (${err.code}); profiling fresh ${fresh} weights instead. ` +
      'The architecture is the same, so step timings are too; pass --weights to profile other weights.');
    return createFreshModel(fresh, { device: device.id });
  }
}

/** Load failures that mean "the file cannot be had here", not "the file is bad". */
const UNAVAILABLE = new Set(['model_not_found', 'download_failed']);

/** `libreyolo profile run <data>`. */
export async function runTrainProfile(options: TrainRunOptions): Promise<TrainRunResult> {
  let o = options;
  const device = deviceOrError(o.device);
  await ensureDeviceAvailable(device);
  const repeat = Math.max(1, o.repeat);
  const cwd = o.cwd ?? process.cwd();
  // Each of several trials runs in its own process: a trial's native memory (ORT's sessions and
  // thread pools in glibc's per-thread arenas) is not all returned when it closes, so in one process
  // every trial starts higher and --repeat 3 peaked ~1.8x one trial's RSS. Apart, each trial also
  // starts from the same state. The --batch -1 probe's sessions would lift them the same way, so it
  // runs apart too.
  const apart = repeat > 1;
  const out = { ...(o.log ? { log: o.log } : {}), ...(o.warn ? { warn: o.warn } : {}) };
  if (o.batch === -1) o = { ...o, batch: apart ? await autoBatchInChild(trialOptions({ ...o, cwd }), out) : await autoBatch(o, device) };
  const split = await checkWindowFits(o, cwd);
  const profiles: ProfileAnalysis[] = [];
  const paths: string[] = [];
  const trials: number[] = [];
  let lastDir = '';
  const names = runNames(resolve(cwd, o.project), repeat);
  for (let i = 0; i < repeat; i++) {
    const name = names.trial(i);
    const trial: TrialSpec = { options: trialOptions({ ...o, cwd }), name, prefix: repeat > 1 ? `trial ${i + 1}/${repeat}: ` : '', index: i, split };
    if (apart) await runTrialInChild(trial, out);
    else await runTrial(trial, device, o.log, o.warn);
    lastDir = resolve(cwd, o.project, name);
    const pj = join(lastDir, PROFILE_FILE);
    if (!existsSync(pj)) {
      throw windowNeverFilled(i, o);
    }
    const a = await loadProfile(pj);
    profiles.push(a);
    paths.push(pj);
    if (a.img_per_s !== null && a.img_per_s !== undefined) trials.push(a.img_per_s);
  }
  const tracePath = join(lastDir, TRACE_FILE);
  if (trials.length > 1) {
    const profilePath = resolve(cwd, o.project, names.aggregate);
    const profile = aggregateRunTrials(profiles, paths, trials);
    await writeFileAtomic(profilePath, pyJson(validateProfile(profile)));
    return { profilePath, profile, tracePath };
  }
  return { profilePath: paths[paths.length - 1]!, profile: profiles[profiles.length - 1]!, tracePath };
}

function trialOptions(o: TrainRunOptions): TrialOptions {
  const { log: _l, warn: _w, ...rest } = o;
  return rest;
}

/** One trial: load the weights, train through the profile window, leave its files in its folder. */
export async function runTrial(t: TrialSpec, device: Device, log?: (line: string) => void, warn?: (message: string) => void): Promise<void> {
  const o: TrainRunOptions = { ...t.options, ...(log ? { log } : {}), ...(warn ? { warn } : {}) };
  const cwd = o.cwd ?? process.cwd();
  const epochs = o.epochs ?? o.warmup + o.steps + 5;
  const quiet = (): void => undefined;
  let model: LibreYOLOModel;
  try {
    model = await loadWeights(o, device);
  } catch (err) {
    throw asProfileError(err);
  }
  // A family whose recipe accumulates (RF-DETR: nbs 16) rounds the window up to whole accumulation
  // windows (train/setup.ts): check that window against the epoch before training, not the asked one.
  const accumulate = accumulateSteps({ nbs: recipeNbs(model), batch: o.batch });
  const window = profileWindow(o.warmup, Math.max(2, o.steps), accumulate);
  if (t.split && t.split.perEpoch < window.warmup + window.steps) {
    await model.close();
    throw windowNeverFilled(t.index, o, { ...t.split, batch: o.batch, accumulate, window });
  }
  o.log?.(banner(o, model, device, t.split, t.prefix, accumulate > 1 ? { accumulate, ...window } : null));
  const factory = trainProfilerFactory({ singleEpoch: true, ...(o.log ? { log: o.log } : {}) });
  const made: TrainProfiler[] = [];
  const created = firstMissingFolder(resolve(cwd, o.project, t.name));
  try {
    // The trainer's own progress is off: it would report its epoch budget (`epochs`, an upper
    // bound nobody asked for; the window closes inside the first epoch). The profiler logs instead.
    await model.train({
      data: o.data, epochs, batch: o.batch, imgsz: o.imgsz, workers: o.workers, amp: o.amp, device: device.id,
      profile: true, profile_then_stop: true, profile_steps: o.steps, profile_warmup: o.warmup, profile_open: false,
      no_aug_epochs: 0, project: o.project, name: t.name, exist_ok: true, verbose: false,
      ...(o.threads ? { threads: o.threads } : {}),
    }, { warn: o.warn ?? quiet, cwd, profiler: async (ctx) => {
      const p = await factory(ctx);
      made.push(p);
      return p;
    } });
  } catch (err) {
    // No profile: the folders this trial made (train_config.yaml and little else) would only mislead.
    if (created) await rm(created, { recursive: true, force: true });
    if (err instanceof WindowNotFilled) throw windowNeverFilled(t.index, o);
    throw asProfileError(err);
  } finally {
    await model.close();
    for (const p of made) if (p instanceof TrainStepProfiler) await p.removeTempFiles();
    // A profile-only run writes no checkpoint: leave no empty weights/ folder (rmdir refuses a full one).
    await rmdir(join(resolve(cwd, o.project, t.name), 'weights')).catch(() => undefined);
  }
}

/** The outermost folder on the way to `dir` that does not exist yet (`dir` itself, or an ancestor), or null. */
function firstMissingFolder(dir: string): string | null {
  let missing: string | null = null;
  for (let d = dir; !existsSync(d); d = dirname(d)) missing = d;
  return missing;
}

/** The nominal batch the model's training recipe accumulates to (RF-DETR's nbs 16), or null. */
function recipeNbs(model: LibreYOLOModel): number | null {
  const nbs = model.family.train?.defaults?.nbs;
  return typeof nbs === 'number' ? nbs : null;
}

interface WindowSplit {
  images: number;
  batch: number;
  perEpoch: number;
  /** Batches per optimizer step and the window rounded to them, when the recipe accumulates. */
  accumulate?: number;
  window?: { warmup: number; steps: number };
}

function windowNeverFilled(run: number, o: Pick<TrainRunOptions, 'warmup' | 'steps'>, split?: WindowSplit): LibreYOLOError {
  const acc = split?.accumulate ?? 1;
  const rounded = acc > 1 && split?.window
    ? `; the recipe accumulates ${acc} batches per optimizer step, so the window rounds up to warmup ${split.window.warmup} + steps ${split.window.steps}`
    : '';
  const why = split ? ` (${split.images} train images at batch ${split.batch} give ${split.perEpoch} iterations per epoch${rounded}; the window must fit in one epoch)` : ' in one epoch';
  const fix = acc > 1 ? 'Use a larger dataset or a larger --batch (fewer batches to accumulate).' : 'Use a larger dataset, fewer --steps, or a smaller --batch.';
  return new LibreYOLOError('profile_not_produced', `no profile produced for run ${run}: the window (warmup ${o.warmup} + steps ${o.steps}) never filled${why}. ${fix}`);
}

/**
 * "Too small": the window (warmup + max(2, steps) iterations) must fit in ONE epoch of the train
 * split, which has floor(images / batch) batches (drop_last, as the original; one short batch when
 * the split is smaller than a batch). Unlike the original, which carries the window across epochs,
 * a profile never spans an epoch boundary, so loader restarts and validation stay out of it. When
 * the batch is known this is checked before any model work; with --batch -1 the profiler itself
 * stops at the epoch's end. Either way: no profile, exit 3.
 */
async function checkWindowFits(o: TrainRunOptions, cwd: string): Promise<{ images: number; perEpoch: number } | null> {
  if (o.batch < 1) return null; // auto-batch: the batch is only known after the probe
  let images: number;
  try {
    const ds = await loadDatasetConfig(o.data, { cwd });
    await ensureDataset(ds, { cwd });
    images = (await loadSplit(ds, 'train', { cwd })).images.length;
  } catch (err) {
    throw asProfileError(err);
  }
  const perEpoch = images >= o.batch ? Math.floor(images / o.batch) : 1;
  if (perEpoch < Math.max(0, o.warmup) + Math.max(2, o.steps)) throw windowNeverFilled(0, o, { images, batch: o.batch, perEpoch });
  return { images, perEpoch };
}

/**
 * The trials' folder names: the original's `prof` (or `prof_<i>` and `profile_repeat.json` with
 * --repeat), then `prof2`, `prof3`, ... (`prof2_<i>`, `profile_repeat2.json`) so an earlier profile
 * in the same project is never overwritten.
 */
export function runNames(projectDir: string, repeat: number): { trial: (i: number) => string; aggregate: string } {
  for (let k = 1; ; k++) {
    const stem = k === 1 ? 'prof' : `prof${k}`;
    const trial = (i: number): string => (repeat > 1 ? `${stem}_${i}` : stem);
    const aggregate = RUN_REPEAT_FILE.replace(/\.json$/, `${k === 1 ? '' : k}.json`);
    const taken = Array.from({ length: repeat }, (_, i) => trial(i)).some((n) => existsSync(join(projectDir, n))) ||
      (repeat > 1 && existsSync(join(projectDir, aggregate)));
    if (!taken) return { trial, aggregate };
  }
}

/** `--batch -1`, as the seed says: the batch whose train step fits about 70% of the device's memory. */
export const PROFILE_AUTOBATCH_FRACTION = 0.7;

/** Resolves `--batch -1` by probing real train steps of the model (train/autobatch.ts) before the trials. */
export async function autoBatch(o: TrainRunOptions, device: Device): Promise<number> {
  let model: LibreYOLOModel;
  try {
    model = await loadWeights(o, device);
  } catch (err) {
    throw asProfileError(err);
  }
  try {
    const network = model.network;
    if (!network || !model.family.train) throw new LibreYOLOError('profile_argument_invalid', `--batch -1: ${model.family.name} weights cannot be probed for a batch; pass --batch N`);
    const r = await probeAutoBatch(model.family, network, {
      device, imgsz: o.imgsz, maxTargets: TRAIN_DEFAULTS.max_labels, fraction: PROFILE_AUTOBATCH_FRACTION, ...(o.threads ? { threads: o.threads } : {}), ...(o.log ? { log: o.log } : {}),
    });
    o.log?.(r.message);
    return r.batch;
  } finally {
    await model.close();
  }
}

/** What the run was asked, in one line (the window, not the trainer's epoch budget). */
function banner(o: TrainRunOptions, model: LibreYOLOModel, device: Device, split: { images: number; perEpoch: number } | null, prefix: string,
  rounded: { accumulate: number; warmup: number; steps: number } | null): string {
  const amp = o.amp ? (device.kind === 'cpu' ? 'amp=true (ignored on cpu: float32)' : 'amp=true') : 'amp=false';
  const batch = o.batch < 1 ? 'batch=-1 (auto-fit)' : `batch=${o.batch}`;
  const epoch = split ? ` of the epoch's ${split.perEpoch} (${split.images} train images)` : ' of one epoch';
  return `profile run: ${prefix}${model.family.name}-${model.size} on ${device.id}  ${batch}  imgsz=${o.imgsz}  workers=${o.workers}  ${amp}\n` +
    `  window: warmup ${o.warmup} + steps ${Math.max(2, o.steps)} iterations${epoch}` +
    (rounded ? `\n  accumulating ${rounded.accumulate} batches per optimizer step: the window rounds up to warmup ${rounded.warmup} + steps ${rounded.steps}` : '');
}
