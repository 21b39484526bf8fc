/**
 * Upload names for `libreyolo ui`: the browser's file name reduced to a safe base name, numbered when
 * a run sees it again, so nothing a client sends can choose a path or overwrite an earlier result.
 */

/**
 * Keeps the base name, turns each run of characters outside `A-Za-z0-9._-` into `_`, strips leading
 * and trailing `.` and `_`, falls back to `image`, and adds `.jpg` when no extension is left:
 * `../../evil/test img (1).png` -> `test_img_1_.png`.
 */
export function sanitizeUploadName(raw: string): string {
  const base = raw.split(/[\\/]/).pop() ?? '';
  let name = base.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+|[._]+$/g, '');
  if (name === '') name = 'image';
  if (!name.includes('.')) name += '.jpg';
  return name;
}

/** The names one run has used: a repeat becomes `{stem}_2{suffix}`, `_3`, ... */
export class RunNames {
  private readonly used = new Set<string>();

  claim(name: string): string {
    const dot = name.lastIndexOf('.');
    const stem = dot > 0 ? name.slice(0, dot) : name;
    const suffix = dot > 0 ? name.slice(dot) : '';
    let candidate = name;
    for (let n = 2; this.used.has(candidate.toLowerCase()); n++) candidate = `${stem}_${n}${suffix}`;
    this.used.add(candidate.toLowerCase());
    return candidate;
  }

  reset(): void {
    this.used.clear();
  }
}

/** `X-Filename` as the page sends it (percent-encoded, so any name survives a Latin-1 header). */
export function decodeFilenameHeader(value: string | undefined): string {
  if (!value) return 'image.jpg';
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
