import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LibreYOLOError } from '../../src/errors.ts';
import { formatLabels, labelPathFor, labelsToPixelBoxes, parseLabels, readLabels } from '../../src/data/labels.ts';
import { tempDir } from '../helpers/temp.ts';

function rejects(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof LibreYOLOError && e.code === 'data_invalid' && e.exitCode === 3 && re.test(e.message));
}

describe('label files', () => {
  it('maps image paths to label paths through the last images/ component', () => {
    assert.equal(labelPathFor('/d/images/train/a.jpg'), '/d/labels/train/a.txt');
    assert.equal(labelPathFor('/images/d/images/x/b.c.PNG'), '/images/d/labels/x/b.c.txt');
    assert.equal(labelPathFor('/d/pics/a.jpg'), '/d/pics/a.txt');
  });

  it('parses boxes, polygons and blank lines', () => {
    const l = parseLabels('0 0.5 0.5 0.2 0.4\n\n  2 0.1 0.2 0.3 0.2 0.2 0.6  \r\n', 'f.txt', 3);
    assert.equal(l.n, 2);
    assert.deepEqual(Array.from(l.rows.subarray(0, 5)), [0, 0.5, 0.5, Math.fround(0.2), Math.fround(0.4)]);
    // polygon (0.1,0.2) (0.3,0.2) (0.2,0.6): extent x 0.1..0.3, y 0.2..0.6
    const p = Array.from(l.rows.subarray(5));
    assert.equal(p[0], 2);
    for (const [a, b] of [[p[1]!, 0.2], [p[2]!, 0.4], [p[3]!, 0.2], [p[4]!, 0.4]]) assert.ok(Math.abs(a - b) < 1e-6);
  });

  it('names file:line for malformed rows', () => {
    rejects(() => parseLabels('0 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2\n', 'lab.txt', 2), /lab\.txt:2: expected 5 values/);
    rejects(() => parseLabels('0 0.5 x 0.2 0.2', 'lab.txt', 2), /lab\.txt:1: 'x' is not a number/);
    rejects(() => parseLabels('\n\n2 0.5 0.5 0.2 0.2', 'lab.txt', 2), /lab\.txt:3: class id 2 is out of range: the dataset has nc=2/);
    rejects(() => parseLabels('-1 0.5 0.5 0.2 0.2', 'lab.txt', 2), /lab\.txt:1: class id must be a non-negative integer/);
    rejects(() => parseLabels('0.5 0.5 0.5 0.2 0.2', 'lab.txt', 2), /non-negative integer/);
    rejects(() => parseLabels('0 120 80 40 30', 'lab.txt', 2), /lab\.txt:1: .*outside the image; coordinates look like pixels/);
    rejects(() => parseLabels('0 0.5 0.5 -0.1 0.2', 'lab.txt', 2), /negative width/);
    rejects(() => parseLabels('0 0.1 0.2 0.3 0.4 0.5 0.6 0.7', 'lab.txt', 2), /lab\.txt:1: a polygon row needs an even number of coordinates/);
  });

  it('keeps each polygon row\'s ring (normalised) beside its box; box rows have none; box-only files carry no segments', () => {
    const l = parseLabels('1 0.1 0.2 0.3 0.2 0.2 0.6\n0 0.5 0.5 0.2 0.4\n', 'f.txt', 2);
    assert.equal(l.segments?.length, 2);
    assert.deepEqual(Array.from(l.segments![0]!), [0.1, 0.2, 0.3, 0.2, 0.2, 0.6].map(Math.fround));
    assert.equal(l.segments![1], null);
    assert.equal(parseLabels('0 0.5 0.5 0.2 0.4\n', 'f.txt', 2).segments, undefined);
  });

  it('refuses polygon rows with fewer than 3 points, odd coordinate counts, degenerate rings or points outside 0..1, naming file:line', () => {
    rejects(() => parseLabels('0 0.5 0.5 0.2 0.2\n0 0.1 0.1 0.2 0.1 0.2\n', 'seg.txt', 1), /seg\.txt:2: a polygon row needs an even number of coordinates after the class id, got 5/);
    rejects(() => parseLabels('0 0.1 0.1 0.2 0.1 0.2 0.2 0.3\n', 'seg.txt', 1), /seg\.txt:1: a polygon row needs an even number of coordinates after the class id, got 7/);
    rejects(() => parseLabels('0 0.1 0.1 0.2 0.2 0.1 0.1\n', 'seg.txt', 1), /seg\.txt:1: a polygon needs at least 3 distinct points, got 2/);
    rejects(() => parseLabels('0 0.1 0.1 0.2 0.2 0.3 0.3\n', 'seg.txt', 1), /seg\.txt:1: the polygon has zero area/);
    rejects(() => parseLabels('\n0 0.1 0.1 1.2 0.1 0.5 0.5\n', 'seg.txt', 1), /seg\.txt:2: polygon point \(1\.2, 0\.1\) is outside 0\.\.1/);
    rejects(() => parseLabels('0 0.1 -0.05 0.9 0.1 0.5 0.5\n', 'seg.txt', 1), /seg\.txt:1: polygon point \(0\.1, -0\.05\) is outside 0\.\.1/);
    rejects(() => parseLabels('0 12 30 90 30 50 60\n', 'seg.txt', 1), /seg\.txt:1: polygon point \(12, 30\) is outside 0\.\.1/);
  });

  it('reads files; a missing file has no objects', async () => {
    const dir = tempDir();
    await writeFile(join(dir, 'a.txt'), formatLabels([1, 0.5, 0.25, 0.5, 0.5]));
    const l = await readLabels(join(dir, 'a.txt'), 2);
    assert.equal(l.n, 1);
    assert.equal((await readLabels(join(dir, 'missing.txt'), 2)).n, 0);
    const px = labelsToPixelBoxes(l, 200, 100, 2);
    assert.deepEqual(Array.from(px), [1, 100, 0, 300, 100]);
  });
});
