/**
 * Device strings -> ONNX Runtime execution providers. `cpu` (default; `auto` and '' mean it too),
 * `0` / `cuda` / `cuda:N` (CUDA EP, only when its libraries are installed), `webgpu`. A device
 * that cannot be had is an error, never a silent fallback. `gpu` is refused: it could mean CUDA or
 * WebGPU, and guessing would run somewhere the user did not ask for.
 */
import { LibreYOLOError } from '../errors.ts';

export type DeviceKind = 'cpu' | 'cuda' | 'webgpu';

export interface Device {
  kind: DeviceKind;
  index: number;
  /** Canonical string used in cache keys and messages: `cpu`, `cuda:0`, `webgpu`. */
  id: string;
}

/** The accepted device names, for messages and help. */
export const DEVICE_NAMES = "'cpu' (default), '0' / 'cuda' / 'cuda:N' (CUDA), 'webgpu'";

export function parseDevice(value: string | number | undefined | null): Device {
  const raw = value === undefined || value === null ? 'cpu' : String(value).trim().toLowerCase();
  if (raw === 'cpu' || raw === 'auto' || raw === '') return { kind: 'cpu', index: 0, id: 'cpu' };
  if (raw === 'webgpu') return { kind: 'webgpu', index: 0, id: 'webgpu' };
  if (raw === 'gpu') {
    throw new LibreYOLOError('config_range_error', `device '${value}' could mean CUDA or WebGPU: pass '0' (or 'cuda:0') for an NVIDIA GPU through CUDA, or 'webgpu' for WebGPU over Vulkan. Accepted devices: ${DEVICE_NAMES}.`);
  }
  const m = /^(?:cuda:?)?(\d+)$/.exec(raw) ?? (raw === 'cuda' ? ['cuda', '0'] : null);
  if (m) {
    const index = Number(m[1]);
    return { kind: 'cuda', index, id: `cuda:${index}` };
  }
  throw new LibreYOLOError('config_type_error', `Unknown device '${value}'. Accepted devices: ${DEVICE_NAMES}.`);
}

export function executionProviders(device: Device): Array<string | { name: string; deviceId?: number }> {
  switch (device.kind) {
    case 'cpu': return ['cpu'];
    case 'cuda': return [{ name: 'cuda', deviceId: device.index }];
    case 'webgpu': return ['webgpu'];
  }
}

/**
 * ORT's reason without its source location: `/onnxruntime_src/.../webgpu_context.cc:136 ... was false.
 * Failed to get a WebGPU adapter: No supported adapters` -> `Failed to get a WebGPU adapter: ...`.
 */
export function nativeReason(cause: unknown): string {
  const first = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0]!.trim();
  return first.replace(/^\S+\.(?:cc|cpp|h):\d+ .*? was false\.\s*/, '').replace(/^\S+\.(?:cc|cpp|h):\d+ \S+\s*/, '');
}

/** Turns ORT's provider-loading failure into an actionable message. */
export function deviceUnavailable(device: Device, cause: unknown): LibreYOLOError {
  const detail = nativeReason(cause);
  const how = device.kind === 'cuda'
    ? "onnxruntime-node's CUDA execution provider is not installed (it is skipped at install so `npm ci` works offline). "
      + 'To use CUDA, run `ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node` on a machine with CUDA 12, or pass device=cpu.'
    : 'The WebGPU provider needs a GPU with a Vulkan driver. Pass device=cpu to run on the CPU.';
  return new LibreYOLOError('device_not_available', `Device '${device.id}' is not available: ${detail}\n${how}`, { cause });
}
