/**
 * What this installation runs on, for `libreyolo version` and `libreyolo checks` (and bug reports):
 * Node, ONNX Runtime and its execution providers, sharp/libvips, ffmpeg, NVIDIA GPUs. Everything is
 * read from the installed files and tools; no session is created and nothing is downloaded.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';

const require = createRequire(import.meta.url);

export interface ProviderReport {
  /** ORT's name: `cpu`, `webgpu`, `cuda`, `tensorrt`. */
  name: string;
  /** Shipped inside onnxruntime-node's npm package (the others need an install step). */
  bundled: boolean;
  available: boolean;
  /** Why it is or is not available, and what to do. */
  why: string;
  /** The `device=` value that selects it, or null when no libreyolo device does. */
  device: string | null;
}

export interface GpuReport {
  index: number;
  name: string;
  memory_mb: number;
}

/** The version of an installed package, or null when it cannot be found. */
export function packageVersion(name: string): string | null {
  // `<name>/package.json` is blocked by some packages' `exports`; walk up from the entry point instead.
  let dir: string;
  try {
    dir = dirname(require.resolve(name));
  } catch {
    return null;
  }
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name && pkg.version) return pkg.version;
    }
    dir = dirname(dir);
  }
  return null;
}

export function onnxruntimeVersion(): string {
  return ort.env.versions.node ?? ort.env.versions.common;
}

export function libvipsVersions(): { sharp: string; libvips: string } {
  const v = sharp.versions as Record<string, string | undefined>;
  return { sharp: v.sharp ?? packageVersion('sharp') ?? 'unknown', libvips: v.vips ?? 'unknown' };
}

/** `ffmpeg -version`'s version word, or null when no ffmpeg is on PATH. */
export function ffmpegVersion(): string | null {
  const r = spawnSync('ffmpeg', ['-version'], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0 || typeof r.stdout !== 'string') return null;
  return /^ffmpeg version (\S+)/.exec(r.stdout)?.[1] ?? null;
}

/** NVIDIA GPUs as `nvidia-smi` lists them; empty without the tool or a GPU. */
export function nvidiaGpus(): GpuReport[] {
  const r = spawnSync('nvidia-smi', ['--query-gpu=index,name,memory.total', '--format=csv,noheader,nounits'], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0 || typeof r.stdout !== 'string') return [];
  return r.stdout.trim().split('\n').filter(Boolean).map((line) => {
    const [index, name, mb] = line.split(',').map((s) => s.trim());
    return { index: Number(index), name: name ?? '', memory_mb: Number(mb) };
  });
}

/** The folder holding onnxruntime-node's native binding (and any provider libraries installed beside it). */
function ortBinaryDir(): string | null {
  try {
    const root = dirname(require.resolve('onnxruntime-node'));
    const base = join(root, '..', '..', 'bin', 'napi-v6', process.platform, process.arch);
    return existsSync(base) ? base : null;
  } catch {
    return null;
  }
}

function hasLibrary(dir: string | null, stem: string): boolean {
  if (!dir) return false;
  return readdirSync(dir).some((f) => f.startsWith(stem));
}

/** A Vulkan loader and a GPU render node: what ORT's WebGPU provider (Dawn on Vulkan) needs on Linux. */
function vulkanReady(): { ok: boolean; missing: string[] } {
  if (process.platform !== 'linux') return { ok: true, missing: [] };
  const missing: string[] = [];
  const libDirs = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu'];
  if (!libDirs.some((d) => existsSync(join(d, 'libvulkan.so.1')))) missing.push('no Vulkan loader (libvulkan.so.1; Debian: apt-get install libvulkan1)');
  const render = existsSync('/dev/dri') && readdirSync('/dev/dri').some((f) => f.startsWith('renderD'));
  if (!render && !existsSync('/dev/nvidia0')) missing.push('no GPU device node (/dev/dri/renderD* or /dev/nvidia0)');
  return { ok: missing.length === 0, missing };
}

const CUDA_INSTALL = 'ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node';

/** Every provider this onnxruntime-node build knows, with whether this machine can use it and why. */
export function executionProviderReports(gpus: GpuReport[] = nvidiaGpus()): ProviderReport[] {
  const dir = ortBinaryDir();
  return ort.listSupportedBackends().map(({ name, bundled }): ProviderReport => {
    switch (name) {
      case 'cpu':
        return { name, bundled, available: true, why: 'always available', device: 'cpu' };
      case 'webgpu': {
        const v = vulkanReady();
        return {
          name, bundled, available: v.ok, device: 'webgpu',
          why: v.ok ? 'bundled; a Vulkan loader and a GPU device node are present (a session can still fail on an unsupported driver)' : `bundled, but ${v.missing.join('; ')}`,
        };
      }
      case 'cuda':
      case 'tensorrt': {
        const lib = `libonnxruntime_providers_${name}`;
        const device = name === 'cuda' ? '0' : null;
        const use = name === 'cuda' ? '' : '; libreyolo selects no TensorRT device (device=0 uses CUDA)';
        if (!hasLibrary(dir, lib)) return { name, bundled, available: false, device, why: `not installed: ${lib}.so is not in onnxruntime-node (skipped at install); run ${CUDA_INSTALL} on a machine with CUDA 12${use}` };
        if (gpus.length === 0) return { name, bundled, available: false, device, why: `installed, but nvidia-smi lists no NVIDIA GPU${use}` };
        return { name, bundled, available: true, device, why: `installed; ${gpus.length} NVIDIA GPU(s)${use}` };
      }
      default:
        return { name, bundled, available: false, device: null, why: 'not used by libreyolo' };
    }
  });
}
