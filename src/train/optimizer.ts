/**
 * Optimizers with PyTorch's update rules, run on the host over the network's parameter arrays (in
 * place). Parameters are split into the original's three groups:
 *   g0  BatchNorm weights            no weight decay
 *   g1  all other `.weight` params   weight_decay (5e-4)
 *   g2  all biases                   no weight decay
 * SGD (Nesterov, momentum 0.937), Adam and AdamW follow torch's single-tensor implementations,
 * rounding to float32 after every elementwise op like torch's float32 kernels (the loops are
 * WebAssembly SIMD kernels, train/update-kernels.ts). AdamW keeps the
 * original's quirk: groups g0 and g2 get AdamW's default decay 0.01 because no value is set for them.
 *
 * `stateDict()` produces torch's optimizer state_dict layout (`state` keyed by integer parameter
 * index in group order, `param_groups` with the hyper-parameters), so checkpoints carry an
 * optimizer the original can load.
 */
import { LibreYOLOError } from '../errors.ts';
import type { Parameter } from '../graph/module.ts';
import type { HostTensor } from '../graph/tensor.ts';
import { isHostTensor, pyFloat, type PyValue, type PyWritable } from '../weights/pickle/index.ts';
import { adamUpdate, sgdUpdate } from './update-kernels.ts';

export type OptimizerName = 'sgd' | 'adam' | 'adamw';

export interface OptimizerConfig {
  optimizer: OptimizerName;
  lr0: number;
  /** SGD momentum; Adam/AdamW use torch's default betas (0.9, 0.999). */
  momentum: number;
  /** Decay for group g1 (conv/linear weights). */
  weightDecay: number;
  nesterov: boolean;
}

export const DEFAULT_OPTIMIZER_CONFIG: OptimizerConfig = { optimizer: 'sgd', lr0: 0.01, momentum: 0.937, weightDecay: 5e-4, nesterov: true };

/** torch.optim.AdamW's default weight_decay, which the original leaves on g0 and g2. */
const ADAMW_DEFAULT_DECAY = 0.01;
const ADAM_BETAS: [number, number] = [0.9, 0.999];
const ADAM_EPS = 1e-8;

export interface ParamRef {
  key: string;
  param: Parameter;
}

export interface ParamGroup {
  /** 'g0' (BN weights), 'g1' (other weights), 'g2' (biases), or a family's own (ParamGroupSpec). */
  name: string;
  params: ParamRef[];
  lr: number;
  weightDecay: number;
  /** The schedule's LR times this (a family's backbone groups); 1 for the core groups. */
  lrMult: number;
}

/** A family's own parameter group (TrainingHooks.paramGroups): trainable keys, decay, LR multiplier. */
export interface ParamGroupSpec {
  name: string;
  keys: string[];
  weightDecay: number;
  lrMult: number;
}

/**
 * Splits trainable parameters (frozen ones excluded) into g0/g1/g2 in state_dict order. A
 * `.weight` is a BatchNorm weight when its module also holds a `running_mean` buffer.
 */
export function buildParamGroups(named: Iterable<[string, Parameter]>): { g0: ParamRef[]; g1: ParamRef[]; g2: ParamRef[] } {
  const all = [...named];
  const keys = new Set(all.map(([k]) => k));
  const g0: ParamRef[] = [];
  const g1: ParamRef[] = [];
  const g2: ParamRef[] = [];
  for (const [key, param] of all) {
    if (param.kind !== 'parameter' || !param.requiresGrad) continue;
    if (param.value.dtype !== 'float32') {
      throw new LibreYOLOError('config_unsupported', `Parameter ${key} is ${param.value.dtype}; training needs float32 parameters.`);
    }
    const dot = key.lastIndexOf('.');
    const prefix = dot < 0 ? '' : key.slice(0, dot + 1);
    const leaf = key.slice(dot + 1);
    if (leaf === 'bias') g2.push({ key, param });
    else if (leaf === 'weight') (keys.has(`${prefix}running_mean`) ? g0 : g1).push({ key, param });
  }
  return { g0, g1, g2 };
}

