/**
 * The browser demo: builds the browser bundle (with onnxruntime-web's WASM files) into a temporary
 * folder and serves it with this page, the bundled model and sample images on 127.0.0.1, cross-origin
 * isolated (COOP/COEP) so ONNX Runtime runs WASM threads. Prints the page's URL.
 *
 *   npm run demo              (node --import tsx examples/browser/serve.mjs [--port 8080])
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildBrowser } from '../../scripts/build-browser.ts';
import { staticServer } from '../../scripts/static-server.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');

const { values } = parseArgs({ options: { port: { type: 'string', default: '8080' } } });
const { outDir } = await buildBrowser(join(mkdtempSync(join(tmpdir(), 'libreyolo-demo-')), 'dist'), { wasm: true });
const server = await staticServer({ '/dist/': outDir, '/assets/': join(ROOT, 'assets'), '/': HERE }, { isolated: true, port: Number(values.port) });
console.log(`libreyolo browser demo: ${server.url}/index.html (Ctrl-C stops it)`);
const stop = async () => {
  await server.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
