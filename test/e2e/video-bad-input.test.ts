/** Bad video inputs through the CLI: each gets its message and exit code, never a hang or a partial file. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';

describe('bad video inputs (CLI)', { concurrency: 3 }, () => {
  let dir: string;
  let clip: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'libreyolo-badvideo-'));
    clip = join(dir, 'clip.mp4');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=5', '-t', '1', '-c:v', 'mpeg4', clip]);
    writeFileSync(join(dir, 'notes.mp4'), 'these are not video bytes\n');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'anullsrc', '-t', '0.5', join(dir, 'sound.mp4')]);
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

  it('frames above the pixel limit', async () => {
    expect(await runCli(['predict', `source=${clip}`], dir, { LIBREYOLO_MAX_IMAGE_PIXELS: '1000' }), 3, /^Error: Frames of .*clip\.mp4 are 64x48 = 3072 pixels, above the image pixel limit \(1000\)/m);
  });

  it('vid_stride 0 and a bad TrackConfig value (exit 2)', async () => {
    expect(await runCli(['predict', `source=${clip}`, 'vid_stride=0'], dir), 2, /^Error: vid_stride must be positive, got 0$/m);
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