/** A family's groups, checked to cover every trainable float32 parameter exactly once. */
function customGroups(all: Array<[string, Parameter]>, layout: (trainable: string[]) => ParamGroupSpec[], lr0: number): ParamGroup[] {
  const trainable = new Map<string, Parameter>();
  for (const [key, param] of all) {
    if (param.kind !== 'parameter' || !param.requiresGrad) continue;
    if (param.value.dtype !== 'float32') throw new LibreYOLOError('config_unsupported', `Parameter ${key} is ${param.value.dtype}; training needs float32 parameters.`);
    trainable.set(key, param);
  }
  const seen = new Set<string>();
  const groups = layout([...trainable.keys()]).map((spec) => ({
    name: spec.name, lr: lr0 * spec.lrMult, weightDecay: spec.weightDecay, lrMult: spec.lrMult,
    params: spec.keys.map((key) => {
      const param = trainable.get(key);
      if (!param || seen.has(key)) throw new Error(`parameter group ${spec.name}: ${key} is ${param ? 'in two groups' : 'not a trainable parameter'}`);
      seen.add(key);
      return { key, param };
    }),
  }));
  const missing = [...trainable.keys()].filter((k) => !seen.has(k));
  if (missing.length) throw new Error(`parameter groups leave out ${missing.length} trainable parameters (${missing.slice(0, 3).join(', ')}...)`);
  return groups;
}

/** torch.nn.utils.clip_grad_norm_: scales every gradient by max / (norm + 1e-6) when the global L2 norm exceeds max; returns the norm. */
export function clipGradNorm(gradients: Map<string, Float32Array>, maxNorm: number): number {
  let sq = 0;
  for (const g of gradients.values()) for (let i = 0; i < g.length; i++) sq += g[i]! * g[i]!;
  const norm = Math.sqrt(sq);
  const coef = Math.min(1, maxNorm / (norm + 1e-6));
  if (coef < 1) for (const g of gradients.values()) for (let i = 0; i < g.length; i++) g[i] = Math.fround(g[i]! * coef);
  return norm;
}

interface SlotState {
  /** SGD */
  momentumBuffer?: Float32Array;
  /** Adam/AdamW */
  step?: number;
  expAvg?: Float32Array;
  expAvgSq?: Float32Array;
}

export class Optimizer {
  readonly groups: ParamGroup[];
  /** Per-parameter state, keyed by state_dict key. */
  private readonly state = new Map<string, SlotState>();

  private constructor(readonly config: OptimizerConfig, groups: ParamGroup[]) {
    this.groups = groups;
  }

  /**
   * `layout`: a family's groups over the trainable keys (state_dict order; every trainable key in
   * exactly one group); absent: the core's g0/g1/g2.
   */
  static create(named: Iterable<[string, Parameter]>, config: Partial<OptimizerConfig> = {}, layout?: (trainable: string[]) => ParamGroupSpec[]): Optimizer {
    const cfg: OptimizerConfig = { ...DEFAULT_OPTIMIZER_CONFIG, ...config };
    const name = String(cfg.optimizer).toLowerCase();
    if (name !== 'sgd' && name !== 'adam' && name !== 'adamw') {
      throw new LibreYOLOError('config_type_error', `Unknown optimizer '${cfg.optimizer}'. Use sgd, adam or adamw.`);
    }
    cfg.optimizer = name;
    const all = [...named];
    if (layout) return new Optimizer(cfg, customGroups(all, layout, cfg.lr0));
    const { g0, g1, g2 } = buildParamGroups(all);
    const noDecay = name === 'adamw' ? ADAMW_DEFAULT_DECAY : 0;
    return new Optimizer(cfg, [
      { name: 'g0', params: g0, lr: cfg.lr0, weightDecay: noDecay, lrMult: 1 },
      { name: 'g1', params: g1, lr: cfg.lr0, weightDecay: cfg.weightDecay, lrMult: 1 },
      { name: 'g2', params: g2, lr: cfg.lr0, weightDecay: noDecay, lrMult: 1 },
    ]);
  }

