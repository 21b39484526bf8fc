/**
 * Whether a device can have an ONNX Runtime session, asked in a child process: the WebGPU provider's
 * native layers (Dawn, the Vulkan loader) print their own lines on the process's stderr when no
 * adapter is found (`XDG_RUNTIME_DIR is invalid`, C++ source paths), which no log level silences.
 * In a child those lines are captured and dropped, and the user sees only our error.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { GraphBuilder } from '../graph/builder.ts';
import { serializeModel } from '../graph/onnx.ts';
import { deviceUnavailable, executionProviders, type Device } from './device.ts';

const probes = new Map<string, Promise<void>>();

function probeModel(): Uint8Array {
  const b = new GraphBuilder('device_probe');
  const x = b.input('x', 'float32', [1]);
  b.output('y', b.op('Identity', [x]), 'float32', [1]);
  return serializeModel(b.graph);
}

// Runs in the child: one session on the provider; its error message (first line) is the only output.
const CHILD = `
const ort = require(process.argv[1]);
ort.env.logLevel = 'fatal';
ort.InferenceSession.create(Buffer.from(process.argv[2], 'base64'), { executionProviders: JSON.parse(process.argv[3]), logSeverityLevel: 4 })
  .then((s) => s.release()).then(() => process.exit(0))
  .catch((e) => { process.stdout.write(String(e && e.message || e)); process.exit(1); });`;

function probe(device: Device): Promise<void> {
  const ortPath = createRequire(import.meta.url).resolve('onnxruntime-node');
  const args = ['-e', CHILD, ortPath, Buffer.from(probeModel()).toString('base64'), JSON.stringify(executionProviders(device))];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { timeout: 60_000, maxBuffer: 1 << 20 }, (err, stdout) => {
      if (!err) return resolve();
      reject(deviceUnavailable(device, new Error(stdout.trim() || err.message)));
    });
  });
}

/**
 * Resolves when `device` can have a session here, else rejects with `device_not_available`; once
 * per device and process. The CPU needs no probe.
 */
export function ensureDeviceQuietly(device: Device): Promise<void> {
  if (device.kind === 'cpu') return Promise.resolve();
  let p = probes.get(device.id);
  if (!p) {
    p = probe(device);
    p.catch(() => probes.delete(device.id));
    probes.set(device.id, p);
  }
  return p;
}
