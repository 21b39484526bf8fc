/**
 * What the memory benches share: a YOLOv9 train graph built with every static shape declared (so a
 * shape probe sizes every value; the node order is the same as the session's), and the bytes of
 * each value from that probe.
 */
import { probeShapes } from '../src/graph/autodiff/shapes.ts';
import { BYTES_PER_ELEMENT, numel, zeros, type HostTensor } from '../src/graph/tensor.ts';
import { yolo9Family } from '../src/models/yolo9/family.ts';
import { buildTrainGraph, type TrainGraph } from '../src/train/graph.ts';

export interface SizedTrainGraph {
  train: TrainGraph;
  /** Bytes of a value of the graph (0 for a name the probe did not see). */
  bytes: (value: string) => number;
}

export async function sizedYolo9TrainGraph(size: string, imgsz: number, batch: number, recomputeCheap = true): Promise<SizedTrainGraph> {
  const network = yolo9Family.create({ size, nc: 80 });
  const train = await buildTrainGraph(yolo9Family, network, { batch, height: imgsz, width: imgsz, maxTargets: 100, recomputeCheap, hideShapes: false });
  const feeds: Record<string, HostTensor> = {};
  for (const v of train.graph.inputs) feeds[v.name] = zeros(v.dtype, v.shape.map(Number));
  const shapes = await probeShapes(train.graph, feeds);
  return {
    train,
    bytes: (value) => {
      const m = shapes.get(value);
      return m ? numel(m.dims) * BYTES_PER_ELEMENT[m.dtype] : 0;
    },
  };
}
