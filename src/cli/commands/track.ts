/**
 * `libreyolo track source=clip.mp4 [save=true] [track_buffer=60 ...]`: ByteTrack over a video file or
 * live stream (ours; the original has no track command). Every TrackConfig key is an option,
 * generated from its defaults; keys the tracker does not know are dropped with the original's
 * warning, not refused, as `model.track()` does.
 */
import { Command, Option } from 'commander';
import { existsSync } from 'node:fs';
import { DEFAULT_MODEL } from '../../assets.ts';
import { LibreYOLOError } from '../../errors.ts';
import { LibreYOLO } from '../../load.ts';
import type { TrackOptions } from '../../predict/track-options.ts';
import { TRACK_DEFAULTS } from '../../track/config.ts';
import { modelLine } from '../model-line.ts';
import { parseClasses, parseImgsz, parseInteger, parseNumber } from '../values.ts';
import { runVideoCli } from '../video-run.ts';

const flagName = (key: string): string => key.replace(/_/g, '-');
const camel = (key: string): string => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function parseBool(name: string): (v: string) => boolean {
  return (v) => {
    if (/^(true|1)$/i.test(v)) return true;
    if (/^(false|0)$/i.test(v)) return false;
    throw new LibreYOLOError('config_type_error', `${name} must be true or false, got '${v}'`);
  };
}

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

export function trackCommand(): Command {
  const cmd = new Command('track')
    .description('Track objects across the frames of a video or live stream with ByteTrack (key=value or --flag style).')
    .option('--model <weights>', 'weights: a path, an exported .onnx, or a published name (the bundled shapes model by default)', DEFAULT_MODEL)
    .option('--source <source>', 'video file, or a live stream: rtsp://, rtmp://, tcp://, udp://, srt://, http(s) .m3u8, /dev/video<N>')
    .option('--iou <number>', 'NMS IoU threshold of the detector', parseNumber('iou'))
    .option('--imgsz <size>', 'detector input size: 640 or 480x640', parseImgsz)
    .option('--classes <ids>', 'track only these class ids: 0 or 0,2', parseClasses)
    .option('--max-det <n>', 'maximum detections per frame', parseInteger('max_det'))
    .option('--save', 'save the annotated video as runs/track/<stem>.mp4', false)
    .option('--no-save', 'do not save the annotated video')
    .option('--output-path <path>', 'file (.mp4, .avi, .mov, .mkv) or folder for the saved video')
    .option('--vid-stride <n>', 'keep every N-th frame', parseInteger('vid_stride'))
    .option('--stream-buffer <bool>', 'live streams: queue every frame (true) or keep only the newest (false, default)', parseBool('stream_buffer'))
    .option('--batch <n>', 'consecutive frames per forward pass', parseInteger('batch'))
    .option('--device <device>', 'cpu, 0 / cuda:0, or webgpu', 'cpu')
    .option('--threads <n>', 'ONNX Runtime threads (default: all cores)', parseInteger('threads'))
    .addOption(new Option('--json', 'print one JSON object (every frame, with track ids)').default(false));
  for (const [key, def] of Object.entries(TRACK_DEFAULTS)) {
    const parse: (v: string) => unknown = typeof def === 'boolean' ? parseBool(key) : parseNumber(key);
    cmd.option(`--${flagName(key)} <value>`, `TrackConfig ${key} (default ${String(def)})`, parse as (v: string) => string);
  }
  return cmd
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (flags: Record<string, unknown>, command: Command) => {
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
    });
}
