/**
 * A command's action whose module is imported only when the command runs: `--help`, `--version` and
 * usage errors then load commander and the option tables, not ONNX Runtime, sharp or the model code
 * (the CLI's start-up is most of a short command's time).
 */
export function lazyAction<A extends unknown[]>(load: () => Promise<(...args: A) => Promise<void>>): (...args: A) => Promise<void> {
  return async (...args) => (await load())(...args);
}
