/**
 * How the user started the CLI, for the commands our messages suggest: `npx libreyolo` when npm's
 * exec ran it (a clone or a project without the package on PATH), else `libreyolo`.
 */
export function cliInvocation(env: NodeJS.ProcessEnv = process.env): string {
  return env.npm_command === 'exec' ? 'npx libreyolo' : 'libreyolo';
}
