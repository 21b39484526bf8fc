/**
 * PyTorch zip checkpoints (torch.save since 1.6): `<root>/data.pkl` holds the object tree and each
 * tensor storage lives raw in `<root>/data/<key>`. Reading and writing go through our safe pickle codec.
 */

import { zipSync, type Zippable } from 'fflate';
import { LibreYOLOError } from '../errors.ts';
import { BYTES_PER_ELEMENT, toBytes, type HostTensor, type TypedData } from '../graph/tensor.ts';
import { describeBytes, describeLimit, limit, raiseAdvice } from '../util/limits.ts';
import { ZipArchive, zipLimits } from '../util/zip.ts';
import { dumpsTorchPickle, unpickle, type PyValue, type PyWritable, type StorageRequest } from './pickle/index.ts';

const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];

function loadFailed(path: string, why: string): LibreYOLOError {
  return new LibreYOLOError('model_load_failed', `Cannot load ${path}: ${why}`);
}

/** Reads a torch.save zip into a plain object tree (dicts as Map, tensors as HostTensor). */
export function readTorchCheckpoint(bytes: Uint8Array, path: string, env: NodeJS.ProcessEnv = process.env): PyValue {
  if (bytes.length >= 2 && bytes[0] === 0x80 && bytes[1]! <= 5) {
    throw loadFailed(path, 'it is a legacy (PyTorch < 1.6, non-zip) checkpoint, which is not supported. ' +
      'Re-save it with a current PyTorch: torch.save(torch.load(path, weights_only=True), "new.pt").');
  }
  const truncated = 'the file is truncated or is not a PyTorch zip checkpoint. Re-download it, or re-save it with torch.save.';
  if (bytes.length < 22 || !ZIP_MAGIC.every((b, i) => bytes[i] === b)) throw loadFailed(path, truncated);
  const zip = new ZipArchive(bytes, {
    limits: zipLimits(env),
    fail: (why, kind) => loadFailed(path, kind === 'not_zip' ? truncated
      : kind === 'limit' ? why
      : kind === 'unsupported' ? `${why}. Re-save it with torch.save, which writes uncompressed entries.`
      : `${why}; the file is damaged. Re-download it, or re-save it with torch.save.`),
  });
  const names = zip.entries.map((e) => e.name);
  // torch names the root after the first record's folder.
  const root = names[0]?.includes('/') ? names[0].slice(0, names[0].indexOf('/')) : undefined;
  const pklEntry = root === undefined ? undefined : zip.get(`${root}/data.pkl`);
  if (!pklEntry) {
    const torchscript = names.some((n) => n.endsWith('/constants.pkl') || n.includes('/code/'));
    throw loadFailed(path, torchscript
      ? 'it is a TorchScript archive, not a checkpoint; pass the original .pt checkpoint or export to ONNX.'
      : `the zip has no <root>/data.pkl, so it is not a PyTorch checkpoint. ${truncated}`);
  }
  const maxPickle = limit('pickleBytes', env);
  if (pklEntry.size > maxPickle) {
    throw loadFailed(path, `its pickle (${pklEntry.name}) is ${describeBytes(pklEntry.size)}, over the limit of ${describeLimit('pickleBytes', maxPickle)}: ` +
      `checkpoints keep their tensors outside the pickle, so this is not one. If you trust the file: ${raiseAdvice('pickleBytes')}`);
  }
  const pkl = zip.read(pklEntry);
  const byteorderEntry = zip.get(`${root}/byteorder`);
  const byteorder = byteorderEntry ? new TextDecoder().decode(zip.read(byteorderEntry, 16)).trim() : 'little';
  const bigEndian = byteorder === 'big';

  // One read per storage however many tensors view it; the pickle's sizes bound what is inflated.
  const storages = new Map<string, Uint8Array>();
  const loadStorage = (req: StorageRequest): Uint8Array => {
    const size = BYTES_PER_ELEMENT[req.dtype];
    const need = req.numel * size;
    const name = `${root}/data/${req.key}`;
    let data = storages.get(name);
    if (data === undefined) {
      const entry = zip.get(name);
      if (!entry) throw loadFailed(path, `storage ${req.key} is missing from the archive; the file is truncated or damaged.`);
      // torch writes exactly numel * element size; more is not a storage the pickle describes.
      if (entry.size >= need + size) {
        throw loadFailed(path, `storage ${req.key} declares ${entry.size} bytes, but the pickle describes ${req.numel} ${req.dtype} elements (${need} bytes); the file is damaged or crafted.`);
      }
      data = entry.size < need ? zip.read(entry) : zip.read(entry, need + size - 1);
      if (bigEndian) data = swapBytes(data, size);
      storages.set(name, data);
    }
    if (data.byteLength < need) {
      throw loadFailed(path, `storage ${req.key} holds ${data.byteLength} bytes, expected ${need}; the file is truncated or damaged.`);
    }
    return data;
  };
  return unpickle(pkl, { loadStorage, source: path, maxTensorExpansion: limit('tensorExpansion', env) });
}

/** Copy of `data` with every `size`-byte element reversed (big-endian archives). */
function swapBytes(data: Uint8Array, size: number): Uint8Array {
  if (size === 1) return data;
  const out = new Uint8Array(data.length);
  for (let i = 0; i + size <= data.length; i += size) for (let b = 0; b < size; b++) out[i + b] = data[i + size - 1 - b]!;
  return out;
}

export interface WriteTorchOptions {
  /** Folder name inside the zip (torch uses "archive" or the file stem; readers accept any). */
  root?: string;
}

const ALIGN = 64; // torch aligns record data to 64 bytes so storages can be mapped in place
const PAD_FIELD = 0x4246; // the extra-field id torch uses for that padding ('FB')

/**
 * Serialises `obj` as torch.save would: PyOrderedDict -> collections.OrderedDict, Map and plain
 * objects -> dict, arrays -> list, HostTensor -> tensor. Tensors sharing one `data` array share a storage.
 */
export function writeTorchCheckpoint(obj: PyWritable, options: WriteTorchOptions = {}): Uint8Array {
  const root = options.root ?? 'archive';
  const storages: Uint8Array[] = [];
  const keyOf = new Map<TypedData, string>();
  const pkl = dumpsTorchPickle(obj, (t: HostTensor) => {
    let key = keyOf.get(t.data);
    if (key === undefined) {
      key = String(storages.length);
      keyOf.set(t.data, key);
      storages.push(toBytes(t));
    }
    return { key, numel: t.data.length };
  });

  const records: [string, Uint8Array][] = [
    [`${root}/data.pkl`, pkl],
    [`${root}/byteorder`, new TextEncoder().encode('little')],
    ...storages.map((b, i): [string, Uint8Array] => [`${root}/data/${i}`, b]),
    [`${root}/version`, new TextEncoder().encode('3\n')],
  ];
  // Mirror fflate's sequential layout (30-byte local header + name + extra + data) to pad each record.
  const zippable: Zippable = {};
  let offset = 0;
  for (const [name, data] of records) {
    const nameLen = new TextEncoder().encode(name).length;
    const pad = (ALIGN - ((offset + 30 + nameLen + 4) % ALIGN)) % ALIGN;
    zippable[name] = [data, { extra: { [PAD_FIELD]: new Uint8Array(pad).fill(0x5a) } }];
    offset += 30 + nameLen + 4 + pad + data.length;
  }
  return zipSync(zippable, { level: 0, mtime: new Date(1980, 0, 1) });
}
