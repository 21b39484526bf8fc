/** lossAndGradients() refuses targets that are not normalised class + corner rows, before any session runs. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LibreYOLOError } from '../../src/index.ts';
import { useModel } from '../helpers/model.ts';

describe('lossAndGradients targets', () => {
  const model = useModel(); // the bundled shapes model: 6 classes
  const images = { data: new Float32Array(1 * 3 * 64 * 64).fill(0.5), dims: [1, 3, 64, 64] };
  const targets = (...rows: number[][]) => ({ data: Float32Array.from(rows.flat()), dims: [1, rows.length, 5] });
  const rejects = (t: ReturnType<typeof targets>, re: RegExp) =>
    assert.rejects(model().lossAndGradients(images, t), (e: unknown) => e instanceof LibreYOLOError && e.code === 'config_range_error' && re.test(e.message));

  it('refuses pixel coordinates, naming the row and the fix', async () => {
    await rejects(targets([2, 10, 12, 40, 50]), /targets row \[0, 0\] = \[2, 10, 12, 40, 50\]: box corners must be normalised to \[0, 1\] \(x \/ image width, y \/ image height\), not pixels/);
  });

  it('refuses negative or above-one corners in a later row, after padding rows', async () => {
    await rejects(targets([-1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 0.1, 0.1, 1.2, 0.5]), /targets row \[0, 2\].*normalised to \[0, 1\]/);
    await rejects(targets([1, -0.1, 0.1, 0.5, 0.5]), /targets row \[0, 0\].*normalised/);
    await rejects(targets([1, Number.NaN, 0.1, 0.5, 0.5]), /normalised/);
  });

  it('refuses a class outside the model or a fractional one', async () => {
    await rejects(targets([6, 0.1, 0.1, 0.5, 0.5]), /class 6 is not an integer in 0\.\.5 \(or -1 for a padding row\)/);
    await rejects(targets([1.5, 0.1, 0.1, 0.5, 0.5]), /class 1\.5 is not an integer/);
  });

  it('refuses swapped corners', async () => {
    await rejects(targets([1, 0.6, 0.1, 0.5, 0.5]), /x1 <= x2 and y1 <= y2/);
  });
});
