/**
 * The browser's device probe (replaces runtime/device-probe.ts, which runs a child process in Node):
 * nothing to probe up front; the session worker asks navigator.gpu for an adapter before a WebGPU session.
 */
import type { Device } from '../runtime/device.ts';

export async function ensureDeviceQuietly(_device: Device): Promise<void> {}
