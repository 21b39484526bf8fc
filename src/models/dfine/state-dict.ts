/**
 * Loading a D-FINE state dict by key: `module.` stripped, strict about every key
 * except the duplicated `decoder.decoder.up` / `decoder.decoder.reg_scale` (which must equal the
 * registered ones). The anchors and valid mask must match the regenerated 640 buffers (the
 * valid mask and +inf positions exactly, finite anchors within 1e-2: torch's vectorised logf and
 * ours differ by an ulp at some tokens, and a training run's EMA rounds every float buffer on each
 * update (`d a + (1 - d) a` in float32, the original's too): at D-FINE's constant decay 0.9999 the
 * stored anchors walk about an ulp per update, 1e-5 relative after 100 updates, then level off
 * near ulp / (1 - d), 1.4e-4 after 3000. Anchors of another layout with as many tokens (512x800
 * against 640x640) differ by far more. The loaded values are kept, as the original does.
 */
import { asFloat32, type HostTensor } from '../../graph/tensor.ts';
import { LibreYOLOError } from '../../errors.ts';
import type { StateDict } from '../registry.ts';
import type { DfineNetwork } from './network.ts';

const DUPLICATES: Record<string, string> = { 'decoder.decoder.up': 'decoder.up', 'decoder.decoder.reg_scale': 'decoder.reg_scale' };

const list = (keys: string[]): string => `[${keys.slice(0, 8).map((k) => `'${k}'`).join(', ')}${keys.length > 8 ? `, ... (${keys.length} in all)` : ''}]`;

/** Relative (absolute below 1) tolerance of stored finite anchors against the generated ones. */
const ANCHOR_TOLERANCE = 1e-2;

function closeValues(a: HostTensor, b: HostTensor): boolean {
  const x = a.data as ArrayLike<number>;
  const y = b.data as ArrayLike<number>;
  if (x.length !== y.length) return false;
  for (let k = 0; k < x.length; k++) {
    const u = Number(x[k]);
    const v = Number(y[k]);
    if (Number.isFinite(u) !== Number.isFinite(v) || (Number.isFinite(u) ? Math.abs(u - v) > ANCHOR_TOLERANCE * Math.max(1, Math.abs(v)) : u !== v)) return false;
  }
  return true;
}

function sameValues(a: HostTensor, b: HostTensor): boolean {
  const x = a.data as ArrayLike<number>;
  const y = b.data as ArrayLike<number>;
  if (x.length !== y.length) return false;
  for (let k = 0; k < x.length; k++) if (!Object.is(Number(x[k]), Number(y[k]))) return false;
  return true;
}

export function loadDfineStateDict(net: DfineNetwork, input: StateDict): void {
  const sd: StateDict = new Map([...input].map(([k, v]) => [k.startsWith('module.') ? k.slice(7) : k, v]));
  const expected = new Map([...net.namedTensors()]);
  const unexpected = [...sd.keys()].filter((k) => !expected.has(k) && !(k in DUPLICATES));
  if (unexpected.length) throw new LibreYOLOError('model_load_failed', `Unexpected keys when loading D-FINE weights: ${list(unexpected)}`);
  const missing = [...expected.keys()].filter((k) => !sd.has(k));
  if (missing.length) throw new LibreYOLOError('model_load_failed', `Missing D-FINE checkpoint keys: ${list(missing)}`);
  for (const [key, p] of expected) {
    let t = sd.get(key)!;
    if (t.dims.join(',') !== p.dims.join(',')) {
      throw new LibreYOLOError('model_load_failed', `Shape mismatch for ${key}: checkpoint has [${t.dims.join(', ')}], the dfine-${net.options.size} network expects [${p.dims.join(', ')}].`);
    }
    if (key === 'decoder.anchors' || key === 'decoder.valid_mask') {
      // Baked for 640 in both: a checkpoint made for another eval size cannot run this graph.
      const ok = key === 'decoder.anchors' ? closeValues({ ...t, data: asFloat32(t) }, p.value) : sameValues(t, p.value);
      if (!ok) throw new LibreYOLOError('model_load_failed', `${key} in the checkpoint differs from the 640x640 buffers D-FINE regenerates: the checkpoint was made for another eval size.`);
      if (key === 'decoder.anchors') t = { dtype: 'float32', dims: t.dims, data: asFloat32(t) };
      else t = { dtype: 'bool', dims: t.dims, data: Uint8Array.from(t.data as ArrayLike<number>, (v) => (Number(v) ? 1 : 0)) };
    }
    else if (p.value.dtype === 'float32' && t.dtype !== 'float32') t = { dtype: 'float32', dims: t.dims, data: asFloat32(t) };
    p.value = t;
  }
  for (const [dup, main] of Object.entries(DUPLICATES)) {
    const t = sd.get(dup);
    if (t && !sameValues({ ...t, data: asFloat32(t) }, expected.get(main)!.value)) {
      throw new LibreYOLOError('model_load_failed', `${dup} differs from ${main} (the original registers one tensor under both names).`);
    }
  }
}
