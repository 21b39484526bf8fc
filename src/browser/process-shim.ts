/**
 * The browser bundle's `process` (esbuild injects it where core modules read one): no environment
 * variables, `/` as the working directory, warnings on the console. Nothing else of Node's process exists here.
 */
export const process = {
  env: {} as Record<string, string | undefined>,
  cwd: (): string => '/',
  emitWarning: (message: string): void => console.warn(`libreyolo: ${message}`),
};
