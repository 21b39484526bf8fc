/** What the benches share: the median, and scenes with real detections for the bundled model. */
import sharp from 'sharp';
import { crowdScene } from '../src/data/demo-scenes.ts';

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The 768x768 crowd scene (144 shapes the bundled model finds at a 640 input) as JPEG bytes. */
export async function crowdJpeg(): Promise<Buffer> {
  return sharp(Buffer.from(crowdScene().svg), { density: 72 }).removeAlpha().jpeg({ quality: 90 }).toBuffer();
}
