/**
 * `profile infer` in a page: `profileInference(model, images, options)` runs the Node build's
 * inference profile loop (profile/inference-loop.ts: warmup, timed predict calls, a traced window)
 * and returns the same profile.json object, analysed by the same code (profile/analyze.ts) and
 * checked against the same schema (profile/validate.ts). The trace is held in memory: the host spans
 * and step markers always, and onnxruntime-web's own profiler events, which the session worker
 * collects from what ORT prints (browser/session-worker.ts). Nothing is written; a page has no
 * resident set to read, so `peak_rss_mb` is left out (as for a trace without memory samples).
 */
import { analyzeTrace } from '../profile/analyze.ts';
import { concludeProfile } from '../profile/conclude.ts';
import { EngineTrace } from '../profile/engine-trace.ts';
import { HostRecord } from '../profile/host-record.ts';
import { hostTraceEvents, ORT_PID, sessionProcessEvents, sessionThreadEvents } from '../profile/host-trace.ts';
import { runInferenceProfile, type InferenceProfileOptions, type InferenceTarget, type InferenceTrace, type ProfilePlatform } from '../profile/inference-loop.ts';
import { modelRunOf, ortClockOffset } from '../profile/ort-events.ts';
import type { ProfileAnalysis, TraceEvent } from '../profile/schema.ts';
import { validateProfile } from '../profile/validate.ts';
import type { SessionEngine } from '../runtime/engine.ts';
import type { BrowserImageSource } from './images.ts';
import type { BrowserModel } from './model.ts';

/** The prefix only turns profiling on: onnxruntime-web writes no file (its events come back from the worker). */
const PROFILE_FLAG = 'libreyolo-web';

class BrowserTrace extends EngineTrace implements InferenceTrace {
  private constructor(engines: readonly SessionEngine[]) {
    super(engines, new HostRecord(() => null));
  }

  static async start(engines: readonly SessionEngine[]): Promise<BrowserTrace> {
    const t = new BrowserTrace(engines);
    await t.enable(() => PROFILE_FLAG);
    return t;
  }

  /** Ends ORT's profiling and merges its events (on the host clock) with the host record: the trace, in memory. */
  async events(): Promise<TraceEvent[]> {
    this.host.stop();
    const sessions: Array<{ key: string; startEpochMs: number; events: TraceEvent[] }> = [];
    for (const e of this.engines) {
      const starts = new Map((await e.profiledSessions()).map((s) => [s.key, s.startEpochMs]));
      for (const [key, events] of await e.endProfiling()) sessions.push({ key, startEpochMs: starts.get(key) ?? 0, events: events as TraceEvent[] });
    }
    const out = hostTraceEvents({ spans: this.host.spans(), steps: this.host.steps, rss: this.host.rss }, 'page');
    const workerRuns = this.host.workerRuns();
    sessions.forEach((s, k) => {
      const pid = ORT_PID + k;
      const runs = s.events.map(modelRunOf).filter((r): r is TraceEvent => r !== null);
      const offset = ortClockOffset({ startEpochMs: s.startEpochMs, runs }, workerRuns);
      out.push(...sessionProcessEvents({ key: s.key, pid }));
      const tids = new Set<number | string>();
      for (const e of s.events) {
        const kept = this.host.ortEvent(e, offset, pid);
        if (!kept) continue;
        out.push(kept);
        if (kept.tid !== undefined) tids.add(kept.tid);
      }
      out.push(...sessionThreadEvents({ pid }, tids));
    });
    return out;
  }
}

const WEB: ProfilePlatform<BrowserTrace> = {
  startTrace: (engines) => BrowserTrace.start(engines),
  rssBytes: () => null,
  finalize: async ({ trace, summary, fallback, verdict }) => {
    const a = trace ? analyzeTrace(await trace.events(), { summary }) : fallback(summary);
    return validateProfile(concludeProfile(a, summary, verdict));
  },
};

/** `profile infer`'s options (its defaults: 20 warmup calls, 100 timed, batch 1 at 640, the trace on); nothing is saved in a page. */
export type BrowserProfileOptions = Partial<Omit<InferenceProfileOptions, 'saveDir'>>;

export function profileInference(model: BrowserModel, images: BrowserImageSource | BrowserImageSource[], options: BrowserProfileOptions = {}): Promise<ProfileAnalysis> {
  const list = Array.isArray(images) ? images : [images];
  const target = {
    engine: model.engine, device: model.engine.device,
    predict: (source: BrowserImageSource | BrowserImageSource[], o: object) => model.predict(source as BrowserImageSource[], o),
  } as InferenceTarget<BrowserImageSource>;
  return runInferenceProfile(WEB, target, list, {
    warmup: 20, runs: 100, batch: 1, imgsz: 640, conf: 0.25, iou: 0.45, maxDet: 300, trace: true, ...options, saveDir: null,
    notes: [...(options.notes ?? []), 'browser: onnxruntime-web in a Web Worker; a page has no resident set reading, so peak_rss_mb is left out'],
  });
}
