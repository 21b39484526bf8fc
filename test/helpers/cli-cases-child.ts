/**
 * Child process for tests that run many CLI invocations: runs `main(argv)` (what `libreyolo` runs)
 * once per argv of the JSON list in the file named by argv[2], in this one process, and prints one
 * JSON line: per invocation the exit code main() returns (bin.ts sets it as the process's) and the
 * stdout / stderr it wrote.
 */
import { readFileSync } from 'node:fs';
import { main } from '../../src/cli/main.ts';

const runs = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as string[][];
const results: Array<{ code: number; stdout: string; stderr: string }> = [];
const [w1, w2] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
for (const argv of runs) {
  const out = { stdout: '', stderr: '' };
  process.stdout.write = ((s: string | Uint8Array) => ((out.stdout += String(s)), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string | Uint8Array) => ((out.stderr += String(s)), true)) as typeof process.stderr.write;
  let code: number;
  try {
    code = await main(argv);
  } finally {
    process.stdout.write = w1;
    process.stderr.write = w2;
  }
  results.push({ code, ...out });
}
w1(`${JSON.stringify(results)}\n`);
