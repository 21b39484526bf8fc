/**
 * A safe Python-pickle codec for PyTorch checkpoints.
 *
 * Reading: a stack machine over the opcodes torch emits (protocols 1-5; `torch.save(...,
 * pickle_protocol=1)` writes booleans and big ints as text INT/LONG lines). Nothing is ever
 * executed from the file: every GLOBAL is looked up in a fixed allow-list of tensor rebuilders and
 * plain containers, and anything else is refused at the GLOBAL opcode itself, before a REDUCE could
 * call it.
 *
 * Value mapping (Python -> JS):
 *   None -> null, bool -> boolean, float -> number, int -> number (bigint beyond 2^53),
 *   str -> string, bytes/bytearray -> Uint8Array, list and tuple -> Array, set/frozenset -> Set,
 *   dict -> Map, collections.OrderedDict -> PyOrderedDict (a Map subclass), tensor -> HostTensor,
 *   torch.Size -> number[], torch.device -> string ('cpu', 'cuda:0'), torch.<dtype> -> TorchDtype,
 *   numpy scalars -> number | bigint | boolean.
 * Dicts are Maps so that key types survive: `names = {0: 'person'}` decodes to a Map whose key is
 * the number 0, so `names.get(0)` works and `names.get('0')` does not. Insertion order is kept.
 * Tensors are contiguous; when the layout allows they are views of their storage's bytes, so tensors
 * that shared a storage in Python share memory here too. The tensors rebuilt from a pickle may add up
 * to at most `maxTensorExpansion` times the bytes of the storages it loads (plus 64 MiB), so views
 * (stride 0, or many views of one storage) cannot multiply memory. The `_metadata` attribute torch attaches to
 * state dicts (BUILD on an OrderedDict) is dropped.
 *
 * Writing (`dumpsTorchPickle`): protocol 2 with the opcode structure `torch.save` produces (minus
 * that `_metadata`, which load_state_dict does not need), so `torch.load(weights_only=True)` accepts it.
 */

export { dumpsTorchPickle } from './writer.ts';
export { unpickle, type UnpickleOptions } from './reader.ts';
export {
  isHostTensor, PyFloat, pyFloat, PyNamespace, PyOrderedDict, STORAGE_CLASS_OF, TorchDtype,
  type PyValue, type PyWritable, type StorageRef, type StorageRequest,
} from './values.ts';
