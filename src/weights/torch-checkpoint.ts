/**
 * PyTorch zip checkpoints (torch.save since 1.6): `<root>/data.pkl` holds the object tree and each
 * tensor storage lives raw in `<root>/data/<key>`. Reading and writing go through our safe pickle codec.
 */

import { unzipSync, zipSync, type Zippable } from 'fflate';
import { LibreYOLOError } from '../errors.ts';
import { BYTES_PER_ELEMENT, toBytes, type HostTensor, type TypedData } from '../graph/tensor.ts';
import { dumpsTorchPickle, unpickle, type PyValue, type PyWritable, type StorageRequest } from './pickle.ts';

const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];

function loadFailed(path: string, why: string): LibreYOLOError {
  return new LibreYOLOError('model_load_failed', `Cannot load ${path}: ${why}`);
}

/** Reads a torch.save zip into a plain object tree (dicts as Map, tensors as HostTensor). */
export function readTorchCheckpoint(bytes: Uint8Array, path: string): PyValue {
  if (bytes.length >= 2 && bytes[0] === 0x80 && bytes[1]! <= 5) {
    throw loadFailed(path, 'it is a legacy (PyTorch < 1.6, non-zip) checkpoint, which is not supported. ' +
      'Re-save it with a current PyTorch: torch.save(torch.load(path, weights_only=True), "new.pt").');
  }
  const truncated = 'the file is truncated or is not a PyTorch zip checkpoint. Re-download it, or re-save it with torch.save.';
  if (bytes.length < 22 || !ZIP_MAGIC.every((b, i) => bytes[i] === b)) throw loadFailed(path, truncated);
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes);
  } catch (cause) {
    throw new LibreYOLOError('model_load_failed', `Cannot load ${path}: ${truncated}`, { cause });
  }
  const names = Object.keys(files);
  // torch names the root after the first record's folder.
  const root = names[0]?.includes('/') ? names[0].slice(0, names[0].indexOf('/')) : undefined;
  const pkl = root === undefined ? undefined : files[`${root}/data.pkl`];
  if (!pkl) {
    const torchscript = names.some((n) => n.endsWith('/constants.pkl') || n.includes('/code/'));
    throw loadFailed(path, torchscript
      ? 'it is a TorchScript archive, not a checkpoint; pass the original .pt checkpoint or export to ONNX.'
      : `the zip has no <root>/data.pkl, so it is not a PyTorch checkpoint. ${truncated}`);
  }
  const byteorder = root === undefined ? undefined : files[`${root}/byteorder`];
  const bigEndian = byteorder !== undefined && new TextDecoder().decode(byteorder).trim() === 'big';

  const loadStorage = (req: StorageRequest): Uint8Array => {
    const data = files[`${root}/data/${req.key}`];
    const size = BYTES_PER_ELEMENT[req.dtype];
    if (!data) throw loadFailed(path, `storage ${req.key} is missing from the archive; the file is truncated or damaged.`);
    if (data.byteLength < req.numel * size) {
      throw loadFailed(path, `storage ${req.key} holds ${data.byteLength} bytes, expected ${req.numel * size}; the file is truncated or damaged.`);
    }
    return bigEndian ? swapBytes(data, size) : data;
  };
  return unpickle(pkl, { loadStorage, source: path });
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
