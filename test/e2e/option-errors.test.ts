/**
 * One option layer: every predict, export and train option, given a bad value, fails with the
 * same error code and message from the library (`model.predict(src, { key: bad })`,
 * `model.export(...)`, `model.train(...)`) and from the command line (`libreyolo predict key=bad`,
 * exit code from the code table). The cases are written out here, one per option; a new option
 * without a case fails the completeness test. The CLI half runs main() in one child process.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { before, describe, it } from 'node:test';
import { SAMPLE_IMAGE, LibreYOLOError } from '../../src/index.ts';
import { exitCodeFor, type ErrorCode } from '../../src/errors.ts';
import { PREDICT_OPTIONS, type PredictOptionKey } from '../../src/predict/options.ts';
import { EXPORT_OPTIONS, type ExportOptionKey } from '../../src/export/options.ts';
import { TRAIN_DEFAULTS, type TrainConfig } from '../../src/train/config.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';
import { useModel } from '../helpers/model.ts';
import { tempDir } from '../helpers/temp.ts';
import { REPO_ROOT } from '../helpers/fixtures.ts';

/** `cli`: the text after `key=`; `lib`: the library's value (default: the text, as a number when it is one). */
interface Case { cli: string; lib?: unknown; code: ErrorCode; message: string }

const bool = (key: string): Case => ({ cli: 'maybe', code: 'config_type_error', message: `${key} must be true or false, got "maybe"` });
const int = (key: string, cli = '1.5'): Case => ({ cli, code: 'config_type_error', message: `${key} must be an integer, got ${cli}` });
const range = (key: string, cli: string, want: string): Case => ({ cli, code: 'config_range_error', message: `${key} must be ${want}, got ${cli}` });
const IMGSZ_MESSAGE = 'imgsz must be a positive integer or an [height, width] pair of positive integers (on the command line: 640, 480x640 or [480,640]), got';

const PREDICT: Record<PredictOptionKey, Case> = {
  conf: range('conf', '2', 'in [0, 1]'),
  iou: range('iou', '-0.5', 'in [0, 1]'),
  imgsz: { cli: 'big', code: 'invalid_imgsz', message: `${IMGSZ_MESSAGE} "big"` },
  classes: { cli: '[a]', code: 'config_type_error', message: 'classes must be integer class IDs (a number or a list of numbers), got "[a]"' },
  max_det: range('max_det', '-1', '>= 0'),
  save: bool('save'),
  output_path: { cli: '', code: 'config_type_error', message: 'output_path must be a folder or file path, got ""' },
  output_file_format: { cli: 'gif', code: 'config_range_error', message: 'output_file_format must be one of jpg, jpeg, png, webp, got "gif"' },
  device: { cli: '', code: 'config_type_error', message: 'device must be a device name (cpu, 0 / cuda:0, webgpu), got ""' },
  batch: range('batch', '0', '>= 1'),
  stream: bool('stream'),
  tiling: bool('tiling'),
  overlap_ratio: range('overlap_ratio', '1', 'in [0, 1)'),
  postprocess_type: { cli: 'LSNMS', code: 'config_range_error', message: 'postprocess_type must be one of NMS, NMM, GREEDYNMM, got "LSNMS"' },
  match_metric: { cli: 'IOA', code: 'config_range_error', message: 'match_metric must be one of IOU, IOS, got "IOA"' },
  match_threshold: range('match_threshold', '1.5', 'in [0, 1]'),
  class_agnostic: bool('class_agnostic'),
  perform_standard_pred: bool('perform_standard_pred'),
  augment: bool('augment'),
  cuda_graph: { cli: 'sometimes', code: 'config_range_error', message: "Invalid cuda_graph='sometimes'. Expected true, false or 'auto'." },
  half: bool('half'),
  project_dir: { cli: '', code: 'config_type_error', message: 'project_dir must be a folder path, got ""' },
  vid_stride: int('vid_stride'),
  stream_buffer: bool('stream_buffer'),
  show: bool('show'),
};

const EXPORT: Record<ExportOptionKey, Case> = {
  format: { cli: '', code: 'config_type_error', message: 'format must be a format name, got ""' },
  imgsz: { cli: '0', code: 'invalid_imgsz', message: `${IMGSZ_MESSAGE} 0` },
  batch: range('batch', '0', '>= 1'),
  dynamic: bool('dynamic'),
  half: bool('half'),
  opset: range('opset', '12', '>= 13 for yolo9 models'),
  output_path: { cli: '', code: 'config_type_error', message: 'output_path must be a file path, got ""' },
  overwrite: bool('overwrite'),
};

