/**
 * Recognising a D-FINE checkpoint: the size from tensor shapes, and D-FINE versus
 * DEIM (identical keys and shapes) only from the checkpoint's `model_family` or a filename hint,
 * never guessed.
 */
import { LibreYOLOError } from '../../errors.ts';
import type { StateDict } from '../registry.ts';
import type { DfineSize } from './config.ts';

/** Any key containing `decoder.pre_bbox_head.` (RT-DETR has none). */
export function looksLikeDfineOrDeim(keys: Iterable<string>): boolean {
  for (const k of keys) if (k.includes('decoder.pre_bbox_head.')) return true;
  return false;
}

/** hidden = in-channels of encoder.lateral_convs.0; levels = number of encoder.input_proj.*.conv.weight. */
export function dfineSizeFromShapes(sd: StateDict): DfineSize | null {
  const strip = (k: string): string => (k.startsWith('module.') ? k.slice(7) : k);
  const byKey = new Map([...sd].map(([k, v]) => [strip(k), v]));
  const hidden = byKey.get('encoder.lateral_convs.0.conv.weight')?.dims[1];
  const levels = [...byKey.keys()].filter((k) => /^encoder\.input_proj\.\d+\.conv\.weight$/.test(k)).length;
  if (hidden === 128 && levels === 2) return 'n';
  if (hidden === 384 && levels === 3) return 'x';
  if (hidden === 256 && levels === 3) {
    const cin = byKey.get('encoder.input_proj.0.conv.weight')?.dims[1];
    return cin === 256 ? 's' : cin === 384 ? 'm' : cin === 512 ? 'l' : null;
  }
  return null;
}

const HINTS: Array<[RegExp, 'dfine' | 'deim']> = [
  [/^libredfine[nslmx]?\b/i, 'dfine'],
  [/^libredeim[nslmx]?\b/i, 'deim'],
  [/^dfine(_hgnetv2)?_[nslmx]/i, 'dfine'],
  [/^deim(_hgnetv2)?_[nslmx]/i, 'deim'],
];

/** The family a file name says (`LibreDFINEn.pt`, `dfine_hgnetv2_s_coco.pth`, `LibreDEIMx.pt`, ...), or null. */
export function dfineFileHint(filename: string): 'dfine' | 'deim' | null {
  const base = baseName(filename);
  for (const [re, family] of HINTS) if (re.test(base)) return family;
  return null;
}

const baseName = (filename: string): string => filename.split(/[\\/]/).pop() ?? filename;

/** `model_family` first, then the file name (`LibreDFINEn.pt`, `dfine_hgnetv2_s_coco.pth`, ...); otherwise an error. */
export function resolveDfineOrDeim(modelFamily: string | undefined, filename: string): 'dfine' | 'deim' {
  if (modelFamily === 'dfine' || modelFamily === 'deim') return modelFamily;
  const hint = dfineFileHint(filename);
  if (hint) return hint;
  throw new LibreYOLOError('model_load_failed',
    `Ambiguous D-FINE/DEIM checkpoint '${baseName(filename)}': both families have the same keys and shapes, and the file has no model_family metadata.`,
    { suggestion: 'Rename it with its family (LibreDFINE<size>.pt or LibreDEIM<size>.pt) or save it with model_family metadata.' });
}

const SHOWN = { dfine: 'D-FINE', deim: 'DEIM' } as const;

/**
 * A D-FINE-shaped checkpoint is loaded as `variant` only when its metadata or name says so: a name
 * and metadata that disagree, a file of the other variant or neither hint is a clear error.
 * Metadata naming another family is left to the loader's mismatch check.
 */
export function checkDfineSource(variant: 'dfine' | 'deim', modelFamily: string | undefined, path: string): void {
  if (modelFamily !== undefined && modelFamily !== 'dfine' && modelFamily !== 'deim') return;
  const base = baseName(path);
  const hint = dfineFileHint(path);
  if (modelFamily && hint && hint !== modelFamily) {
    throw new LibreYOLOError('model_family_mismatch',
      `${base}: its file name says ${SHOWN[hint]} but its model_family metadata says ${SHOWN[modelFamily]} (the two families have the same keys and shapes, so the file cannot tell which it is).`,
      { suggestion: `Rename the file to match its metadata (${PREFIX[modelFamily]}<size>.pt), or re-save it with the right model_family.` });
  }
  const found = resolveDfineOrDeim(modelFamily, path);
  if (found !== variant) {
    throw new LibreYOLOError('model_family_mismatch',
      `${base} is a ${SHOWN[found]} checkpoint (by its ${modelFamily ? 'model_family metadata' : 'file name'}), not ${SHOWN[variant]} (same keys, other activations: loading it as ${SHOWN[variant]} would give wrong detections).`,
      { suggestion: `Load it as ${SHOWN[found]}; if this file really is ${SHOWN[variant]}, rename it (${PREFIX[variant]}<size>.pt) or fix its model_family metadata.` });
  }
}

const PREFIX = { dfine: 'LibreDFINE', deim: 'LibreDEIM' } as const;
