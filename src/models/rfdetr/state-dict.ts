/**
 * Loading an RF-DETR state dict by key: prefixes stripped, class width and query
 * tables adapted, the position-embedding grid resized to the size's grid, unexpected keys refused,
 * missing keys refused except the class heads (which then keep their fresh rows).
 */
import { asFloat32, type HostTensor } from '../../graph/tensor.ts';
import { LibreYOLOError } from '../../errors.ts';
import type { StateDict } from '../registry.ts';
import { antialiasBicubicWeights } from './antialias-bicubic.ts';
import { RFDETR_COMMON as C } from './config.ts';
import type { RfdetrNetwork } from './network.ts';

const PREFIXES = ['module.', 'model.', '_orig_mod.'];

/** Removes, in this order and at most once each, the wrapper prefixes `module.`, `model.`, `_orig_mod.`. */
export function stripPrefixes(key: string): string {
  let k = key;
  for (const p of PREFIXES) if (k.startsWith(p)) k = k.slice(p.length);
  return k;
}

export function normalizeStateDict(sd: StateDict): StateDict {
  const out: StateDict = new Map();
  for (const [k, v] of sd) out.set(stripPrefixes(k), v);
  return out;
}

/** Query tables from a checkpoint's saved `(num_queries, group_detr)` are sliced per group; others truncated or tiled. */
export interface QueryLayout {
  numQueries: number;
  groupDetr: number;
}

function adaptRows(t: HostTensor, rows: number, source: QueryLayout | undefined, numQueries: number): HostTensor {
  const [have, width] = t.dims as [number, number];
  if (have === rows) return t;
  const src = asFloat32(t);
  const out = new Float32Array(rows * width);
  if (source && source.numQueries * source.groupDetr === have) {
    // Keep the first min(groups) groups and the first min(Q) rows of each, never mixing groups.
    const groups = Math.min(source.groupDetr, C.groupDetr);
    const q = Math.min(source.numQueries, numQueries);
    for (let g = 0; g < groups; g++) for (let r = 0; r < q; r++) {
      out.set(src.subarray((g * source.numQueries + r) * width, (g * source.numQueries + r + 1) * width), (g * numQueries + r) * width);
    }
  } else {
    for (let r = 0; r < rows; r++) out.set(src.subarray((r % have) * width, (r % have + 1) * width), r * width);
  }
  return { dtype: 'float32', dims: [rows, width], data: out };
}

/** Tiles or truncates class rows to `rows` (a head rebuilt to the checkpoint's width keeps its rows). */
function adaptClassRows(t: HostTensor, rows: number): HostTensor {
  if (t.dims[0] === rows) return t;
  const src = asFloat32(t);
  const width = t.dims.length > 1 ? t.dims[1]! : 1;
  const out = new Float32Array(rows * width);
  for (let r = 0; r < rows; r++) out.set(src.subarray((r % t.dims[0]!) * width, (r % t.dims[0]! + 1) * width), r * width);
  return { dtype: 'float32', dims: t.dims.length > 1 ? [rows, width] : [rows], data: out };
}

/** Resizes a square `[1, 1+P^2, C]` table to `[1, 1+G^2, C]` (row 0 kept), antialiased bicubic in float32. */
export function resizePositionTable(t: HostTensor, grid: number): HostTensor {
  const [, rows, d] = t.dims as [number, number, number];
  const p = Math.floor(Math.sqrt(rows - 1));
  if (p * p !== rows - 1 || p === grid) return t;
  const src = asFloat32(t);
  const wy = antialiasBicubicWeights(p, grid);
  const out = new Float32Array((grid * grid + 1) * d);
  out.set(src.subarray(0, d), 0);
  // Separable: rows first into a [grid, p, C] scratch, then columns.
  const tmp = new Float32Array(grid * p * d);
  for (let oy = 0; oy < grid; oy++) for (let x = 0; x < p; x++) for (let c = 0; c < d; c++) {
    let acc = 0;
    for (let y = 0; y < p; y++) acc += wy[oy * p + y]! * src[(1 + y * p + x) * d + c]!;
    tmp[(oy * p + x) * d + c] = acc;
  }
  for (let oy = 0; oy < grid; oy++) for (let ox = 0; ox < grid; ox++) for (let c = 0; c < d; c++) {
    let acc = 0;
    for (let x = 0; x < p; x++) acc += wy[ox * p + x]! * tmp[(oy * p + x) * d + c]!;
    out[(1 + oy * grid + ox) * d + c] = acc;
  }
  return { dtype: 'float32', dims: [1, grid * grid + 1, d], data: out };
}

const OPTIONAL = /^(class_embed\.|transformer\.enc_out_class_embed\.)/;

export function loadRfdetrStateDict(net: RfdetrNetwork, input: StateDict, opts: { queryLayout?: QueryLayout; peGrid: number }): void {
  const sd = normalizeStateDict(input);
  const expected = new Map([...net.namedTensors()]);
  const unexpected = [...sd.keys()].filter((k) => !expected.has(k));
  if (unexpected.length) throw new LibreYOLOError('model_load_failed', `Unexpected RF-DETR checkpoint keys: [${unexpected.slice(0, 8).map((k) => `'${k}'`).join(', ')}${unexpected.length > 8 ? `, ... (${unexpected.length} in all)` : ''}]`);
  const missing = [...expected.keys()].filter((k) => !sd.has(k) && !OPTIONAL.test(k));
  if (missing.length) throw new LibreYOLOError('model_load_failed', `Missing RF-DETR checkpoint keys: [${missing.slice(0, 8).map((k) => `'${k}'`).join(', ')}${missing.length > 8 ? `, ... (${missing.length} in all)` : ''}]`);
  for (const [key, p] of expected) {
    let t = sd.get(key);
    if (!t) continue;
    if (t.dtype !== 'float32') t = { dtype: 'float32', dims: t.dims, data: asFloat32(t) };
    if (key === 'refpoint_embed.weight' || key === 'query_feat.weight') t = adaptRows(t, p.dims[0]!, opts.queryLayout, net.config.numQueries);
    else if (key.endsWith('embeddings.position_embeddings')) t = resizePositionTable(t, opts.peGrid);
    else if (OPTIONAL.test(key)) t = adaptClassRows(t, p.dims[0]!);
    if (t.dims.join(',') !== p.dims.join(',')) {
      throw new LibreYOLOError('model_load_failed', `Shape mismatch for ${key}: checkpoint has [${t.dims.join(', ')}], the rfdetr-${net.options.size} network expects [${p.dims.join(', ')}].`);
    }
    p.value = t;
  }
}
