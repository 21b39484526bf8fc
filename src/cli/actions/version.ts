/** What `libreyolo version` does (imported only when it runs: it loads ONNX Runtime and sharp to ask their versions). */
import { libvipsVersions, onnxruntimeVersion } from '../../runtime/environment.ts';
import { VERSION } from '../../version.ts';
import { printResult, type OutputFlags } from '../output.ts';

export async function runVersion(flags: OutputFlags): Promise<void> {
  const { sharp, libvips } = libvipsVersions();
  const result = { version: VERSION, node: process.versions.node, onnxruntime: onnxruntimeVersion(), sharp, libvips };
  printResult(result, flags, () => `libreyolo ${VERSION}\nNode ${result.node}, onnxruntime-node ${result.onnxruntime}, sharp ${sharp} (libvips ${libvips})`);
}
