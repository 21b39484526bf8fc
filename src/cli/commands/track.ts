/**
 * `libreyolo track source=clip.mp4 [save=true] [track_buffer=60 ...]`: ByteTrack over a video file or
 * live stream (ours; the original has no track command). Every TrackConfig key is an option,
 * generated from its defaults; keys the tracker does not know are dropped with the original's
 * warning, not refused, as `model.track()` does.
 */
import { Command, Option } from 'commander';
import { DEFAULT_MODEL } from '../../assets.ts';
import { LibreYOLOError } from '../../errors.ts';
import { TRACK_DEFAULTS } from '../../track/config.ts';
import { lazyAction } from '../lazy-action.ts';
import { parseClasses, parseImgsz, parseInteger, parseNumber } from '../values.ts';

const flagName = (key: string): string => key.replace(/_/g, '-');

function parseBool(name: string): (v: string) => boolean {
  return (v) => {
    if (/^(true|1)$/i.test(v)) return true;
    if (/^(false|0)$/i.test(v)) return false;
    throw new LibreYOLOError('config_type_error', `${name} must be true or false, got '${v}'`);
  };
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
    .action(lazyAction(async () => (await import('../actions/track.ts')).runTrack));
}
