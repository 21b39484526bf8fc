/**
 * The original's short CLI spellings: per command, the name users type -> the option it sets
 * (`train mosaic=0.5` is `mosaic_prob=0.5`). Applied where `key=value` and `--flag` tokens are
 * normalised (keyvalue.ts); `libreyolo cfg` shows the short names.
 */
export const CLI_ALIASES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  train: { mosaic: 'mosaic_prob', mixup: 'mixup_prob' },
};

/** The option `key` (snake_case or kebab-case) stands for in `command`, kebab-case; other keys as typed. */
export function resolveAlias(command: string, key: string): string {
  const target = CLI_ALIASES[command]?.[key.replace(/-/g, '_')];
  return target === undefined ? key : target.replace(/_/g, '-');
}

/** The short name of `field` in `command`, else the field itself (for `cfg`). */
export function aliasOf(command: string, field: string): string {
  const entry = Object.entries(CLI_ALIASES[command] ?? {}).find(([, f]) => f === field);
  return entry ? entry[0] : field;
}
