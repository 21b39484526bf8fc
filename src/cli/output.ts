/**
 * How the small commands print their result: `--json` gives one line, the result with
 * `"schema_version": 1` last; otherwise the human text. Progress lines go to stderr, hidden by --quiet.
 */
export interface OutputFlags {
  json: boolean;
  quiet: boolean;
}

export function printResult(result: Record<string, unknown>, flags: Pick<OutputFlags, 'json'>, human: () => string): void {
  if (flags.json) process.stdout.write(`${JSON.stringify({ ...result, schema_version: 1 })}\n`);
  else process.stdout.write(`${human().replace(/\n*$/, '')}\n`);
}

/** A progress line on stderr, unless --quiet or --json. */
export function progress(flags: OutputFlags, line: string): void {
  if (!flags.quiet && !flags.json) process.stderr.write(`${line}\n`);
}

/** `--json` and `--quiet` on a command. */
export function withOutputFlags<T extends { option(flags: string, description: string, defaultValue?: unknown): T }>(cmd: T): T {
  return cmd.option('--json', 'print one JSON object on stdout', false).option('--quiet', 'no progress lines on stderr', false);
}
