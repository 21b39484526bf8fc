/** `libreyolo version`: the package version and what it runs on (Node, ONNX Runtime, libvips). */
import { Command } from 'commander';
import { libvipsVersions, onnxruntimeVersion } from '../../runtime/environment.ts';
import { VERSION } from '../../version.ts';
import { printResult, withOutputFlags, type OutputFlags } from '../output.ts';

export function versionCommand(): Command {
  return withOutputFlags(new Command('version').description('Print the libreyolo version and the Node, ONNX Runtime and libvips versions.'))
    .action((flags: OutputFlags) => {
      const { sharp, libvips } = libvipsVersions();
      const result = { version: VERSION, node: process.versions.node, onnxruntime: onnxruntimeVersion(), sharp, libvips };
      printResult(result, flags, () => `libreyolo ${VERSION}\nNode ${result.node}, onnxruntime-node ${result.onnxruntime}, sharp ${sharp} (libvips ${libvips})`);
    });
}
