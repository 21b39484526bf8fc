/** The last segment of a path or URL path (`a/b/c.pt` -> `c.pt`), without node:path so the browser build can use it. */
export function baseName(path: string): string {
  const parts = path.split(/[\\/]+/).filter((p) => p !== '');
  return parts[parts.length - 1] ?? '';
}
