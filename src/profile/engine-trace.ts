/**
 * What the Node recorder (recorder.ts) and the browser's trace (browser/profile.ts) share: the
 * engines whose sessions are profiled, the host record kept while measuring, turning ORT's profiling
 * on for every engine (undone if one refuses) and off again once. Where ORT's events end up, files
 * or messages from a worker, is each subclass's own.
 */
import type { SessionEngine } from '../runtime/engine.ts';
import { HostRecord } from './host-record.ts';

export abstract class EngineTrace {
  private done = false;

  protected constructor(protected readonly engines: readonly SessionEngine[], protected readonly host: HostRecord) {}

  /** Whether ORT reported device kernel events (not only node times); known once the events are read. */
  get sawDeviceKernels(): boolean {
    return this.host.sawDeviceKernels;
  }

  beginMeasurement(): void {
    this.host.beginMeasurement();
  }

  step<T>(index: number, fn: () => Promise<T>): Promise<T> {
    return this.host.step(index, fn);
  }

  /** Turns profiling on for engine k under `prefix(k)`; the sessions are recreated (profiled) on their next run. */
  protected async enable(prefix: (k: number) => string): Promise<void> {
    try {
      for (const [k, e] of this.engines.entries()) await e.setProfiling(prefix(k));
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** Turns profiling off (releasing the profiled sessions), then `cleanUp()`; safe to repeat. */
  async abort(): Promise<void> {
    this.host.stop();
    if (this.done) return;
    this.done = true;
    try {
      for (const e of this.engines) await e.setProfiling(undefined);
    } finally {
      await this.cleanUp();
    }
  }

  /** What a subclass removes after profiling is off (the Node recorder: ORT's files). */
  protected async cleanUp(): Promise<void> {}
}
