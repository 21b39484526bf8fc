/** The `libreyolo` command: wiring only (each command lives in commands/). */
import { Command, CommanderError } from 'commander';
import { LibreYOLOError } from '../errors.ts';
import { VERSION } from '../version.ts';
import { dataCommand } from './commands/data.ts';
import { exportCommand } from './commands/export.ts';
import { predictCommand } from './commands/predict.ts';
import { rewriteKeyValueArgs } from './keyvalue.ts';
import { reportError } from './report.ts';

export function buildProgram(): Command {
  const program = new Command('libreyolo')
    .description('YOLO object detection for Node.js on ONNX Runtime')
    .version(VERSION, '--version')
    .showSuggestionAfterError(true);
  for (const cmd of [predictCommand(), exportCommand(), dataCommand()]) program.addCommand(cmd);
  return program;
}

/** Applies exitOverride everywhere so usage errors come back as exceptions we map to exit code 2. */
function overrideExits(cmd: Command): void {
  cmd.exitOverride();
  cmd.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  for (const sub of cmd.commands) overrideExits(sub);
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  overrideExits(program);
  // `libreyolo detect predict ...` is the same as `libreyolo predict ...`.
  const args = argv[0] === 'detect' ? argv.slice(1) : [...argv];
  const sub = program.commands.find((c) => c.name() === args[0]);
  const rewritten = sub ? [args[0]!, ...rewriteKeyValueArgs(args.slice(1), sub)] : args;
  const json = rewritten.includes('--json');
  try {
    await program.parseAsync(rewritten, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      if (json) return reportError(new LibreYOLOError(err.code === 'commander.unknownOption' ? 'config_unknown_key' : 'config_type_error', err.message.replace(/^error: /, '')), true);
      return 2; // commander already printed the usage error
    }
    return reportError(err, json);
  }
}
