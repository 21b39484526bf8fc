/**
 * A profiler never switches devices on its own: before anything is loaded, the requested device
 * gets a one-node session on its execution provider, and a device that cannot have one is an error
 * that says to pass `--device cpu`.
 */
import { LibreYOLOError } from '../errors.ts';
import { nativeReason, parseDevice, type Device } from '../runtime/device.ts';
import { ensureDeviceQuietly } from '../runtime/device-probe.ts';

export function deviceOrError(value: string): Device {
  try {
    return parseDevice(value);
  } catch (err) {
    throw new LibreYOLOError('profile_argument_invalid', (err as Error).message);
  }
}

/**
 * Resolves when `device` can have a session, else fails in one line naming the flags that work on
 * this machine (`cpuFlags`, such as `--device cpu --weights LibreYOLO9t-shapes`), with predict's
 * exit code for the same failure.
 */
export async function ensureDeviceAvailable(device: Device, cpuFlags = '--device cpu'): Promise<void> {
  try {
    await ensureDeviceQuietly(device);
  } catch (err) {
    if (!(err instanceof LibreYOLOError)) throw err;
    const why = device.kind === 'cuda' ? "onnxruntime-node's CUDA execution provider is not installed on this machine" : nativeReason(err.cause);
    throw new LibreYOLOError(err.code, `device '${device.id}' is not available (${why}); the profiler never switches devices on its own: pass ${cpuFlags} to profile on the CPU.`, { cause: err });
  }
}
