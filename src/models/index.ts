/** The built-in families: one registry line each. Importing this module registers them. */
import { registerFamily } from './registry.ts';
import { yolo9Family } from './yolo9/family.ts';
import { yoloxFamily } from './yolox/family.ts';
import { rfdetrFamily } from './rfdetr/family.ts';
import { deimFamily, dfineFamily } from './dfine/family.ts';

registerFamily(yolo9Family);
registerFamily(yoloxFamily);
registerFamily(rfdetrFamily);
registerFamily(dfineFamily);
registerFamily(deimFamily);

export * from './registry.ts';