  /** Current learning rate of each group (g0, g1, g2). */
  get lrs(): number[] {
    return this.groups.map((g) => g.lr);
  }

  /**
   * The schedule's LR, times each group's multiplier; `multipliers: false` gives every group the
   * plain LR (the original's LR before the first step of a run, see the trainer).
   */
  setLr(lr: number, options: { multipliers?: boolean } = {}): void {
    const scaled = options.multipliers ?? true;
    for (const g of this.groups) g.lr = scaled ? lr * g.lrMult : lr;
  }

  /** Number of trainable parameters (elements). */
  get numel(): number {
    let n = 0;
    for (const g of this.groups) for (const p of g.params) n += p.param.value.data.length;
    return n;
  }

  /**
   * One update with these gradients (by state_dict key). Parameters without a gradient are skipped,
   * as torch skips parameters whose `.grad` is None.
   */
  step(gradients: Map<string, Float32Array>): void {
    for (const g of this.groups) {
      for (const { key, param } of g.params) {
        const grad = gradients.get(key);
        if (!grad) continue;
        const p = param.value.data as Float32Array;
        if (grad.length !== p.length) throw new RangeError(`gradient for ${key} has ${grad.length} elements, parameter has ${p.length}`);
        let st = this.state.get(key);
        if (!st) this.state.set(key, (st = {}));
        if (this.config.optimizer === 'sgd') this.sgd(p, grad, st, g);
        else this.adam(p, grad, st, g, this.config.optimizer === 'adamw');
      }
    }
  }

  private sgd(p: Float32Array, grad: Float32Array, st: SlotState, g: ParamGroup): void {
    const momentum = this.config.momentum;
    const first = momentum !== 0 && !st.momentumBuffer;
    // first step: the buffer starts as a copy of the (decayed) gradient
    if (first) st.momentumBuffer = new Float32Array(p.length);
    sgdUpdate(p, grad, momentum !== 0 ? st.momentumBuffer! : null, { weightDecay: g.weightDecay, momentum, lr: g.lr, nesterov: this.config.nesterov, first });
  }

  private adam(p: Float32Array, grad: Float32Array, st: SlotState, g: ParamGroup, decoupled: boolean): void {
    const n = p.length;
    const [beta1, beta2] = ADAM_BETAS;
    st.step = (st.step ?? 0) + 1;
    st.expAvg ??= new Float32Array(n);
    st.expAvgSq ??= new Float32Array(n);
    const wd = g.weightDecay;
    const bc1 = 1 - beta1 ** st.step;
    const bc2Sqrt = Math.sqrt(1 - beta2 ** st.step);
    const decay = decoupled && wd !== 0 ? 1 - g.lr * wd : 1;
    const weight = decoupled ? 'decoupled' : wd !== 0 ? 'l2' : 'none';
    adamUpdate(weight, p, grad, st.expAvg, st.expAvgSq, [decay, wd, 1 - beta1, beta2, 1 - beta2, bc2Sqrt, ADAM_EPS, -(g.lr / bc1)]);
  }

