/**
 * `libreyolo cfg`: the defaults of train, val and predict as the CLI spells them, and each family's
 * training overrides. Read from the commands and TRAIN_DEFAULTS themselves, so they cannot drift.
 */
import { Command, type Option } from 'commander';
import { stringify } from 'yaml';
import { listFamilies } from '../../models/index.ts';
import { TRAIN_DEFAULTS } from '../../train/config.ts';
import { aliasOf } from '../aliases.ts';
import { printResult, withOutputFlags, type OutputFlags } from '../output.ts';
import { PREDICT_OPTIONS } from '../../predict/options.ts';
import { predictCommand } from './predict.ts';
import { valCommand } from './val.ts';

/** Not defaults of a run: where it runs, what it reads, how it prints. */
const NOT_DEFAULTS = new Set(['device', 'data', 'data_dir', 'model', 'source', 'json', 'quiet', 'cfg', 'output_path']);

function trainDefaults(overrides: Readonly<Record<string, unknown>> = TRAIN_DEFAULTS): Record<string, unknown> {
  return Object.fromEntries(Object.entries(overrides).filter(([k]) => !NOT_DEFAULTS.has(k)).map(([k, v]) => [aliasOf('train', k), v]));
}

/**
 * A command's valued and boolean options with their defaults (null when it has none); flags
 * generated from an option table take the table's default (the library applies it, not commander).
 */
function commandDefaults(cmd: Command, table: Readonly<Record<string, { default?: unknown }>> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const opt of cmd.options as readonly Option[]) {
    const name = opt.long?.replace(/^--/, '').replace(/-/g, '_');
    if (!name || opt.negate || opt.hidden || NOT_DEFAULTS.has(name)) continue;
    // Options documented as refused or accepted for compatibility only have no default to show.
    if (/^(not supported|accepted for compatibility)/.test(opt.description)) continue;
    out[aliasOf(cmd.name(), name)] = opt.defaultValue ?? table[name]?.default ?? null;
  }
  return out;
}

export function cfgReport(): Record<string, unknown> {
  return {
    train_defaults: trainDefaults(),
    val_defaults: commandDefaults(valCommand()),
    predict_defaults: commandDefaults(predictCommand(), PREDICT_OPTIONS),
    family_overrides: Object.fromEntries(listFamilies().filter((f) => f.train).map((f) => [f.name, trainDefaults(f.train!.defaults)])),
  };
}

export function cfgCommand(): Command {
  return withOutputFlags(new Command('cfg').description('Print the train, val and predict defaults and the per-family training overrides.'))
    .action((flags: OutputFlags) => {
      const report = cfgReport();
      printResult(report, flags, () => stringify(report, { collectionStyle: 'block', lineWidth: 0 }));
    });
}
