/**
 * Renders the demo images of the bundled shapes detector (src/data/demo-scenes.ts) into assets/:
 *   assets/sample.jpg        640x360, eight large shapes (SAMPLE_IMAGE)
 *   assets/sample-large.jpg  1600x1200, 48 small shapes (SAMPLE_LARGE_IMAGE, the tiling example)
 * Drawn procedurally (SVG rasterised by sharp), so the package ships samples without photo licences.
 * Run: node --import tsx scripts/make-sample-image.ts
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { sampleScene, tilingScene } from '../src/data/demo-scenes.ts';

const assets = join(dirname(fileURLToPath(import.meta.url)), '..', 'assets');
await mkdir(assets, { recursive: true });
for (const [file, scene] of [['sample.jpg', sampleScene()], ['sample-large.jpg', tilingScene()]] as const) {
  const jpeg = await sharp(Buffer.from(scene.svg), { density: 72 }).removeAlpha().jpeg({ quality: 90, chromaSubsampling: '4:2:0', progressive: false }).toBuffer();
  await writeFile(join(assets, file), jpeg);
  console.log(`wrote ${join(assets, file)} (${scene.width}x${scene.height}, ${scene.objects.length} objects, ${jpeg.length} bytes)`);
}
