/**
 * One frame through the tracker: the detections it reports, in its order, with their track ids.
 * Plain TypeScript (Node's video runs and the browser's track() share it).
 */
import type { ByteTracker } from '../track/byte-tracker.ts';
import { Results } from './results.ts';

/** The tracker's output for one frame: the detections it reports, in its order, with their ids. */
export function trackedResults(result: Results, tracker: ByteTracker): Results {
  const b = result.boxes;
  const dets = new Float32Array(b.length * 6);
  for (let i = 0; i < b.length; i++) {
    dets.set(b.xyxyData.subarray(i * 4, i * 4 + 4), i * 6);
    dets[i * 6 + 4] = b.confData[i]!;
    dets[i * 6 + 5] = b.clsData[i]!;
  }
  const rows = tracker.update(dets, b.length);
  const picked = rows.map((r) => r[1]);
  const boxes = b.select(picked);
  boxes.idData = Int32Array.from(rows, (r) => r[0]);
  // Masks ride along with their boxes, sliced by the same rows.
  const masks = result.masks ? result.masks.select(picked) : null;
  const out = new Results({ boxes, names: result.names, orig_shape: result.orig_shape, path: result.path, speed: result.speed, masks });
  out.frame_idx = result.frame_idx;
  return out;
}
