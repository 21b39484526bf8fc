/**
 * The streaming event-list reader (profile/json-stream.ts): the same elements as JSON.parse, for
 * both shapes, at any read size (so elements, strings and escape runs cross reads), and errors that
 * name what is wrong.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { forEachJsonItem } from '../../src/profile/json-stream.ts';
import { tempDir } from '../helpers/temp.ts';

const dir = tempDir();
let files = 0;

async function collect(text: string, options: { lenient?: boolean; chunkBytes?: number } = {}): Promise<{ items: unknown[]; shape: string }> {
  const p = join(dir, `j${files++}.json`);
  writeFileSync(p, text);
  const items: unknown[] = [];
  const r = await forEachJsonItem(p, (v) => { items.push(v); }, options);
  assert.equal(r.items, items.length);
  return { items, shape: r.shape };
}

/** Events whose strings hold what a scanner can trip on: quotes, backslash runs, brackets, commas, non-ASCII. */
function trickyEvents(n: number, seed: number): unknown[] {
  let s = seed;
  const rand = (): number => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const pieces = ['\\', '\\\\', '"', '\\"', ']', '[', '{', '}', ',', ':', 'é', '€', '😀', 'kernel', ' ', '\n', '\u0001'];
  const str = (): string => Array.from({ length: Math.floor(rand() * 6) }, () => pieces[Math.floor(rand() * pieces.length)]).join('');
  return Array.from({ length: n }, (_, i) => {
    if (i % 11 === 5) return Math.round(rand() * 1e6) / 8;
    if (i % 13 === 7) return str();
    return { name: str(), ph: 'X', ts: rand() * 1e15, dur: rand(), args: { op_name: str(), shape: [[1, 3], [{ k: str() }]], ok: rand() > 0.5, none: null } };
  });
}

describe('streaming JSON reader', () => {
  it('gives exactly the elements JSON.parse gives, for both shapes and any read size', async () => {
    // Few events at the smallest reads (a read per byte is slow), many at the large ones.
    for (const [chunkBytes, n] of [[1, 20], [2, 40], [3, 40], [5, 60], [7, 60], [16, 200], [61, 300], [256, 300], [4096, 2000], [1 << 20, 2000]] as const) {
      const events = trickyEvents(n, chunkBytes);
      const asArray = JSON.stringify(events);
      const asObject = JSON.stringify({ metadata: { note: 'a ] } " \\ [' }, traceEvents: events, after: ['traceEvents', { x: '[' }] }, null, 1);
      const a = await collect(asArray, { chunkBytes });
      assert.equal(a.shape, 'array');
      assert.deepEqual(a.items, events, `array, ${chunkBytes}-byte reads`);
      const o = await collect(asObject, { chunkBytes });
      assert.equal(o.shape, 'object');
      assert.deepEqual(o.items, events, `object, ${chunkBytes}-byte reads`);
    }
  });

  it('reads traceEvents among other keys, with brackets, quotes and non-ASCII inside strings', async () => {
    const r = await collect('{"a": [1, {"b": "]"}], "traceEvents": [{"name": "x\\\\\\"]}", "ts": 1}, {"name": "é€"}, 3 ], "z": "traceEvents"}');
    assert.equal(r.shape, 'object');
    assert.deepEqual(r.items, [{ name: 'x\\"]}', ts: 1 }, { name: 'é€' }, 3]);
  });

  it('reads a bare array and refuses what is not an event list', async () => {
    assert.deepEqual((await collect(' [ {"a": [1, 2]} , {} ] ')).items, [{ a: [1, 2] }, {}]);
    await assert.rejects(collect('{"traceEvents": "nope"}'), /traceEvents must be an array of events, got a string/);
    await assert.rejects(collect('7'), /a JSON object or an array of events/);
    await assert.rejects(collect('[{"a": 1}, {"b": '), /ends early/);
    await assert.rejects(collect('[{"a": 1},, {}]'), /empty element/);
    await assert.rejects(collect('[{"a": nope}]'), /invalid JSON in event 0/);
    await assert.rejects(collect('[{"a": 1}]]'), /unexpected text after the end/);
    assert.deepEqual((await collect('[{"a": 1}, {"b": ', { lenient: true })).items, [{ a: 1 }], 'lenient: a cut-off ORT file is read as far as it goes');
  });

  it('names the bad element of a run that parses together, after handing over the good ones', async () => {
    const seen: unknown[] = [];
    const p = join(dir, 'bad-run.json');
    writeFileSync(p, '[{"a": 1}, {"b": 2}, {"c": 3 4}, {"d": 5}]');
    await assert.rejects(forEachJsonItem(p, (v) => { seen.push(v); }), /invalid JSON in event 2 /);
    assert.deepEqual(seen, [{ a: 1 }, { b: 2 }]);
  });
});
