/** The detections of one result as `--json` prints them, for images and video frames alike. */
import type { Results } from '../predict/results.ts';

/** Class, rounded confidence and box, with the mask's contour (segment models) and the track id (tracking) when there are. */
export function jsonDetections(r: Results): Array<Record<string, unknown>> {
  return r.summary().map((d) => ({
    class: d.name, class_id: d.class,
    confidence: Math.round(d.confidence * 1e4) / 1e4,
    bbox_xyxy: [d.box.x1, d.box.y1, d.box.x2, d.box.y2].map((v) => Math.round(v * 10) / 10),
    ...(d.segments ? { segments: d.segments } : {}),
    ...(d.track_id !== undefined ? { track_id: d.track_id } : {}),
  }));
}
