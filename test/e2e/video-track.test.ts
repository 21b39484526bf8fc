/**
 * `libreyolo track` end to end on videos the test draws and encodes itself: three shapes moving in
 * lanes for 200 frames, one hidden for 13 frames, keep one track id each (the hidden one is re-found
 * by its Kalman prediction, as the original's rules say for a gap shorter than track_buffer), the
 * saved .mp4 decodes back with the right frame count, size and fps; and a live stream served by a
 * local ffmpeg on 127.0.0.1 is tracked with stream_buffer false and true and ends cleanly.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SynthObject } from '../../src/data/synth.ts';
import { closedPort, listening, runCli } from '../helpers/cli.ts';
import { lane, makeShapesVideo, probeVideoFile, type ShapesVideo } from '../helpers/shapes-video.ts';

interface TrackJson {
  frames: number;
  output_path?: string;
  results: Array<{ frame_idx: number; path: string | null; detections: Array<{ bbox_xyxy: number[]; track_id: number; class: string }> }>;
}

function iou(a: number[], b: SynthObject): number {
  const iw = Math.max(0, Math.min(a[2]!, b.x2) - Math.max(a[0]!, b.x1));
  const ih = Math.max(0, Math.min(a[3]!, b.y2) - Math.max(a[1]!, b.y1));
  const inter = iw * ih;
  return inter / ((a[2]! - a[0]!) * (a[3]! - a[1]!) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter);
}

const HIDDEN: [number, number] = [110, 122];

describe('libreyolo track on a video', () => {
  let dir: string;
  let video: ShapesVideo;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'libreyolo-track-'));
    video = await makeShapesVideo(join(dir, 'lanes.mp4'), {
      width: 256, height: 192, frames: 200, fps: 25,
      shapes: [
        { cls: 0, size: 50, at: lane(4, 196, 4, 3) },
        { cls: 3, size: 50, at: lane(4, 196, 68, 2, 60) },
        { cls: 1, size: 50, at: lane(4, 196, 134, 2.5), hidden: [HIDDEN] },
      ],
    });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps one id per shape across 200 frames (also across a 13-frame gap) and saves the annotated .mp4', async () => {
    const run = await runCli(['track', `source=${video.path}`, 'save=true', 'conf=0.3', '--json'], dir, {}, { timeoutMs: 600_000 });
    assert.equal(run.code, 0, run.stderr);
    // The original's TrackConfig does not know conf: dropped with its warning, not refused.
    assert.match(run.stderr, /Warning: Unknown tracking config keys \(ignored\): \['conf'\]/);
    const out = JSON.parse(run.stdout) as TrackJson;
    assert.equal(out.frames, 200);
    assert.deepEqual(out.results.map((r) => r.frame_idx), Array.from({ length: 200 }, (_, k) => k));
    const ids: Array<Set<number>> = [new Set(), new Set(), new Set()];
    const found = [0, 0, 0];
    out.results.forEach((r, t) => {
      assert.equal(r.path, null); // as the original: tracked results carry no path
      video.truth[t]!.forEach((box, k) => {
        if (box === null) return;
        const match = r.detections.find((d) => iou(d.bbox_xyxy, box) >= 0.5);
        if (!match) return;
        found[k]!++;
        ids[k]!.add(match.track_id);
      });
    });
    const visible = [200, 200, 200 - (HIDDEN[1] - HIDDEN[0] + 1)];
    found.forEach((n, k) => assert.ok(n >= 0.95 * visible[k]!, `shape ${k} tracked on ${n} of ${visible[k]} frames`));
    assert.deepEqual(ids.map((s) => s.size), [1, 1, 1], `ids per shape: ${ids.map((s) => [...s].join(',')).join(' | ')}`);
    assert.equal(new Set(ids.map((s) => [...s][0])).size, 3, 'three shapes, three ids');
    // The saved video: runs/track/<stem>.mp4, one frame per result, source size and fps, FourCC mp4v.
    assert.equal(out.output_path, join(dir, 'runs', 'track', 'lanes.mp4'));
    assert.deepEqual(await probeVideoFile(out.output_path), { frames: 200, width: 256, height: 192, rate: '25/1', tag: 'mp4v' });
    assert.deepEqual(readdirSync(join(dir, 'runs', 'track')), ['lanes.mp4']);
  });

  it('vid_stride=2 shows the tracker every 2nd frame; a second save increments the file name; human output names the video', async () => {
    const run = await runCli(['track', video.path, 'save=true', 'vid_stride=2'], dir, {}, { timeoutMs: 600_000 });
    assert.equal(run.code, 0, run.stderr);
    const saved = join(dir, 'runs', 'track', 'lanes2.mp4');
    assert.match(run.stdout, /^100 frame\(s\) in [\d.]+s \([\d.]+ frames\/s\), \d+ detection\(s\), \d+ track id\(s\)$/m);
    assert.ok(run.stdout.includes(`Video saved to ${saved}\n`), run.stdout);
    // Progress on a non-terminal: plain lines with frames done / total and frames per second.
    assert.match(run.stderr, /lanes\.mp4: 100\/100 frames, [\d.]+ frames\/s, ETA 0:00/);
    assert.deepEqual(await probeVideoFile(saved), { frames: 100, width: 256, height: 192, rate: '25/2', tag: 'mp4v' });
  });

  for (const buffer of [true, false]) {
    it(`a live stream on 127.0.0.1 (stream_buffer=${buffer}) is tracked until it ends, then the run stops cleanly`, async () => {
      const port = await closedPort();
      const url = `tcp://127.0.0.1:${port}`;
      // A local ffmpeg serves the first 60 frames at their real rate (-re) to one client, then exits.
      const server = spawn('ffmpeg', ['-v', 'error', '-nostdin', '-re', '-i', video.path, '-frames:v', '60', '-c:v', 'mpeg4', '-q:v', '2', '-f', 'mpegts', `${url}?listen=1`], { stdio: 'ignore' });
      try {
        await listening(port);
        const run = await runCli(['track', `source=${url}`, `stream_buffer=${buffer}`, '--json'], dir, {}, { timeoutMs: 300_000 });
        assert.equal(run.code, 0, run.stderr);
        const out = JSON.parse(run.stdout) as TrackJson;
        const idx = out.results.map((r) => r.frame_idx);
        assert.ok(idx.every((v, k) => k === 0 || v > idx[k - 1]!), `frame indices increase: ${idx.join(',')}`);
        assert.ok(idx.at(-1)! <= 59);
        if (buffer) assert.deepEqual(idx, Array.from({ length: 60 }, (_, k) => k), 'stream_buffer=true: every frame');
        else assert.ok(out.frames >= 1 && out.frames <= 60, `stream_buffer=false: ${out.frames} frames`);
        assert.ok(out.results.some((r) => r.detections.length >= 3), 'the shapes are tracked on the live frames');
        // The stream ended: one reconnect is tried, refused, and the run ends with a warning, not an error.
        assert.match(run.stderr, /Live stream tcp:\/\/127\.0\.0\.1:\d+ ended .*reconnecting/);
        assert.match(run.stderr, /did not come back .*stopping/);
      } finally {
        server.kill('SIGKILL');
      }
    });
  }
});
