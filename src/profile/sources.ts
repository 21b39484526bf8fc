/** `profile infer [source]`: a folder's images (direct children, sorted), a file, or nothing. */
import { readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';

export const IMAGE_EXTS: ReadonlySet<string> = new Set(['.jpg', '.jpeg', '.png', '.bmp', '.webp', '.tif', '.tiff']);

export function resolveInferSource(source: string): string[] {
  let st;
  try {
    st = statSync(source);
  } catch {
    return [];
  }
  if (!st.isDirectory()) return [source];
  return readdirSync(source).filter((n) => IMAGE_EXTS.has(extname(n).toLowerCase())).sort().map((n) => join(source, n));
}
