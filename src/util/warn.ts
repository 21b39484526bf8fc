/** Where non-fatal messages go: every layer takes a `Warn`, the default is a process warning. */
export type Warn = (message: string) => void;

export const defaultWarn: Warn = (m) => process.emitWarning(m, { code: 'LIBREYOLO' });
