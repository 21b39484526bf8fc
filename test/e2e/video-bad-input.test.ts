/** Bad video inputs through the CLI: each gets its message and exit code, never a hang or a partial file. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';

/** `bytes` with the first `count` (default: every) occurrences of the ASCII `from` replaced by `to` (same length). */
function replaceAll(bytes: Buffer, from: string, to: string, count = Infinity): Buffer {
  const out = Buffer.from(bytes);
  let n = 0;
  for (let i = out.indexOf(from); i >= 0 && n < count; i = out.indexOf(from, i + from.length), n++) out.write(to, i, 'latin1');
  assert.ok(n > 0, `no '${from}' in the file to replace`);
  return out;
}

describe('bad video inputs (CLI)', { concurrency: 3 }, () => {
  let dir: string;
  let clip: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'libreyolo-badvideo-'));
    clip = join(dir, 'clip.mp4');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=5', '-t', '1', '-c:v', 'mpeg4', clip]);
    writeFileSync(join(dir, 'notes.mp4'), 'these are not video bytes\n');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'anullsrc', '-t', '0.5', join(dir, 'sound.mp4')]);
    // An AVI of 5 MPEG-4 frames, then altered byte by byte: the FourCC renamed to one no codec has
    // (strh and strf), or every frame chunk ('00dc') and the index renamed to JUNK, which the demuxer
    // skips: a video stream that states 5 frames and holds none.
    const avi = join(dir, 'x.avi');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=5', '-t', '1', '-c:v', 'mpeg4', '-vtag', 'XVID', avi]);
    writeFileSync(join(dir, 'unknown-codec.avi'), replaceAll(readFileSync(avi), 'XVID', 'QQZZ', 2));
    writeFileSync(join(dir, 'no-frames.avi'), replaceAll(replaceAll(readFileSync(avi), '00dc', 'JUNK'), 'idx1', 'JUNK', 1));
    // The same clip as MP4 cut in half: with its index at the end (ffmpeg's default) nothing is
    // left to open it by; with the index first (+faststart) the frames stop where the file does.
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=25', '-t', '2', '-c:v', 'mpeg4', join(dir, 'whole.mp4')]);
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', join(dir, 'whole.mp4'), '-c', 'copy', '-movflags', '+faststart', join(dir, 'whole-faststart.mp4')]);
    for (const [from, to] of [['whole.mp4', 'cut.mp4'], ['whole-faststart.mp4', 'cut-faststart.mp4']] as const) {
      const bytes = readFileSync(join(dir, from));
      writeFileSync(join(dir, to), bytes.subarray(0, Math.floor(statSync(join(dir, from)).size / 2)));
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const expect = (r: { code: number | null; stderr: string }, code: number, re: RegExp): void => {
    assert.equal(r.code, code, r.stderr);
    assert.match(r.stderr, re);
  };

  it('a missing file (predict and track)', async () => {
    expect(await runCli(['predict', 'source=missing.mp4'], dir), 3, /^Error: Cannot open video file: missing\.mp4 \(not found\)/m);
    expect(await runCli(['track', 'source=missing.mp4'], dir), 3, /^Error: Video file not found: missing\.mp4$/m);
  });

  it('a video suffix on bytes that are no video', async () => {
    expect(await runCli(['predict', 'source=notes.mp4', 'save=true'], dir), 3, /^Error: Cannot open video file: notes\.mp4 \(.*Invalid data found when processing input\)/m);
    assert.ok(!readdirSync(dir).includes('runs'), 'nothing saved for a video that never opened');
  });

  it('a file with no video stream (zero frames)', async () => {
    expect(await runCli(['track', 'source=sound.mp4'], dir), 3, /^Error: Cannot open video file: sound\.mp4 \(it holds no video stream\)/m);
  });

  it('a codec ffmpeg cannot decode', async () => {
    expect(await runCli(['predict', 'source=unknown-codec.avi', 'save=true'], dir), 3,
      /^Error: Cannot open video file: unknown-codec\.avi \(its video codec \(FourCC QQZZ\) is not one this ffmpeg knows\)\. Pass a video ffmpeg can decode/m);
    expect(await runCli(['track', 'source=unknown-codec.avi'], dir), 3, /^Error: Cannot open video file: unknown-codec\.avi \(its video codec \(FourCC QQZZ\)/m);
    assert.ok(!readdirSync(dir).includes('runs'), 'nothing saved for a video that never decoded');
  });

  it('a video stream that holds no frames', async () => {
    expect(await runCli(['predict', 'source=no-frames.avi'], dir), 3, /^Error: Cannot open video file: no-frames\.avi \(it holds no video frames\)/m);
  });

  it('a container with a corrupt stream: cut before its index (error), cut after it (the frames there, and a warning)', async () => {
    expect(await runCli(['predict', 'source=cut.mp4'], dir), 3, /^Error: Cannot open video file: cut\.mp4 \(moov atom not found: Invalid data found when processing input\)/m);
    const r = await runCli(['predict', 'source=cut-faststart.mp4', '--json'], dir);
    assert.equal(r.code, 0, r.stderr);
    const frames = (JSON.parse(r.stdout) as { frames: number }).frames;
    assert.ok(frames > 0 && frames < 50, `${frames} frames decoded of the 50 the file states`);
    assert.match(r.stderr, new RegExp(`^Warning: Decoding cut-faststart\\.mp4 ended after ${frames} of the 50 frames it states \\(.*partial file\\): the file may be truncated or damaged\\.$`, 'm'));
  });

  it('frames above the pixel limit', async () => {
    expect(await runCli(['predict', `source=${clip}`], dir, { LIBREYOLO_MAX_IMAGE_PIXELS: '1000' }), 3, /^Error: Frames of .*clip\.mp4 are 64x48 = 3072 pixels, above the image pixel limit \(1000\)/m);
  });

  it('vid_stride 0 and a bad TrackConfig value (exit 2)', async () => {
    expect(await runCli(['predict', `source=${clip}`, 'vid_stride=0'], dir), 2, /^Error: vid_stride must be >= 1, got 0$/m);
    expect(await runCli(['track', `source=${clip}`, 'vid_stride=-2'], dir), 2, /^Error: vid_stride must be >= 1, got -2$/m);
    expect(await runCli(['track', `source=${clip}`, 'track_buffer=-1'], dir), 2, /^Error: track_buffer must be >= 0, got -1$/m);
  });

  it('no ffmpeg: the error names the package and LIBREYOLO_FFMPEG (exit 1)', async () => {
    expect(await runCli(['predict', `source=${clip}`], dir, { LIBREYOLO_FFMPEG: '/nonexistent/ffmpeg' }), 1,
      /^Error: Video needs the '\/nonexistent\/ff(probe|mpeg)' command, which was not found\. Install it \(Debian\/Ubuntu: sudo apt-get install ffmpeg.*LIBREYOLO_FFMPEG/m);
  });

  it('a live stream that sends nothing fails after the idle timeout instead of hanging', async () => {
    const sockets: Socket[] = [];
    const server = createServer((s) => sockets.push(s)); // accepts, never sends a byte
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      const r = await runCli(['track', `source=tcp://127.0.0.1:${port}`], dir, { LIBREYOLO_STREAM_IDLE_TIMEOUT_MS: '3000' }, { timeoutMs: 120_000 });
      expect(r, 3, /^Error: (No frame from tcp:\/\/127\.0\.0\.1:\d+ for 3 s: the stream stopped sending|Cannot open live stream: tcp:\/\/127\.0\.0\.1:\d+ \(.+\))/m);
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});
