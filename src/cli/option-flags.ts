/**
 * Command-line flags generated from an option table (predict's PREDICT_OPTIONS, export's
 * EXPORT_OPTIONS): `max_det` becomes `--max-det <value>` (and `max_det=5`), a boolean `--save` with a
 * hidden `--no-save`. Each value is read and checked by the option's own rule as the flag is
 * parsed, so `conf=abc` fails before any model loads, with the library's code and message.
 */
import { Option, type Command } from 'commander';
import { fromCli, type Rule } from '../util/options.ts';

export interface TableOption {
  rule: Rule<unknown>;
  default?: unknown;
  /** null: not on the command line. */
  help: string | null;
}

/** The commander parser of one option: the text read as the rule's type, then checked. */
export function ruleParser(key: string, rule: Rule<unknown>): (text: string) => unknown {
  return (text) => rule.check(key, fromCli(rule, text));
}

const shown = (v: unknown): string => (Array.isArray(v) ? `[${v.join(',')}]` : String(v));

/** Adds a flag per table entry (but `skip`), in table order; no commander defaults (the library applies them). */
export function addTableFlags(cmd: Command, table: Readonly<Record<string, TableOption>>, skip: readonly string[] = []): Command {
  for (const [key, o] of Object.entries(table)) {
    if (o.help === null || skip.includes(key)) continue;
    const flag = key.replace(/_/g, '-');
    if (o.rule.form === 'flag') {
      cmd.option(`--${flag}`, o.help);
      cmd.addOption(new Option(`--no-${flag}`).hideHelp());
    } else {
      const dflt = o.default !== undefined && !/\bdefault\b/.test(o.help) ? ` (default ${shown(o.default)})` : '';
      cmd.option(`--${flag} <value>`, `${o.help}${dflt}`, ruleParser(key, o.rule));
    }
  }
  return cmd;
}

/** The table's options the user gave, under their table keys (`maxDet` -> `max_det`), values as parsed. */
export function tableValues(flags: Readonly<Record<string, unknown>>, table: Readonly<Record<string, TableOption>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(table)) {
    const v = flags[key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())];
    if (v !== undefined) out[key] = v;
  }
  return out;
}
