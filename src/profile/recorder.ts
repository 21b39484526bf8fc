/**
 * The Node recorder of an inference profile: it turns ORT profiling on for the engines' sessions (each
 * with a unique file prefix in a private temp dir), keeps the host record (host-record.ts: spans,
 * step markers, memory samples) while measuring, then merges it all into one Chrome trace and removes ORT's files.
 * It knows nothing about inference or training: a loop calls beginMeasurement(), wraps each step in
 * step(), marks phases with host spans (`span(name, phase, fn)`), and calls finish(path), which
 * streams ORT's events from its files into the trace file (never holding them).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionEngine } from '../runtime/engine.ts';
import { writeChromeTrace } from './chrome-trace.ts';
import { EngineTrace } from './engine-trace.ts';
import { HostRecord } from './host-record.ts';
import { ORT_PID } from './host-trace.ts';
import { ortClockOffset } from './ort-events.ts';
import { eachOrtEvent, readOrtSessions } from './ort-trace.ts';
import type { TraceEvent } from './schema.ts';
/** ORT's files go to `<tmpdir>/libreyolo-profile-<pid>-XXXXXX/`, removed when the recorder finishes. */
export const ORT_DIR_PREFIX = 'libreyolo-profile-';

export class ProfileRecorder extends EngineTrace {
  private constructor(engines: readonly SessionEngine[], private readonly ortDir: string) {
    super(engines, new HostRecord(() => process.memoryUsage.rss() / 1e6));
  }

  /** Turns ORT profiling on, each engine's files under a unique prefix in a private temp dir. */
  static async start(engines: readonly SessionEngine[]): Promise<ProfileRecorder> {
    const dir = await mkdtemp(join(tmpdir(), `${ORT_DIR_PREFIX}${process.pid}-`));
    const rec = new ProfileRecorder(engines, dir);
    await rec.enable((k) => join(dir, `e${k}`));
    return rec;
  }

  /** Flushes ORT's profiles, writes them merged with the host record to `path`, and cleans up. */
  async finish(path: string): Promise<void> {
    this.host.stop();
    try {
      const profiled = [];
      for (const e of this.engines) {
        for (const s of await e.profiledSessions()) profiled.push(s);
        await e.endProfiling();
      }
      const files = await readOrtSessions(profiled);
      const workerRuns = this.host.workerRuns();
      const sessions = files.map((f, k) => {
        const pid = ORT_PID + k;
        const offset = ortClockOffset(f, workerRuns);
        return {
          key: f.key, pid,
          each: (emit: (e: TraceEvent) => void | Promise<void>) => eachOrtEvent(f.file, (e) => {
            const kept = this.host.ortEvent(e, offset, pid);
            return kept ? emit(kept) : undefined;
          }),
        };
      });
      await writeChromeTrace(path, { spans: this.host.spans(), steps: this.host.steps, rss: this.host.rss, sessions });
    } finally {
      await this.abort();
    }
  }

  protected override async cleanUp(): Promise<void> {
    await rm(this.ortDir, { recursive: true, force: true });
  }
}