  /** torch's `optimizer.state_dict()` layout. */
  stateDict(): PyWritable {
    const state = new Map<PyValue, PyValue>();
    const paramGroups: PyWritable[] = [];
    let index = 0;
    for (const g of this.groups) {
      const ids: number[] = [];
      for (const { key, param } of g.params) {
        const st = this.state.get(key);
        const dims = param.value.dims;
        if (st?.momentumBuffer) state.set(index, new Map<PyValue, PyValue>([['momentum_buffer', tensor(st.momentumBuffer, dims)]]));
        else if (st?.expAvg && st.expAvgSq) {
          state.set(index, new Map<PyValue, PyValue>([
            ['step', { dtype: 'float32', dims: [], data: new Float32Array([st.step ?? 0]) }],
            ['exp_avg', tensor(st.expAvg, dims)],
            ['exp_avg_sq', tensor(st.expAvgSq, dims)],
          ]));
        }
        ids.push(index++);
      }
      paramGroups.push(this.config.optimizer === 'sgd'
        ? { lr: pyFloat(g.lr), momentum: pyFloat(this.config.momentum), dampening: 0, weight_decay: pyFloat(g.weightDecay), nesterov: this.config.nesterov, maximize: false, foreach: null, differentiable: false, fused: null, params: ids }
        : { lr: pyFloat(g.lr), betas: pyFloat([...ADAM_BETAS]), eps: pyFloat(ADAM_EPS), weight_decay: pyFloat(g.weightDecay), amsgrad: false, maximize: false, foreach: null, capturable: false, differentiable: false, fused: null, params: ids });
    }
    return { state, param_groups: paramGroups };
  }

  /**
   * Restores a state_dict written by `stateDict()` (or by torch for the same model and optimizer):
   * buffers are matched by integer index in group order and must have the parameters' sizes.
   */
  loadStateDict(sd: PyValue): void {
    if (!(sd instanceof Map)) throw new LibreYOLOError('checkpoint_not_found', 'The checkpoint has no optimizer state to resume from.');
    const groups = sd.get('param_groups');
    const state = sd.get('state');
    if (!Array.isArray(groups) || groups.length !== this.groups.length || !(state instanceof Map)) {
      throw new LibreYOLOError('model_load_failed', `The checkpoint's optimizer has ${Array.isArray(groups) ? groups.length : 0} parameter groups; expected ${this.groups.length}.`);
    }
    const refs = this.groups.flatMap((g) => g.params);
    groups.forEach((pg, k) => {
      if (!(pg instanceof Map)) return;
      const lr = num(pg.get('lr') ?? null);
      if (lr !== undefined) this.groups[k]!.lr = lr;
      const params = pg.get('params');
      if (Array.isArray(params) && params.length !== this.groups[k]!.params.length) {
        throw new LibreYOLOError('model_load_failed', `Optimizer group ${k} in the checkpoint holds ${params.length} parameters; this model has ${this.groups[k]!.params.length}.`);
      }
    });
    this.state.clear();
    for (const [rawIndex, entry] of state) {
      const index = num(rawIndex as PyValue);
      const ref = index === undefined ? undefined : refs[index];
      if (!ref || !(entry instanceof Map)) continue;
      const n = ref.param.value.data.length;
      const read = (name: string): Float32Array | undefined => {
        const t = entry.get(name);
        if (!isHostTensor(t)) return undefined;
        if (t.data.length !== n || !(t.data instanceof Float32Array)) {
          throw new LibreYOLOError('model_load_failed', `Optimizer state '${name}' for ${ref.key} does not match the parameter (${t.data.length} vs ${n} elements).`);
        }
        return new Float32Array(t.data);
      };
      const st: SlotState = {};
      const mb = read('momentum_buffer');
      if (mb) st.momentumBuffer = mb;
      const ea = read('exp_avg');
      const eas = read('exp_avg_sq');
      if (ea && eas) {
        st.expAvg = ea;
        st.expAvgSq = eas;
        const s = entry.get('step');
        st.step = isHostTensor(s) ? Number(s.data[0]) : num(s ?? null) ?? 0;
      }
      this.state.set(ref.key, st);
    }
  }
}

function tensor(data: Float32Array, dims: number[]): HostTensor {
  return { dtype: 'float32', dims: [...dims], data: new Float32Array(data) };
}

function num(v: PyValue): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  return undefined;
}
