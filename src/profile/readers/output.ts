/** What a reader produces: the `--json` value and the text lines, both printed to stdout only. */
import { pyFixed } from '../pyfmt.ts';

export interface ReaderOutput {
  json: unknown;
  text: string;
  /** `get --json` prints compact JSON; everything else is indented by 2. */
  compact?: boolean;
}

/** The original's relative change suffix: ` (+28%)`, or nothing when `before` is falsy. */
export function pctChange(before: number | null | undefined, after: number | null | undefined): string {
  if (!before) return '';
  return ` (${pyFixed((((after ?? 0) - before) / before) * 100, 0, true)}%)`;
}

/** `x*100` as a whole percent (`15`), treating a missing value as 0. */
export const percent = (x: number | null | undefined): string => pyFixed((x ?? 0) * 100, 0);
