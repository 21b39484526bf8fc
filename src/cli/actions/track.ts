/** What `libreyolo track` does once its flags are parsed (imported only when it runs). */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { LibreYOLOError } from '../../errors.ts';
import { LibreYOLO } from '../../load.ts';
import type { TrackOptions } from '../../predict/track-options.ts';
import { TRACK_DEFAULTS } from '../../track/config.ts';
import { modelLine } from '../model-line.ts';
import { runVideoCli } from '../video-run.ts';

const camel = (key: string): string => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** Tokens commander did not know (`--conf 0.3`, `--persist`) as tracker keys for the tracker to warn about. */
function unknownKeys(tokens: string[]): { keys: Record<string, unknown>; positional: string[] } {
  const keys: Record<string, unknown> = {};
  const positional: string[] = [];
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (!t.startsWith('--')) {
      // A bare word after the source (`persist`) is a flag-style key, as `save` is for known options.
      if (positional.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(t) && !existsSync(t)) keys[t] = true;
      else positional.push(t);
      continue;
    }
    const [name, inline] = t.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    const next = tokens[k + 1];
    keys[name.replace(/^no-/, '').replace(/-/g, '_')] = inline ?? (next !== undefined && !next.startsWith('--') ? tokens[++k] : true);
  }
  return { keys, positional };
}

export async function runTrack(flags: Record<string, unknown>, command: Command): Promise<void> {
  const { keys: unknown, positional } = unknownKeys([...(flags.source !== undefined ? [String(flags.source)] : []), ...command.args]);
  if (flags.source !== undefined) positional.shift();
  if (positional.length > 1 || (positional.length === 1 && flags.source !== undefined && flags.source !== positional[0])) {
    throw new LibreYOLOError('config_conflict', `More than one source given (${[...positional, ...(flags.source ? [String(flags.source)] : [])].join(', ')}). Pass one video or stream.`);
  }
  const source = (flags.source as string | undefined) ?? positional[0];
  if (source === undefined) throw new LibreYOLOError('config_required_key', "track needs a source: libreyolo track source=clip.mp4 (a video file or a live stream URL).");
  const options: Record<string, unknown> = { ...unknown };
  for (const key of ['iou', 'imgsz', 'classes', 'max_det', 'save', 'output_path', 'vid_stride', 'stream_buffer', 'batch', ...Object.keys(TRACK_DEFAULTS)]) {
    const v = flags[camel(key)];
    if (v !== undefined) options[key] = v;
  }
  const model = await LibreYOLO(String(flags.model), { device: String(flags.device), ...(flags.threads !== undefined ? { threads: flags.threads as number } : {}) });
  try {
    await runVideoCli(model.track(source, options as TrackOptions), {
      json: flags.json === true, source, stride: (options.vid_stride as number | undefined) ?? 1,
      header: modelLine(model, options.imgsz as number | [number, number] | undefined),
      jsonHead: { schema_version: 1, source, model: flags.model, model_family: model.family.name, model_size: model.size, device: model.device.id },
    });
  } finally {
    await model.close();
  }
}
