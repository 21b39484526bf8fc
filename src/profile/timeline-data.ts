/**
 * What `timeline.html` draws, curated from the analysis window as the original does:
 * the step markers and phase spans in full, the 1,500 longest host spans (>= 20 µs) and the
 * 2,500 longest ORT kernels (>= 2 µs), and the memory counter, in ms relative to the window's start,
 * each lane packed greedily into rows. It is an observer of the analysis' second pass, so a
 * million-event trace is curated while it streams by (two bounded heaps, never the event list).
 */
import type { EventKind, TraceObserver } from './analyze.ts';
import type { TraceEvent } from './schema.ts';

export const MAX_KERNELS = 2500;
export const MAX_HOST_OPS = 1500;
const MIN_KERNEL_US = 2;
const MIN_OP_US = 20;

export const LANES = ['steps', 'phases', 'host / JS', 'ORT kernels', 'memory'] as const;
export type Lane = 0 | 1 | 2 | 3;

/** One drawn span: lane, row in the lane, start and duration (ms), name, phase or category. */
export interface TimelineSpan {
  l: Lane;
  r: number;
  t: number;
  d: number;
  n: string;
  /** The phase (phase lane, kernels and ops), for the colour. */
  p: string;
}

export interface TimelineData {
  /** Window length (ms). */
  total_ms: number;
  spans: TimelineSpan[];
  /** Rows per lane (steps, phases, host, kernels). */
  lane_rows: number[];
  /** Memory samples: [t ms, MB]. */
  memory: Array<[number, number]>;
  /** What was left out by the caps. */
  dropped: { kernels: number; host_ops: number };
}

type Item = { ts: number; dur: number; name: string; phase: string };

/** A bounded min-heap by duration: keeps the `cap` longest items seen. */
class Longest {
  private readonly heap: Item[] = [];
  seen = 0;
  constructor(private readonly cap: number) {}

  add(item: Item): void {
    this.seen++;
    const h = this.heap;
    if (h.length < this.cap) {
      h.push(item);
      for (let i = h.length - 1; i > 0;) {
        const p = (i - 1) >> 1;
        if (h[p]!.dur <= h[i]!.dur) break;
        [h[p], h[i]] = [h[i]!, h[p]!];
        i = p;
      }
      return;
    }
    if (item.dur <= h[0]!.dur) return;
    h[0] = item;
    for (let i = 0; ;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < h.length && h[l]!.dur < h[m]!.dur) m = l;
      if (r < h.length && h[r]!.dur < h[m]!.dur) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
  }

  items(): Item[] {
    return [...this.heap];
  }
}

const rel = (ts: number, origin: number): number => Math.round((ts - origin) / 1000 * 1000) / 1000;
const ms4 = (us: number): number => Math.round(us / 1000 * 10000) / 10000;

export class TimelineCollector implements TraceObserver {
  private start: number | null = null;
  private end: number | null = null;
  private markers: Item[] = [];
  private readonly phases: Item[] = [];
  private readonly kernels = new Longest(MAX_KERNELS);
  private readonly ops = new Longest(MAX_HOST_OPS);
  private readonly memory: Array<[number, number]> = [];
  private first = Infinity;
  private last = -Infinity;

  window(start: number | null, end: number | null, markers: readonly TraceEvent[]): void {
    this.start = start;
    this.end = end;
    this.markers = markers
      .filter((m) => typeof m.ts === 'number' && (start === null || (start <= m.ts && m.ts < end!)))
      .map((m) => ({ ts: m.ts!, dur: m.dur || 0, name: String(m.name), phase: '' }));
  }

  event(e: TraceEvent, kind: EventKind, phase: string): void {
    const ts = e.ts!;
    const dur = e.dur || 0;
    this.first = Math.min(this.first, ts);
    this.last = Math.max(this.last, ts + dur);
    const name = String(e.name ?? '');
    if (kind === 'phase_cpu') this.phases.push({ ts, dur, name: phase, phase });
    else if (kind === 'kernel' && dur >= MIN_KERNEL_US) this.kernels.add({ ts, dur, name: e.cat === 'Node' ? nodeLabel(e) : name, phase });
    else if (kind === 'op' && dur >= MIN_OP_US) this.ops.add({ ts, dur, name, phase });
  }

  counter(e: TraceEvent): void {
    const mb = Number(e.args?.rss_mb);
    if (typeof e.ts === 'number' && Number.isFinite(mb)) this.memory.push([e.ts, mb]);
  }

  result(): TimelineData {
    const origin = this.start ?? (Number.isFinite(this.first) ? this.first : 0);
    const endUs = this.end ?? (Number.isFinite(this.last) ? this.last : origin);
    const spans: TimelineSpan[] = [];
    const laneRows = [0, 0, 0, 0];
    const lanes: Array<[Lane, Item[]]> = [[0, this.markers], [1, this.phases], [2, this.ops.items()], [3, this.kernels.items()]];
    for (const [lane, items] of lanes) {
      // Greedy packing: each span goes into the first row whose last span has ended.
      const rows: number[] = [];
      items.sort((a, b) => a.ts - b.ts);
      for (const it of items) {
        const t = rel(it.ts, origin);
        const d = ms4(it.dur);
        const endT = t + Math.max(d, 0.001);
        let r = rows.findIndex((e) => e <= t);
        if (r < 0) {
          r = rows.length;
          rows.push(endT);
        } else rows[r] = endT;
        spans.push({ l: lane, r, t, d, n: it.name, p: it.phase });
      }
      laneRows[lane] = rows.length;
    }
    const memory = this.memory
      .filter(([ts]) => this.start === null || (this.start <= ts && ts < this.end! + 1))
      .map(([ts, mb]): [number, number] => [rel(ts, origin), mb]);
    return {
      total_ms: Math.max(rel(endUs, origin), 0.001), spans, lane_rows: laneRows, memory,
      dropped: { kernels: this.kernels.seen - Math.min(this.kernels.seen, MAX_KERNELS), host_ops: this.ops.seen - Math.min(this.ops.seen, MAX_HOST_OPS) },
    };
  }
}

/** An ORT node's label: its op type and node name (`Conv /model.3/conv`). */
function nodeLabel(e: TraceEvent): string {
  const op = e.args?.op_name;
  const name = String(e.name ?? '');
  return typeof op === 'string' && op ? `${op} ${name}` : name;
}
