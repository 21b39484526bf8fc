/** Fenced code blocks of a Markdown file, and the shell commands in them, with their line numbers. */

export interface FencedBlock {
  /** the info string's first word (`bash`, `ts`, ...), '' when none */
  lang: string;
  /** 1-based line of the opening fence */
  line: number;
  code: string;
}

export interface ShellLine {
  line: number;
  /** the line as written, comment included */
  text: string;
  /** the command without a trailing ` # comment` */
  command: string;
}

/** `file` names the document in errors. */
export function fencedBlocks(markdown: string, file = 'README.md'): FencedBlock[] {
  const lines = markdown.split('\n');
  const blocks: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})\s*([^\s`]*)/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith(fence); i++) body.push(lines[i]!);
    if (i >= lines.length) throw new Error(`${file}:${start + 1}: code fence is never closed`);
    blocks.push({ lang: open[2]!, line: start + 1, code: body.join('\n') });
  }
  return blocks;
}

/**
 * The commands of a shell block. `bash` / `sh`: every line that is not blank or a comment (a trailing
 * backslash continues the line). `console`: the lines after a `$ ` prompt; the rest is sample output.
 */
export function shellLines(block: FencedBlock): ShellLine[] {
  const out: ShellLine[] = [];
  const rows = block.code.split('\n');
  for (let k = 0; k < rows.length; k++) {
    let text = rows[k]!;
    const line = block.line + 1 + k;
    if (block.lang === 'console') {
      if (!text.startsWith('$ ')) continue;
      text = text.slice(2);
    } else if (text.trim() === '' || text.trim().startsWith('#')) {
      continue;
    }
    while (text.endsWith('\\') && k + 1 < rows.length) text = `${text.slice(0, -1)} ${rows[++k]!.trim()}`;
    out.push({ line, text: text.trim(), command: text.replace(/\s+#.*$/, '').trim() });
  }
  return out;
}
