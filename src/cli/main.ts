/** The `libreyolo` command: wiring only (each command lives in commands/). */
import { describeFamilies } from '../models/index.ts';
import { Command, CommanderError } from 'commander';
import { LibreYOLOError, type ErrorCode } from '../errors.ts';
import { VERSION } from '../version.ts';
import { cfgCommand } from './commands/cfg.ts';
import { checksCommand } from './commands/checks.ts';
import { dataCommand } from './commands/data.ts';
import { doctorCommand } from './commands/doctor.ts';
import { exportCommand } from './commands/export.ts';
import { formatsCommand } from './commands/formats.ts';
import { infoCommand } from './commands/info.ts';
import { metadataCommand } from './commands/metadata.ts';
import { modelsCommand } from './commands/models.ts';
import { predictCommand } from './commands/predict.ts';
import { profileCommand } from './commands/profile.ts';
import { quantizeCommand } from './commands/quantize.ts';
import { valCommand } from './commands/val.ts';
import { trackCommand } from './commands/track.ts';
import { trainCommand } from './commands/train.ts';
import { uiCommand } from './commands/ui.ts';
import { versionCommand } from './commands/version.ts';
import { cliInvocation } from './invocation.ts';
import { rewriteKeyValueArgs } from './keyvalue.ts';
import { reportError } from './report.ts';

export function buildProgram(): Command {
  const program = new Command('libreyolo')
    .description('YOLO object detection for Node.js on ONNX Runtime')
    .version(VERSION, '--version')
    .showSuggestionAfterError(true)
    .addHelpText('after', `\nModel families: ${describeFamilies()}.`);
  for (const cmd of [predictCommand(), exportCommand(), dataCommand(), profileCommand(), quantizeCommand(), valCommand(), trainCommand(), doctorCommand(), trackCommand()]) program.addCommand(cmd);
  // The environment and model-description commands (the original's special commands).
  for (const cmd of [versionCommand(), checksCommand(), modelsCommand(), formatsCommand(), cfgCommand(), infoCommand(), metadataCommand(), uiCommand()]) program.addCommand(cmd);
  return program;
}

/**
 * Applies exitOverride everywhere so usage errors come back as exceptions; main() prints them itself
 * (one line in the user's own spelling, or a JSON error) and exits 2.
 */
function overrideExits(cmd: Command): void {
  cmd.exitOverride();
  cmd.configureOutput({ writeErr: (s) => process.stderr.write(s), outputError: () => undefined });
  for (const sub of cmd.commands) overrideExits(sub);
}

const USAGE_CODES: Record<string, ErrorCode> = {
  'commander.unknownOption': 'config_unknown_key',
  'commander.unknownCommand': 'config_unknown_key',
  'commander.excessArguments': 'config_unknown_key',
  'commander.missingArgument': 'config_required_key',
  'commander.missingMandatoryOptionValue': 'config_required_key',
  'commander.optionMissingArgument': 'config_required_key',
};

/** A commander usage error as our error: the user's spelling (`bogus=1`), and what to do. */
function usageError(err: CommanderError, command: Command, origins: Map<string, string>): LibreYOLOError {
  let message = err.message.replace(/^error: /, '');
  // commander appends "\n(Did you mean --conf?)" for near misses; answer in the user's style.
  let guess = /\s*\(Did you mean ([^?]+)\?\)\s*$/.exec(message)?.[1];
  message = message.replace(/\s*\(Did you mean [^)]*\)\s*$/, '');
  const flag = /'(--[^']+)'/.exec(message)?.[1];
  const typed = flag ? origins.get(flag) : undefined;
  if (flag && typed) {
    message = message.replace(`'${flag}'`, `'${typed.split('=')[0]}' (${typed})`);
    if (guess?.startsWith('--')) guess = guess.slice(2).replace(/-/g, '_');
  }
  const path: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) path.unshift(c.name());
  const advice = guess
    ? `Did you mean '${guess}'?`
    : `Run '${[cliInvocation(), ...path.slice(1)].join(' ')} --help' for valid ${err.code === 'commander.unknownCommand' ? 'commands' : 'options'}.`;
  return new LibreYOLOError(USAGE_CODES[err.code] ?? 'config_type_error', `${message.replace(/\.$/, '')}. ${advice}`, { suggestion: advice });
}

/** The deepest command named by the leading words of `args` (`data synth ...` -> synth) and its depth. */
function leafCommand(program: Command, args: string[]): { command: Command; depth: number } {
  let command = program;
  let depth = 0;
  for (;;) {
    const sub = command.commands.find((c) => c.name() === args[depth] || c.aliases().includes(args[depth] ?? ''));
    if (!sub) return { command, depth };
    command = sub;
    depth++;
  }
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  overrideExits(program);
  // `libreyolo detect predict ...` is the same as `libreyolo predict ...`.
  const args = argv[0] === 'detect' ? argv.slice(1) : [...argv];
  const { command, depth } = leafCommand(program, args);
  const origins = new Map<string, string>();
  let json = args.includes('--json') || args.some((a) => /^json=(true|1)$/i.test(a));
  // `libreyolo` or `libreyolo data` alone asked for the list of commands: on stdout (commander puts it on stderr), exit 0.
  if (args.length === depth && command.commands.length > 0) {
    command.outputHelp();
    return 0;
  }
  try {
    // The profile group's positionals may contain '=' (paths): there only its own keys are rewritten.
    const rewritten = depth > 0
      ? [...args.slice(0, depth), ...rewriteKeyValueArgs(args.slice(depth), command, origins, { knownKeysOnly: args[0] === 'profile' })]
      : args;
    json = rewritten.includes('--json');
    await program.parseAsync(rewritten, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return reportError(usageError(err, command, origins), json);
    }
    // The profile group keeps the original's messages and exit codes, on stderr even with --json.
    return reportError(err, json && args[0] !== 'profile');
  }
}
