/** What `libreyolo checks` does (imported only when it runs: it loads ONNX Runtime and sharp to ask their versions). */
import { readFileSync } from 'node:fs';
import { executionProviderReports, ffmpegVersion, libvipsVersions, nvidiaGpus, onnxruntimeVersion, packageVersion } from '../../runtime/environment.ts';
import { printResult, type OutputFlags } from '../output.ts';

/** The package's own dependencies, read from its package.json so the list never drifts. */
function dependencyNames(): string[] {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { dependencies?: Record<string, string> };
  return Object.keys(pkg.dependencies ?? {});
}

/** `Label:` padded so the values line up. */
const pad = (label: string): string => `${label}:`.padEnd(14);

export async function runChecks(flags: OutputFlags): Promise<void> {
  const gpu = nvidiaGpus();
  const providers = executionProviderReports(gpu);
  const { sharp, libvips } = libvipsVersions();
  const packages = Object.fromEntries(dependencyNames().map((n) => [n, packageVersion(n)]));
  const result = {
    node: process.versions.node, platform: `${process.platform}-${process.arch}`, onnxruntime: onnxruntimeVersion(),
    execution_providers: providers, sharp, libvips, ffmpeg: ffmpegVersion(), gpu, packages,
  };
  printResult(result, flags, () => [
    `${pad('Node')}${result.node} (${result.platform})`,
    `${pad('ONNX Runtime')}${result.onnxruntime}`,
    `${pad('sharp')}${sharp} (libvips ${libvips})`,
    `${pad('ffmpeg')}${result.ffmpeg ?? 'not found on PATH (needed for video sources only)'}`,
    ...(gpu.length ? gpu.map((g) => `${pad(`GPU ${g.index}`)}${g.name} (${g.memory_mb} MB)`) : [`${pad('GPU')}none detected (nvidia-smi lists none)`]),
    '',
    'Execution providers:',
    ...providers.map((p) => `  ${p.name}: ${p.available ? 'available' : 'not available'}${p.device ? ` (device=${p.device})` : ''} - ${p.why}`),
    '',
    'Packages:',
    ...Object.entries(packages).map(([n, v]) => `  ${n}: ${v ?? 'not installed'}`),
  ].join('\n'));
}
