/**
 * The analysis window: which part of a trace counts, and how many steps it holds. Two cold steps are
 * skipped and at most six are analysed (markers 2..7), so a long profile is summarised from
 * steady-state steps without reading every event.
 */
import type { TraceEvent } from './schema.ts';

export interface StepWindow {
  /** Window start (µs, inclusive) or null for the whole trace. */
  start: number | null;
  /** Window end (µs, exclusive) or null. */
  end: number | null;
  steps: number;
}

/** Steps in [start, end): distinct `#N` numbers, else clusters of marker starts more than 1 µs apart. */
export function countStepsInWindow(markers: readonly TraceEvent[], start: number | null, end: number | null): number {
  if (start === null || end === null) return 1;
  const inside = markers.filter((m) => start <= (m.ts ?? 0) && (m.ts ?? 0) < end);
  if (!inside.length) return 1;
  const nums = new Set<string>();
  for (const m of inside) {
    const hit = /#(\d+)/.exec(String(m.name ?? ''));
    if (hit) nums.add(hit[1]!);
  }
  if (nums.size) return Math.max(nums.size, 1);
  const starts = inside.map((m) => m.ts ?? 0).sort((a, b) => a - b);
  let clusters = 1;
  for (let i = 1; i < starts.length; i++) if (starts[i]! - starts[i - 1]! > 1.0) clusters++;
  return Math.max(clusters, 1);
}

/** `markers` sorted by start. */
export function pickWindow(markers: readonly TraceEvent[]): StepWindow {
  let start: number;
  let end: number;
  if (markers.length >= 4) {
    start = markers[2]!.ts ?? 0;
    end = markers[Math.min(markers.length - 1, 8)]!.ts ?? 0;
  } else if (markers.length >= 1) {
    const last = markers[markers.length - 1]!;
    start = markers[0]!.ts ?? 0;
    end = (last.ts ?? 0) + (last.dur || 0);
  } else {
    return { start: null, end: null, steps: 1 };
  }
  if (end <= start) end = start + 1.0;
  return { start, end, steps: countStepsInWindow(markers, start, end) };
}
