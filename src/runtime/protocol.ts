/** Messages between the main thread and a session worker (tensors travel as transferable buffers). */
import type { DType } from '../graph/tensor.ts';

/** Omit over each member of a union (a request without its id). */
export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export interface WireTensor {
  dtype: DType;
  dims: number[];
  buffer: ArrayBuffer;
  byteOffset: number;
  length: number;
}

export interface SessionConfig {
  executionProviders: Array<string | { name: string; deviceId?: number }>;
  intraOpNumThreads: number;
  graphOptimizationLevel: 'disabled' | 'basic' | 'extended' | 'all';
  /** Let idle intra-op threads spin (lower latency when nothing else needs the cores). */
  allowSpinning?: boolean;
  /** When set, ORT profiling is on and its file goes under this prefix. */
  profileFilePrefix?: string;
  /** ORT log level for this session (kernel probes are quiet: 3 = errors only). */
  logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
  /**
   * ORT's memory pattern (default on): after the first run it allocates the planned layout of every
   * intermediate as one block. A training step turns it off: that block comes on top of the arena
   * the first run filled, which the arena keeps, so each extra image costs its activations twice
   * (yolo9t 320: 188 vs 93 MiB per image, docs/training-performance.md).
   */
  memPattern?: boolean;
  /** ORT's CPU memory arena (default on); off, each tensor is its own malloc and goes back when freed. */
  cpuArena?: boolean;
  /** Node only: where ORT saves the graph as it optimised it (optimized-model-cache.ts). */
  optimizedModelFilePath?: string;
  /** Session config entries (`ep.webgpuexecutionprovider.enableGraphCapture` -> `1`). */
  configEntries?: Record<string, string>;
}

export type Request =
  | { id: number; kind: 'create'; key: string; model: Uint8Array | string; config: SessionConfig }
  | {
    id: number; kind: 'run'; key: string; feeds: Record<string, WireTensor>;
    /**
     * Feeds lent for this run (a train step's weights): their buffers were transferred, not copied,
     * and go back in the answer's `lent`, whether the run succeeded or failed.
     */
    lend?: string[];
  }
  | { id: number; kind: 'endProfiling'; key: string }
  | { id: number; kind: 'release'; key: string };

export interface SessionInfo {
  inputNames: string[];
  outputNames: string[];
  inputTypes: Record<string, string>;
  /** ORT profiler start, in epoch ms (for aligning its relative timestamps with host spans). */
  profileStartEpochMs?: number;
}

export type Response =
  | {
    id: number; ok: true; info?: SessionInfo; outputs?: Record<string, WireTensor>; runMs?: number; startEpochMs?: number;
    /** endProfiling: ORT's profile events when the worker has them in hand (onnxruntime-web prints them; Node's ORT writes a file). */
    events?: unknown[];
    /** run: the feeds it was lent, handed back (transferred). */
    lent?: Record<string, WireTensor>;
  }
  | { id: number; ok: false; error: string; lent?: Record<string, WireTensor> };
