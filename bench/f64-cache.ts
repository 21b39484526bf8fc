/**
 * Named sets of float64 arrays saved to DIR/<name>.bin (the values) and DIR/<name>.json (names and
 * lengths), so a bench's float64 interpreter run (minutes) is done once per input.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';

export type Arrays = Record<string, Float64Array>;

/** `compute()`, or its saved result under `dir/name` (saved there when absent); no `dir`: no cache. */
export function cachedArrays(dir: string | undefined, name: string, compute: () => Arrays): Arrays {
  const file = dir ? `${dir}/${name}` : null;
  if (file && existsSync(`${file}.json`)) {
    const index = JSON.parse(readFileSync(`${file}.json`, 'utf8')) as Array<[string, number]>;
    const all = new Float64Array(new Uint8Array(readFileSync(`${file}.bin`)).buffer);
    let off = 0;
    return Object.fromEntries(index.map(([k, n]) => [k, all.subarray(off, (off += n))]));
  }
  const r = compute();
  if (file) {
    mkdirSync(dir!, { recursive: true });
    const all = new Float64Array(Object.values(r).reduce((n, a) => n + a.length, 0));
    let off = 0;
    for (const a of Object.values(r)) {
      all.set(a, off);
      off += a.length;
    }
    writeFileSync(`${file}.bin`, new Uint8Array(all.buffer));
    writeFileSync(`${file}.json`, JSON.stringify(Object.entries(r).map(([k, a]) => [k, a.length])));
  }
  return r;
}
