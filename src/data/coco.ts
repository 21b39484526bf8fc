/** COCO's class lists: the 80 names and how the 91 category ids (0..90, with gaps) map onto them. */

/** The 80 COCO class names, shared by the bundled COCO sets and the COCO-trained heads. */
export const COCO_NAMES: readonly string[] = [
  'person', 'bicycle', 'car', 'motorcycle', 'airplane', 'bus', 'train', 'truck', 'boat', 'traffic light',
  'fire hydrant', 'stop sign', 'parking meter', 'bench', 'bird', 'cat', 'dog', 'horse', 'sheep', 'cow',
  'elephant', 'bear', 'zebra', 'giraffe', 'backpack', 'umbrella', 'handbag', 'tie', 'suitcase', 'frisbee',
  'skis', 'snowboard', 'sports ball', 'kite', 'baseball bat', 'baseball glove', 'skateboard', 'surfboard',
  'tennis racket', 'bottle', 'wine glass', 'cup', 'fork', 'knife', 'spoon', 'bowl', 'banana', 'apple',
  'sandwich', 'orange', 'broccoli', 'carrot', 'hot dog', 'pizza', 'donut', 'cake', 'chair', 'couch',
  'potted plant', 'bed', 'dining table', 'toilet', 'tv', 'laptop', 'mouse', 'remote', 'keyboard',
  'cell phone', 'microwave', 'oven', 'toaster', 'sink', 'refrigerator', 'book', 'clock', 'vase',
  'scissors', 'teddy bear', 'hair drier', 'toothbrush',
];


/** The category ids (0..90) COCO leaves unused: 0 and the ten ids whose classes were dropped. */
const UNUSED_COCO_IDS = new Set([0, 12, 26, 29, 30, 45, 66, 68, 69, 71, 83]);

/**
 * Index into COCO_NAMES of each of the 91 COCO category ids, -1 for the unused ones (a head trained
 * on the category ids, as upstream RF-DETR's, scores 91 columns).
 */
export const COCO91_TO_COCO80: Int32Array = (() => {
  const map = new Int32Array(91).fill(-1);
  let next = 0;
  for (let id = 0; id < 91; id++) if (!UNUSED_COCO_IDS.has(id)) map[id] = next++;
  return map;
})();