const MISSING_DATA = 'missing.yaml';

const TRAIN: Record<keyof TrainConfig, Case> = {
  data: { cli: '', code: 'config_required_key', message: 'train: data is required (a dataset YAML path or a built-in name such as coco8).' },
  epochs: range('epochs', '0', '>= 1'),
  batch: range('batch', '-2', '>= 1 (or -1 for auto-batch)'),
  imgsz: range('imgsz', '100', 'a positive multiple of 32'),
  lr0: range('lr0', '0', '> 0'),
  optimizer: { cli: 'rmsprop', code: 'config_range_error', message: 'optimizer must be one of sgd, adam, adamw, got "rmsprop"' },
  device: { cli: 'tpu', code: 'config_type_error', message: "Unknown device 'tpu'. Accepted devices: 'cpu' (default), '0' / 'cuda' / 'cuda:N' (CUDA), 'webgpu'." },
  workers: range('workers', '-1', '>= 0'),
  seed: int('seed'),
  // project and name: a file where the run folder should go (the cases below give them a dataset).
  project: { cli: '<file>', code: 'output_path_invalid', message: 'project: cannot create the folder <file>/exp: <file> is a file, not a folder. Choose another project, or move that file away.' },
  name: { cli: '<file>/exp', code: 'output_path_invalid', message: 'name: cannot create the folder <file>/exp: <file> is a file, not a folder. Choose another name, or move that file away.' },
  exist_ok: bool('exist_ok'),
  resume: { cli: '', code: 'config_type_error', message: 'resume must be true, false or a checkpoint path, got ""' },
  amp: bool('amp'),
  patience: range('patience', '-1', '>= 0'),
  allow_download_scripts: bool('allow_download_scripts'),
  pretrained: { cli: '', code: 'config_type_error', message: 'pretrained must be true, false or a weights path, got ""' },
  momentum: range('momentum', '1', 'in [0, 1)'),
  weight_decay: range('weight_decay', '-0.1', '>= 0'),
  nesterov: bool('nesterov'),
  scheduler: { cli: 'step', code: 'config_range_error', message: 'scheduler must be one of linear, cos, warmcos, got "step"' },
  warmup_epochs: range('warmup_epochs', '-1', '>= 0'),
  warmup_lr_start: range('warmup_lr_start', '-0.001', '>= 0'),
  min_lr_ratio: range('min_lr_ratio', '-0.5', '>= 0'),
  no_aug_epochs: int('no_aug_epochs'),
  mosaic_prob: range('mosaic_prob', '1.5', 'in [0, 1]'),
  mixup_prob: range('mixup_prob', '-0.5', 'in [0, 1]'),
  hsv_prob: range('hsv_prob', '2', 'in [0, 1]'),
  flip_prob: range('flip_prob', '-1', 'in [0, 1]'),
  degrees: { cli: 'x', code: 'config_type_error', message: 'degrees must be a number, got "x"' },
  translate: { cli: 'far', code: 'config_type_error', message: 'translate must be a number, got "far"' },
  shear: { cli: 'x', code: 'config_type_error', message: 'shear must be a number, got "x"' },
  mosaic_scale: { cli: '0.5,1,2', lib: [0.5, 1, 2], code: 'config_type_error', message: 'mosaic_scale must be a pair of numbers, got [0.5,1,2]' },
  mixup_scale: { cli: '[a,b]', code: 'config_type_error', message: 'mixup_scale must be a pair of numbers, got "[a,b]"' },
  ema: bool('ema'),
  ema_decay: range('ema_decay', '1', 'in (0, 1)'),
  ema_tau: range('ema_tau', '0', '> 0'),
  ema_restart_decay: range('ema_restart_decay', '0', 'in (0, 1)'),
  aug_stop_epoch_ratio: range('aug_stop_epoch_ratio', '1.5', 'in [0, 1]'),
  multi_scale: bool('multi_scale'),
  expanded_scales: bool('expanded_scales'),
  lr_drop: range('lr_drop', '-1', '>= 0'),
  crop_resize_prob: range('crop_resize_prob', '1.5', 'in [0, 1]'),
  save_period: range('save_period', '-1', '>= 0'),
  eval_interval: range('eval_interval', '0', '>= 1'),
  save_plots: bool('save_plots'),
  cache: { cli: 'gpu', code: 'config_type_error', message: 'cache must be false, \'ram\' or \'disk\', got "gpu"' },
  freeze: { cli: 'a', code: 'config_type_error', message: 'freeze must be a list of integers, got "a"' },
  nbs: range('nbs', '0', '>= 1'),
  sync_bn: bool('sync_bn'),
  log_interval: range('log_interval', '0', '>= 1'),
  // data_dir with data: the one cross-field check among them, after each value is read.
  data_dir: { cli: 'datasets/x', code: 'config_conflict', message: `train: pass data or data_dir, not both (data=${MISSING_DATA}, data_dir=datasets/x).` },
  max_labels: range('max_labels', '0', '>= 1'),
  clip_max_norm: range('clip_max_norm', '-1', '>= 0'),
  profile: bool('profile'),
  profile_then_stop: bool('profile_then_stop'),
  profile_warmup: range('profile_warmup', '-1', '>= 0'),
  profile_steps: range('profile_steps', '0', '>= 1'),
  profile_trace: bool('profile_trace'),
  profile_open: bool('profile_open'),
  threads: range('threads', '0', '>= 1'),
  verbose: bool('verbose'),
};

