/**
 * Generates assets/sample.jpg: a 1280x720 procedurally drawn scene (SVG rendered by sharp) with
 * clearly separated filled shapes on a gradient, so the package ships a sample without photo licences.
 * Run: node --import tsx scripts/make-sample-image.ts
 */

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const W = 1280;
const H = 720;

/** Points of a regular star / polygon as an SVG `points` string. */
function polygon(cx: number, cy: number, rOuter: number, rInner: number, tips: number, rotation = -90): string {
  const pts: string[] = [];
  const n = rInner > 0 ? tips * 2 : tips;
  for (let i = 0; i < n; i++) {
    const r = rInner > 0 && i % 2 === 1 ? rInner : rOuter;
    const a = ((rotation + (360 / n) * i) * Math.PI) / 180;
    pts.push(`${(cx + r * Math.cos(a)).toFixed(1)},${(cy + r * Math.sin(a)).toFixed(1)}`);
  }
  return pts.join(' ');
}

const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}">
  <defs>
    <linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="#cfe3f5"/><stop offset="1" stop-color="#f4efe2"/>
    </linearGradient>
  </defs>
  <rect width="${W}" height="${H}" fill="url(#sky)"/>
  <rect x="0" y="560" width="${W}" height="160" fill="#b9c9a3"/>
  <circle cx="190" cy="250" r="120" fill="#d6453d"/>
  <rect x="400" y="130" width="230" height="250" rx="12" fill="#2f6fb3"/>
  <polygon points="860,110 1010,380 710,380" fill="#f2b134"/>
  <polygon points="${polygon(1140, 250, 110, 0, 6)}" fill="#3a9d5d"/>
  <ellipse cx="260" cy="560" rx="150" ry="75" fill="#7b4fa0"/>
  <polygon points="${polygon(640, 560, 105, 45, 5)}" fill="#e5732a"/>
  <rect x="880" y="470" width="300" height="160" fill="#3c4650"/>
  <circle cx="950" cy="635" r="40" fill="#1b1b1b"/>
  <circle cx="1110" cy="635" r="40" fill="#1b1b1b"/>
</svg>`;

const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'assets', 'sample.jpg');
await mkdir(dirname(out), { recursive: true });
const jpeg = await sharp(Buffer.from(svg)).flatten({ background: '#ffffff' }).jpeg({ quality: 85, mozjpeg: true }).toBuffer();
await writeFile(out, jpeg);
console.log(`wrote ${out} (${jpeg.length} bytes)`);
