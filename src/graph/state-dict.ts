/**
 * State dicts: a module's tensors by key (the checkpoint's own paths), copied out and back in. Loading
 * reports what torch's `load_state_dict` does (missing and unexpected keys) plus the keys present on
 * both sides with another shape or dtype, which torch refuses and transfer learning skips.
 */
import { LibreYOLOError } from '../errors.ts';
import type { Parameter } from './module.ts';
import type { HostTensor } from './tensor.ts';

/** Anything with torch-style named tensors (a `Module`, a family's network). */
export interface HasNamedTensors {
  namedTensors(): Iterable<[string, Parameter]>;
}

/** What `loadStateDict` did, by key. */
export interface LoadStateDictReport {
  /** Tensors copied (same key, shape and dtype). */
  copied: number;
  /** Keys on both sides whose shape or dtype differs: left as they were. */
  mismatched: string[];
  /** The module's keys the state dict lacks: left as they were. */
  missing: string[];
  /** The state dict's keys the module lacks: ignored. */
  unexpected: string[];
}

/** The module's tensors by key (the live values, not copies). */
export function stateDictOf(module: HasNamedTensors): Map<string, HostTensor> {
  return new Map([...module.namedTensors()].map(([k, p]) => [k, p.value]));
}

/** A deep copy of a state dict (dims and data). */
export function snapshot(sd: Map<string, HostTensor>): Map<string, HostTensor> {
  return new Map([...sd].map(([k, t]) => [k, { dtype: t.dtype, dims: [...t.dims], data: t.data.slice() }]));
}

/**
 * Copies tensors by key where shape and dtype match (pretrained transfer, reloading trained weights).
 * `strict` (torch's default) refuses, before copying anything, a state dict with any missing,
 * unexpected or mismatched key; without it those are reported and left alone.
 */
export function loadStateDict(module: HasNamedTensors, sd: Map<string, HostTensor>, options: { strict?: boolean } = {}): LoadStateDictReport {
  const report: LoadStateDictReport = { copied: 0, mismatched: [], missing: [], unexpected: [] };
  const matches: Array<[Parameter, HostTensor]> = [];
  const seen = new Set<string>();
  for (const [k, p] of module.namedTensors()) {
    seen.add(k);
    const t = sd.get(k);
    if (!t) report.missing.push(k);
    else if (t.dims.join(',') !== p.dims.join(',') || t.dtype !== p.value.dtype) report.mismatched.push(k);
    else matches.push([p, t]);
  }
  for (const k of sd.keys()) if (!seen.has(k)) report.unexpected.push(k);
  if (options.strict && (report.missing.length || report.unexpected.length || report.mismatched.length)) {
    const part = (what: string, keys: string[]): string => (keys.length ? `${keys.length} ${what} (${keys.slice(0, 3).join(', ')}${keys.length > 3 ? ', ...' : ''})` : '');
    const parts = [part('missing', report.missing), part('unexpected', report.unexpected), part('with another shape or dtype', report.mismatched)].filter(Boolean);
    throw new LibreYOLOError('model_load_failed', `The state dict does not match the network: ${parts.join('; ')} keys.`);
  }
  for (const [p, t] of matches) (p.value.data as Float32Array).set(t.data as Float32Array);
  report.copied = matches.length;
  return report;
}

/**
 * After a train-mode step: copies the BatchNorm running stats the step computed into the module's
 * buffers and counts the batch in each BN's `num_batches_tracked`, as torch's train-mode forward does.
 */
export function applyRunningStats(module: HasNamedTensors, stats: Map<string, Float32Array>): void {
  for (const [k, p] of module.namedTensors()) {
    if (p.kind !== 'buffer') continue;
    const s = stats.get(k);
    if (s) (p.value.data as Float32Array).set(s);
    else if (k.endsWith('num_batches_tracked') && stats.has(`${k.slice(0, -'num_batches_tracked'.length)}running_mean`)) {
      (p.value.data as BigInt64Array)[0]! += 1n;
    }
  }
}
