/**
 * Which sources are videos. Files: the original's rule, the last suffix (lower-cased) from its list,
 * without opening anything (so `.gif` passed directly is a video, inside a folder an image). Live
 * sources are ours: stream URLs ffmpeg opens and V4L2 capture devices.
 */
import { extname } from 'node:path';

export const VIDEO_SUFFIXES: ReadonlySet<string> = new Set(['.asf', '.avi', '.gif', '.m4v', '.mkv', '.mov', '.mp4', '.mpeg', '.mpg', '.ts', '.wmv', '.webm']);

const LIVE_SCHEMES = /^(rtsp|rtsps|rtmp|rtmps|tcp|udp|srt):\/\//i;

function urlPath(s: string): string | null {
  try { return new URL(s).pathname; } catch { return null; }
}

/** A path or URL whose last suffix is a video suffix (`CLIP.MP4`, `http://host/a.mp4`). */
export function isVideoFile(source: unknown): source is string {
  if (typeof source !== 'string' && !(source instanceof URL)) return false;
  const s = String(source);
  const path = /^[a-z][a-z0-9+.-]*:\/\//i.test(s) ? urlPath(s) ?? s : s;
  return VIDEO_SUFFIXES.has(extname(path).toLowerCase());
}

/** A stream that has no end of its own: rtsp/rtmp/tcp/udp/srt URLs, http(s) HLS playlists (.m3u8), /dev/video<N>. */
export function isLiveSource(source: unknown): source is string {
  if (typeof source !== 'string' && !(source instanceof URL)) return false;
  const s = String(source);
  if (LIVE_SCHEMES.test(s)) return true;
  if (/^https?:\/\//i.test(s)) return extname(urlPath(s) ?? '').toLowerCase() === '.m3u8';
  return /^\/dev\/video\d+$/.test(s);
}

/** Either kind: what predict and track read frame by frame. */
export function isVideoSource(source: unknown): source is string {
  return isLiveSource(source) || isVideoFile(source);
}
