/**
 * Predict over a bare engine, without the model facade: what in-training validation needs (the
 * trainer builds an engine over its EMA weights and must not construct `LibreYOLOModel`, which
 * itself calls the trainer). Eager forwards only; no device moves, graph capture or quantize.
 */
import { resolveSources, type ImageSource } from '../data/sources.ts';
import type { ModelFamily } from '../models/registry.ts';
import type { SessionEngine } from '../runtime/engine.ts';
import type { Warn } from '../util/warn.ts';
import { resolvePredictOptions, type PredictOptions } from './options.ts';
import { runPredict } from './predictor.ts';
import type { Results } from './results.ts';

export interface EnginePredictorInit {
  family: ModelFamily;
  size: string;
  names: Record<number, string>;
  inputSize: [number, number];
  engine: SessionEngine;
  warn: Warn;
  /** The network's task (default detect): a segment network's results carry masks. */
  task?: string;
}

export class EnginePredictor {
  constructor(private readonly init: EnginePredictorInit) {}

  /** The task of the network it runs (`detect` unless given). */
  get task(): string {
    return this.init.task ?? 'detect';
  }

  async predict(source: ImageSource[], options: PredictOptions = {}): Promise<Results[]> {
    const { family, size, names, inputSize, engine, warn } = this.init;
    const opts = resolvePredictOptions(options as Record<string, unknown>, { names, imgszStride: family.imgszStride }, warn);
    const { items } = await resolveSources(source);
    const forward = (x: Parameters<SessionEngine['forward']>[0], o?: { transfer?: boolean }) => engine.forward(x, o);
    const ctx = {
      family, size, task: this.task, nc: Object.keys(names).length, names, inputSize, training: false,
      forward, eagerForward: forward, acceptsBatch: (b: number) => engine.acceptsBatch(b), warn,
    };
    const out: Results[] = [];
    for await (const r of runPredict(ctx, items, opts, true)) out.push(r);
    return out;
  }

  close(): Promise<void> {
    return this.init.engine.close();
  }
}
