/** Registers the built-in families (import for side effects). */
import { registerFamily } from './registry.ts';
import { yolo9Family } from './yolo9/family.ts';
import { yoloxFamily } from './yolox/family.ts';

registerFamily(yolo9Family);
registerFamily(yoloxFamily);
