/**
 * ByteTracker against the original's recorded runs (tracking_ref.json): every output row, list,
 * counter and flag exactly; Kalman means within 1e-6 * max(1, |v|), covariance diagonals within 1e-9
 * relative.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ByteTracker, type TrackSnapshot } from '../../src/track/byte-tracker.ts';
import { trackConfigFromKwargs, type TrackConfig } from '../../src/track/config.ts';
import { fixture } from '../helpers/fixtures.ts';

type ListRow = [number, number, number, number, number, ...number[]];
interface Frame {
  dets: number[][];
  reset_before?: boolean;
  out: number[][];
  tracked: ListRow[];
  lost: ListRow[];
  frame_id: number;
  id_count: number;
}
interface Scenario { config: TrackConfig; frames: Frame[] }

const ref = JSON.parse(readFileSync(fixture('tracking_ref.json'), 'utf8')) as { scenarios: Record<string, Scenario> };

function checkList(where: string, got: TrackSnapshot[], want: ListRow[]): void {
  assert.deepEqual(
    got.map((t) => [t.id, t.is_activated ? 1 : 0, t.hits, t.start_frame, t.frame_id]),
    want.map((w) => w.slice(0, 5).map(Number)),
    `${where}: ids, flags, hits and frames`,
  );
  got.forEach((t, k) => {
    const w = want[k]!;
    for (let i = 0; i < 8; i++) {
      const m = w[5 + i]!, p = w[13 + i]!;
      assert.ok(Math.abs(t.mean[i]! - m) <= 1e-6 * Math.max(1, Math.abs(m)), `${where}: track ${t.id} mean[${i}] ${t.mean[i]} vs ${m}`);
      assert.ok(Math.abs(t.covariance_diagonal[i]! - p) <= 1e-9 * Math.abs(p), `${where}: track ${t.id} cov[${i}] ${t.covariance_diagonal[i]} vs ${p}`);
    }
  });
}

describe('ByteTracker reproduces tracking_ref.json', () => {
  const names = Object.keys(ref.scenarios);
  it('holds the 17 scenarios and 425 frames the README lists', () => {
    assert.equal(names.length, 17);
    assert.equal(names.reduce((n, k) => n + ref.scenarios[k]!.frames.length, 0), 425);
  });
  for (const name of names) {
    it(name, () => {
      const s = ref.scenarios[name]!;
      const tracker = new ByteTracker(s.config);
      s.frames.forEach((f, k) => {
        if (f.reset_before) tracker.reset();
        const where = `${name} frame ${k}`;
        // Alternate the two input forms: rows, and a flat Float32Array (the values are exact float32).
        const out = k % 2 === 0 ? tracker.update(f.dets) : tracker.update(Float32Array.from(f.dets.flat()), f.dets.length);
        assert.deepEqual(out, f.out, `${where}: output rows`);
        assert.equal(tracker.frameCount, f.frame_id, `${where}: frame counter`);
        assert.equal(tracker.lastId, f.id_count, `${where}: id counter`);
        checkList(`${where} tracked`, tracker.tracked, f.tracked);
        checkList(`${where} lost`, tracker.lost, f.lost);
      });
    });
  }
});

describe('TrackConfig checks', () => {
  it('rejects out-of-range values with the original messages, in its order', () => {
    const cases: Array<[Partial<TrackConfig>, string]> = [
      [{ frame_rate: 0, track_high_thresh: 2 }, 'frame_rate must be > 0, got 0'],
      [{ track_high_thresh: 1.5 }, 'track_high_thresh must be in [0, 1], got 1.5'],
      [{ match_thresh_unconfirmed: -0.1 }, 'match_thresh_unconfirmed must be in [0, 1], got -0.1'],
      [{ track_buffer: -1 }, 'track_buffer must be >= 0, got -1'],
      [{ minimum_consecutive_frames: 0 }, 'minimum_consecutive_frames must be >= 1, got 0'],
      [{ track_high_thresh: 0.2, track_low_thresh: 0.3 }, 'track_high_thresh (0.2) must be >= track_low_thresh (0.3)'],
    ];
    for (const [config, message] of cases) assert.throws(() => new ByteTracker(config), { code: 'config_range_error', message });
  });
  it('drops unknown keys with one sorted warning', () => {
    const warnings: string[] = [];
    const c = trackConfigFromKwargs({ persist: true, conf: 0.3, track_buffer: 10 }, (m) => warnings.push(m));
    assert.deepEqual(warnings, ["Unknown tracking config keys (ignored): ['conf', 'persist']"]);
    assert.equal(c.track_buffer, 10);
    assert.equal(c.match_thresh, 0.8);
  });
});