const libValue = (c: Case): unknown => ('lib' in c ? c.lib : c.cli.trim() !== '' && Number.isFinite(Number(c.cli)) ? Number(c.cli) : c.cli);

/** What a failure looks like, from either side: the code, the message, the exit code. */
interface Failure { code: string; message: string; exit: number }

async function libFailure(run: () => Promise<unknown>): Promise<Failure> {
  try {
    await run();
  } catch (err) {
    if (err instanceof LibreYOLOError) return { code: err.code, message: err.message, exit: err.exitCode };
    return { code: 'not a LibreYOLOError', message: String(err), exit: -1 };
  }
  return { code: 'no error', message: '', exit: 0 };
}

const pexec = promisify(execFile);

/** Runs every argv through the CLI's main() in one child process (--json: the code comes back too). */
async function cliFailures(runs: string[][], cwd: string): Promise<Failure[]> {
  const list = join(cwd, 'runs.json');
  writeFileSync(list, JSON.stringify(runs.map((a) => [...a, '--json'])));
  const env: NodeJS.ProcessEnv = { ...process.env, HF_HUB_OFFLINE: '1' };
  delete env.NODE_TEST_CONTEXT; // the child is not part of the test runner
  const { stdout } = await pexec(process.execPath, ['--import', import.meta.resolve('tsx'), join(REPO_ROOT, 'test/helpers/cli-cases-child.ts'), list], {
    cwd, env, maxBuffer: 64 << 20, timeout: 600_000,
  });
  const results = JSON.parse(stdout.trim().split('\n').at(-1)!) as Array<{ code: number; stdout: string; stderr: string }>;
  return results.map((r) => {
    // --json: one JSON line on stdout, the error code and message as the library has them.
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    try {
      const j = JSON.parse(line) as { error?: string; message?: string };
      return { code: j.error ?? 'no error', message: j.message ?? '', exit: r.code };
    } catch {
      return { code: 'no JSON error', message: `${r.stdout}${r.stderr}`, exit: r.code };
    }
  });
}

