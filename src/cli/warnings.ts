/**
 * How the CLI shows warnings. The library reports through process.emitWarning (a library's Node
 * convention); on a command line Node's banner, `(node:PID) [LIBREYOLO] Warning: ...` followed by
 * `(Use node --trace-warnings ...)`, points a user at Node internals, so the command prints
 * `Warning: <message>` as its own notices do. LIBREYOLO_DEBUG adds where the warning came from.
 */
export function printWarningsPlainly(): void {
  process.removeAllListeners('warning'); // Node's default printer
  process.on('warning', (w: Error) => {
    // Node's own kinds (DeprecationWarning, ExperimentalWarning) keep their name.
    const where = process.env.LIBREYOLO_DEBUG && w.stack ? `${w.stack}\n` : '';
    process.stderr.write(`${w.name}: ${w.message}\n${where}`);
  });
}
