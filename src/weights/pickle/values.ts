/**
 * The JS values a pickle decodes to and the writer accepts (the Python -> JS mapping is described in
 * ./index.ts).
 */

import { BYTES_PER_ELEMENT, type DType, type HostTensor } from '../../graph/tensor.ts';

/** collections.OrderedDict; a plain Python dict decodes to (and is written from) a plain Map. */
export class PyOrderedDict extends Map<PyValue, PyValue> {}

/**
 * An `argparse.Namespace` (upstream RF-DETR checkpoints pickle their training `args` as one): an
 * inert bag of attributes, filled by BUILD from its `__dict__`; nothing of it is executed.
 */
export class PyNamespace extends Map<PyValue, PyValue> {}

/** A torch dtype object such as `torch.float16` (appears in optimizer state or metadata). */
export class TorchDtype {
  constructor(readonly name: string) {}
}

export type PyValue =
  | null | boolean | number | bigint | string | Uint8Array
  | PyValue[] | Map<PyValue, PyValue> | Set<PyValue> | HostTensor | TorchDtype;

export function isHostTensor(v: unknown): v is HostTensor {
  if (typeof v !== 'object' || v === null) return false;
  const t = v as Partial<HostTensor>;
  return typeof t.dtype === 'string' && Object.hasOwn(BYTES_PER_ELEMENT, t.dtype) && Array.isArray(t.dims) && ArrayBuffer.isView(t.data);
}

/** Storage classes as torch pickles them (the class names the element type). */
export const STORAGE_CLASS_OF: Record<DType, string> = {
  float32: 'FloatStorage', float16: 'HalfStorage', bfloat16: 'BFloat16Storage', float64: 'DoubleStorage',
  int64: 'LongStorage', int32: 'IntStorage', int16: 'ShortStorage', int8: 'CharStorage', uint8: 'ByteStorage', bool: 'BoolStorage',
};

/** A storage request decoded from a torch persistent id ('storage', <class>, key, location, numel). */
export interface StorageRequest {
  key: string;
  dtype: DType;
  numel: number;
  location: string;
}

/**
 * A number the writer must emit as a Python float even when it is whole (JS numbers do not say:
 * `0` would become the int 0 where the original writes `0.0`).
 */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** A number, or each number of a list, as Python float(s). */
export function pyFloat(v: number | number[]): PyFloat | PyFloat[] {
  return Array.isArray(v) ? v.map((x) => new PyFloat(x)) : new PyFloat(v);
}

/** What the writer accepts: PyValue plus plain JS objects (written as str-keyed dicts) and PyFloat. */
export type PyWritable = PyValue | PyFloat | undefined | { [key: string]: PyWritable } | PyWritable[];

export interface StorageRef {
  key: string;
  numel: number;
}