describe('each option mistake: one code and message from the library and the CLI', () => {
  const model = useModel();
  const dir = tempDir();
  const file = join(dir, 'a-file');
  writeFileSync(file, 'not a folder\n');
  const cwd = join(dir, 'cwd');
  mkdirSync(cwd);
  const fill = (s: string): string => s.replaceAll('<file>', file);
  let data = '';
  const cli = new Map<string, Failure>();

  // A tiny dataset, so project/name fail where the run folder is made, not on the data.
  const trainBase = (key: keyof TrainConfig): Record<string, unknown> => {
    const base: Record<string, unknown> = key === 'project' || key === 'name' ? { data, project: dir, name: 'exp', epochs: 1, imgsz: 64, batch: 2, workers: 0 } : { data: MISSING_DATA };
    delete base[key];
    return base;
  };
  const trainCli = (key: keyof TrainConfig, c: Case): string[] =>
    ['train', ...Object.entries(trainBase(key)).map(([k, v]) => `${k}=${String(v)}`), `${key}=${fill(c.cli)}`];

  before(async () => {
    data = (await generateSynthDataset({ out: join(dir, 'synth'), train: 2, val: 2, imgsz: 64 })).yaml;
    const runs: Array<[string, string[]]> = [
      ...Object.entries(PREDICT).map(([k, c]): [string, string[]] => [`predict ${k}`, ['predict', `source=${SAMPLE_IMAGE}`, `${k}=${c.cli}`]]),
      ...Object.entries(EXPORT).map(([k, c]): [string, string[]] => [`export ${k}`, ['export', `output_path=${join(dir, 'x.onnx')}`, `${k}=${c.cli}`]]),
      ...(Object.entries(TRAIN) as Array<[keyof TrainConfig, Case]>).map(([k, c]): [string, string[]] => [`train ${k}`, trainCli(k, c)]),
      ['predict output_path under a file', ['predict', `source=${SAMPLE_IMAGE}`, 'save=true', `output_path=${file}/out`]],
      ['export output_path under a file', ['export', `output_path=${file}/x.onnx`]],
    ];
    const failures = await cliFailures(runs.map(([, a]) => a), cwd);
    runs.forEach(([name], i) => cli.set(name, failures[i]!));
  });

  it('has a case for every predict, export and train option', () => {
    assert.deepEqual(Object.keys(PREDICT).sort(), Object.keys(PREDICT_OPTIONS).sort());
    assert.deepEqual(Object.keys(EXPORT).sort(), Object.keys(EXPORT_OPTIONS).sort());
    assert.deepEqual(Object.keys(TRAIN).sort(), ['data', ...Object.keys(TRAIN_DEFAULTS)].sort());
  });

  const expectBoth = (name: string, lib: Failure, c: { code: ErrorCode; message: string }): void => {
    const want: Failure = { code: c.code, message: fill(c.message), exit: exitCodeFor(c.code) };
    assert.deepEqual(lib, want, `${name}: library`);
    assert.deepEqual(cli.get(name), want, `${name}: libreyolo ${name.split(' ')[0]}`);
    assert.notEqual(want.exit, 0);
  };

  it('predict: model.predict(src, { key: bad }) and libreyolo predict key=bad', async () => {
    for (const [key, c] of Object.entries(PREDICT)) {
      expectBoth(`predict ${key}`, await libFailure(() => model().predict(SAMPLE_IMAGE, { [key]: libValue(c) })), c);
    }
    // camelCase spellings are the same options.
    assert.deepEqual(await libFailure(() => model().predict(SAMPLE_IMAGE, { maxDet: -1 } as Record<string, unknown>)), { code: 'config_range_error', message: 'max_det must be >= 0, got -1', exit: 2 });
    assert.deepEqual(await libFailure(() => model().predict(SAMPLE_IMAGE, { maxDet: 5, max_det: 5 } as Record<string, unknown>)), { code: 'config_conflict', message: 'maxDet and max_det are the same option: pass it once.', exit: 2 });
  });

  it('export: model.export({ key: bad }) and libreyolo export key=bad', async () => {
    for (const [key, c] of Object.entries(EXPORT)) {
      expectBoth(`export ${key}`, await libFailure(() => model().export({ format: 'onnx', output_path: join(dir, 'x.onnx'), [key]: libValue(c) })), c);
    }
    assert.deepEqual(await libFailure(() => model().export({ format: 'onnx', outputPath: join(dir, 'x.onnx'), opset: 12 } as never)), { code: 'config_range_error', message: 'opset must be >= 13 for yolo9 models, got 12', exit: 2 });
  });

  it('train: model.train({ key: bad }) and libreyolo train key=bad', async () => {
    for (const [key, c] of Object.entries(TRAIN) as Array<[keyof TrainConfig, Case]>) {
      const value = libValue(c);
      const opts = { ...trainBase(key), [key]: typeof value === 'string' ? fill(value) : value };
      expectBoth(`train ${key}`, await libFailure(() => model().train(opts as never)), c);
    }
  });

  it('an output folder under a regular file: output_path_invalid (exit 2), not EEXIST', async () => {
    const under = (key: string, path: string): { code: ErrorCode; message: string } => ({
      code: 'output_path_invalid', message: `${key}: cannot create the folder ${path}: ${file} is a file, not a folder. Choose another ${key}, or move that file away.`,
    });
    expectBoth('predict output_path under a file', await libFailure(() => model().predict(SAMPLE_IMAGE, { save: true, output_path: `${file}/out` })), under('output_path', `${file}/out`));
    expectBoth('export output_path under a file', await libFailure(() => model().export({ format: 'onnx', output_path: `${file}/x.onnx` })), under('output_path', file));
  });
});
