/**
 * Builds the browser bundle into dist/browser/: `libreyolo.js` (the API, ESM, no onnxruntime in it),
 * `session-worker.js` (the Web Worker with onnxruntime-web's JS inlined) and, with `--wasm` (tests,
 * bench, demo), onnxruntime-web's WASM files beside them; the package does not ship those (28 MB):
 * pages serve them from onnxruntime-web's dist/ and say where with configureRuntime({ wasmPaths }). The core modules in BROWSER_SEAMS are swapped for their browser counterparts;
 * any `node:` or Node built-in import left reachable fails the build. Writes `meta.json` (esbuild's
 * metafile for both bundles), which test/e2e/browser-bundle.test.ts walks.
 * Run: node --import tsx scripts/build-browser.ts [--wasm] [outDir]
 */
import { copyFileSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile, type Plugin } from 'esbuild';
import { BROWSER_SEAMS } from './browser-seams.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
/** onnxruntime-web's files for its WASM + WebGPU (JSEP) build, which the worker bundle loads. */
export const WASM_FILES = ['ort-wasm-simd-threaded.jsep.mjs', 'ort-wasm-simd-threaded.jsep.wasm'];

const NODE_BUILTINS = new Set(builtinModules);

const browserSeams: Plugin = {
  name: 'libreyolo-browser-seams',
  setup(b) {
    const swaps = new Map(Object.entries(BROWSER_SEAMS).map(([node, web]) => [join(SRC, node), join(SRC, web)]));
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = resolve(args.resolveDir, args.path);
      const swap = swaps.get(target);
      // The counterpart re-exports from the core: those imports must not be swapped back into themselves.
      return swap && args.importer !== swap ? { path: swap } : undefined;
    });
    b.onResolve({ filter: /.*/ }, (args) => {
      const bare = args.path.replace(/^node:/, '');
      if (args.path.startsWith('node:') || NODE_BUILTINS.has(bare)) {
        return { errors: [{ text: `Node built-in '${args.path}' is reachable from the browser bundle (imported by ${args.importer.replace(`${ROOT}/`, '')})` }] };
      }
      return undefined;
    });
  },
};

export async function buildBrowser(outDir = join(ROOT, 'dist', 'browser'), options: { wasm?: boolean } = {}): Promise<{ outDir: string; metafile: Metafile }> {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const common = {
    bundle: true, format: 'esm' as const, platform: 'browser' as const, target: 'es2022', minify: true, sourcemap: false,
    plugins: [browserSeams], metafile: true, logLevel: 'warning' as const, legalComments: 'none' as const,
  };
  const api = await build({
    ...common, entryPoints: [join(SRC, 'browser', 'index.ts')], outfile: join(outDir, 'libreyolo.js'),
    inject: [join(SRC, 'browser', 'process-shim.ts')],
  });
  const worker = await build({
    ...common, entryPoints: [join(SRC, 'browser', 'session-worker.ts')], outfile: join(outDir, 'session-worker.js'),
    // onnxruntime-web's build that loads its WASM glue (.mjs) as a file beside it, so pthread workers start from that file, not ours.
    conditions: ['onnxruntime-web-use-extern-wasm'],
  });
  const ortDist = join(dirname(fileURLToPath(import.meta.resolve('onnxruntime-web'))));
  if (options.wasm) for (const f of WASM_FILES) copyFileSync(join(ortDist, f), join(outDir, f));
  const metafile: Metafile = { inputs: { ...api.metafile!.inputs, ...worker.metafile!.inputs }, outputs: { ...api.metafile!.outputs, ...worker.metafile!.outputs } };
  writeFileSync(join(outDir, 'meta.json'), JSON.stringify(metafile));
  return { outDir, metafile };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const wasm = args.includes('--wasm');
  const dir = args.find((a) => a !== '--wasm');
  const { outDir } = await buildBrowser(dir ? resolve(dir) : undefined, { wasm });
  for (const f of ['libreyolo.js', 'session-worker.js', ...(wasm ? WASM_FILES : [])]) {
    console.log(`${join(outDir, f).replace(`${ROOT}/`, '')}  ${(statSync(join(outDir, f)).size / 1024).toFixed(0)} KiB`);
  }
}
