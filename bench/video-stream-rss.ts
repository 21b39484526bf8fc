/**
 * Peak RSS of predict(video, { stream: true }) over 200 and over 2,000 frames (ffmpeg testsrc2,
 * 320x240), each in a child process under /usr/bin/time -v: flat memory means the 2,000-frame peak
 * stays within 10 % of the 200-frame one. Usage: node --import tsx bench/video-stream-rss.ts
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = mkdtempSync(join(tmpdir(), 'libreyolo-bench-rss-'));
const index = fileURLToPath(new URL('../src/index.ts', import.meta.url));
const tsx = fileURLToPath(import.meta.resolve('tsx'));
try {
  const child = join(dir, 'run.mts');
  writeFileSync(child, `import { LibreYOLO } from ${JSON.stringify(index)};\nconst m = await LibreYOLO();\nlet n = 0;\nfor await (const _ of m.predict(process.argv[2], { stream: true })) n++;\nawait m.close();\nconsole.log(n);\n`);
  const peaks: number[] = [];
  for (const frames of [200, 2000]) {
    const video = join(dir, `clip${frames}.mp4`);
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25', '-frames:v', String(frames), '-c:v', 'mpeg4', '-q:v', '4', video]);
    const r = spawnSync('/usr/bin/time', ['-v', process.execPath, '--import', tsx, child, video], { encoding: 'utf8' });
    const kb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr)?.[1]);
    if (r.status !== 0 || Number(r.stdout.trim()) !== frames) throw new Error(`run on ${frames} frames failed: ${r.stderr.slice(-500)}`);
    peaks.push(kb / 1024);
    console.log(`${frames} frames: peak RSS ${(kb / 1024).toFixed(0)} MB`);
  }
  const ratio = peaks[1]! / peaks[0]!;
  console.log(`2000 / 200 frames peak RSS ratio ${ratio.toFixed(3)} (bound 1.10: ${ratio <= 1.1 ? 'flat' : 'GROWS'})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
