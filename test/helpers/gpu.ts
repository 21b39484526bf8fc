/**
 * What this machine really has, so GPU tests assert the behaviour that matches it instead of passing
 * because a GPU is absent: one real forward of the fixture model on the device, once per process.
 *
 * `LIBREYOLO_EXPECT_DEVICES=webgpu,cuda` (set by scripts/gpu-checks.sh) turns "unavailable" into a
 * failure for the devices listed, so a GPU run cannot go green on the error branch.
 */
import { LibreYOLO } from '../../src/index.ts';
import { FIXTURE_MODEL } from './test-families.ts';

export type GpuDevice = 'cuda:0' | 'webgpu';
export type Probe = { available: true } | { available: false; message: string };

const probes = new Map<GpuDevice, Promise<Probe>>();

function expected(device: GpuDevice): boolean {
  const list = (process.env.LIBREYOLO_EXPECT_DEVICES ?? '').split(',').map((s) => s.trim().toLowerCase());
  return list.includes(device) || (device === 'cuda:0' && list.includes('cuda'));
}

async function probe(device: GpuDevice): Promise<Probe> {
  const m = await LibreYOLO(FIXTURE_MODEL(), { progress: false, device });
  try {
    await m.engine.forward({ dtype: 'float32', dims: [1, 3, 64, 64], data: new Float32Array(3 * 64 * 64).fill(0.5) });
    return { available: true };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (expected(device)) throw new Error(`LIBREYOLO_EXPECT_DEVICES lists ${device}, but it is not available here: ${message}`);
    return { available: false, message };
  } finally {
    await m.close();
  }
}

/** Whether `device` runs a forward here (and if not, ORT's reason as our error message). */
export function probeDevice(device: GpuDevice): Promise<Probe> {
  let p = probes.get(device);
  if (!p) { p = probe(device); probes.set(device, p); }
  return p;
}
