/**
 * The D-FINE network as the library runs it: the predict graph in the common layout (`output`
 * [B, 4+nc, 300]: x1, y1, x2, y2 in input pixels, then sigmoid scores; the original's postprocess
 * decode, w and h clamped at 0, no clipping) and the export in the original's layout (`images` ->
 * `pred_logits` [B, 300, nc] raw logits, `pred_boxes` [B, 300, 4] cx, cy, w, h normalised).
 */
import type { GraphBuilder } from '../../graph/builder.ts';
import { concat, float32, preciseSigmoid, slice, transpose } from '../../graph/nn.ts';
import type { DetectionNetwork, InferenceEmitOptions } from '../registry.ts';
import { DFINE_COMMON as C } from './config.ts';
import { DfineNetwork } from './network.ts';

export class DfineDetector extends DfineNetwork implements DetectionNetwork {
  get nc(): number {
    return this.options.nc;
  }

  emitInference(b: GraphBuilder, opts: InferenceEmitOptions): void {
    const height = opts.height ?? C.inputSize;
    const width = opts.width ?? C.inputSize;
    DfineNetwork.checkSize(height, width);
    const batch = opts.batch ?? 'batch';
    const images = b.input('images', 'float32', [batch, 3, height, width]);
    const out = this.forward(b, images, null);
    const decoded = b.scope('decode', () => {
      const half = b.op('Mul', [b.op('Relu', [slice(b, out.boxes, -1, 2, 4)]), b.scalar(0.5, 'half')]);
      const centre = slice(b, out.boxes, -1, 0, 2);
      const scale = b.constant('input_wh', float32([width, height, width, height], [4]));
      const xyxy = b.op('Mul', [concat(b, [b.op('Sub', [centre, half]), b.op('Add', [centre, half])], -1), scale]);
      return concat(b, [transpose(b, xyxy, [0, 2, 1]), transpose(b, preciseSigmoid(b, out.logits), [0, 2, 1])], 1);
    });
    b.output('output', decoded, 'float32', [batch, 4 + this.nc, C.numQueries]);
  }

  emitExport(b: GraphBuilder, opts: InferenceEmitOptions): void {
    this.emitGraph(b, { batch: opts.batch ?? 'batch', ...(opts.height ? { height: opts.height } : {}), ...(opts.width ? { width: opts.width } : {}) });
  }
}
