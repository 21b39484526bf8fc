/**
 * A profiler never switches devices on its own: before anything is loaded, the requested device
 * gets a one-node session on its execution provider, and a device that cannot have one is an error
 * that says to pass `--device cpu`.
 */
import type * as Ort from 'onnxruntime-node';
import { GraphBuilder } from '../graph/builder.ts';
import { serializeModel } from '../graph/onnx.ts';
import { executionProviders, parseDevice, type Device } from '../runtime/device.ts';
import { ProfileError } from './errors.ts';

function probeModel(): Uint8Array {
  const b = new GraphBuilder('device_probe');
  const x = b.input('x', 'float32', [1]);
  b.output('y', b.op('Identity', [x]), 'float32', [1]);
  return serializeModel(b.graph);
}

export function deviceOrError(value: string): Device {
  try {
    return parseDevice(value);
  } catch (err) {
    throw new ProfileError((err as Error).message, 2);
  }
}

export async function ensureDeviceAvailable(device: Device): Promise<void> {
  if (device.kind === 'cpu') return;
  const ort = await import('onnxruntime-node');
  // The expected failure would otherwise print ORT's native error log before our message.
  ort.env.logLevel = 'fatal';
  try {
    const session = await ort.InferenceSession.create(probeModel(), {
      executionProviders: executionProviders(device) as Ort.InferenceSession.ExecutionProviderConfig[],
      logSeverityLevel: 4,
    });
    await session.release();
  } catch (err) {
    const detail = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    const missing = device.kind === 'cuda' ? " (onnxruntime-node's CUDA execution provider is not installed on this machine)" : '';
    throw new ProfileError(`device '${device.id}' is not available${missing}: ${detail}\npass --device cpu to profile on the CPU; the profiler never switches devices on its own.`, 2);
  }
}
