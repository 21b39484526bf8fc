/**
 * LibreYOLO-style `key=value` arguments on top of commander: tokens are rewritten to POSIX flags
 * before parsing (`max_det=5` -> `--max-det 5`, `save=true` -> `--save`, `save=false` -> `--no-save`
 * or dropped, a bare flag name such as `save` -> `--save`). The token after a value-taking flag is
 * never rewritten. The original's short names (aliases.ts: train `mosaic`) become the option they set.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { LibreYOLOError } from '../errors.ts';
import { resolveAlias } from './aliases.ts';
import { optionTypeError } from '../util/options.ts';

const KEY_VALUE = /^([A-Za-z_][A-Za-z0-9_-]*)=(.*)$/s;

interface FlagInfo {
  boolean: Set<string>;
  negatable: Set<string>;
  valued: Set<string>;
}

function flagInfo(cmd: Command): FlagInfo {
  const info: FlagInfo = { boolean: new Set(), negatable: new Set(), valued: new Set() };
  for (const opt of cmd.options) {
    const long = opt.long?.replace(/^--/, '');
    if (!long) continue;
    if (opt.negate) info.negatable.add(long.replace(/^no-/, ''));
    else if (opt.isBoolean()) info.boolean.add(long);
    else info.valued.add(long);
  }
  return info;
}

/**
 * Rewrites `args` for `cmd`. `origins`, when given, maps each produced `--flag` back to the token the
 * user typed, so usage errors can quote `bogus=1` rather than `--bogus`. With `knownKeysOnly`, only
 * `key=value` tokens whose key is one of the command's options are rewritten.
 */
export function rewriteKeyValueArgs(args: string[], cmd: Command, origins?: Map<string, string>, opts: { knownKeysOnly?: boolean } = {}): string[] {
  const info = flagInfo(cmd);
  const known = (key: string): boolean => info.valued.has(key) || info.boolean.has(key) || info.negatable.has(key);
  const out: string[] = [];
  for (let k = 0; k < args.length; k++) {
    const tok = args[k]!;
    if (tok.startsWith('--')) {
      const typed = tok.slice(2).split('=')[0]!;
      const name = resolveAlias(cmd.name(), typed);
      out.push(name === typed ? tok : `--${name}${tok.slice(2 + typed.length)}`);
      if (info.valued.has(name) && !tok.includes('=') && k + 1 < args.length) out.push(args[++k]!);
      continue;
    }
    const m = KEY_VALUE.exec(tok);
    // Where positionals may contain '=' (the profile group's paths), only a key the command has is one.
    if (opts.knownKeysOnly && (!m || !known(m[1]!.replace(/_/g, '-')))) {
      out.push(tok);
      continue;
    }
    if (!m) {
      const bare = resolveAlias(cmd.name(), tok).replace(/_/g, '-');
      // `conf` alone would become a source named 'conf'; unless such a file exists, it is a key without its value.
      if (info.valued.has(bare) && !existsSync(tok)) {
        throw new LibreYOLOError('config_type_error', `${tok} needs a value: use ${tok}=<value>. Run 'libreyolo ${cmd.name()} --help' for what it takes.`);
      }
      out.push(info.boolean.has(bare) || info.negatable.has(bare) ? `--${bare}` : tok);
      continue;
    }
    const key = resolveAlias(cmd.name(), m[1]!).replace(/_/g, '-');
    origins?.set(`--${key}`, tok);
    const value = m[2]!;
    const isBool = info.boolean.has(key) || info.negatable.has(key);
    if (isBool && /^(true|1)$/i.test(value)) out.push(`--${key}`);
    else if (isBool && /^(false|0)$/i.test(value)) {
      if (info.negatable.has(key)) out.push(`--no-${key}`);
    } else if (isBool) {
      // `--save yes` would make 'yes' a positional (the source); refused as the library refuses save: 'yes'.
      throw optionTypeError(key.replace(/-/g, '_'), 'true or false', value);
    } else out.push(`--${key}`, value);
  }
  return out;
}
