/** A check: a pure function of the snapshot and the thresholds, registered under a dotted id. */
import type { DoctorConfig } from '../config.ts';
import type { Finding } from '../findings.ts';
import type { DatasetSnapshot } from '../snapshot.ts';

export interface Check {
  id: string;
  /** Needs the image pass (skipped by --fast). */
  scan: boolean;
  run(snap: DatasetSnapshot, cfg: DoctorConfig): Finding[];
}

/** The class name of an id, or `class <id>`. */
export const className = (snap: DatasetSnapshot, id: number): string => snap.names.get(id) ?? `class ${id}`;

/** Instances per class id (ids truncated to integers), in first-seen order. */
export function classCounts(records: ReadonlyArray<{ boxes: Float32Array; n: number }>): Map<number, number> {
  const counts = new Map<number, number>();
  for (const r of records) {
    for (let i = 0; i < r.n; i++) {
      const c = Math.trunc(r.boxes[i * 5]!);
      counts.set(c, (counts.get(c) ?? 0) + 1);
    }
  }
  return counts;
}
