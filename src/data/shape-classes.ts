/** The synthetic dataset's shape classes, in class-id order (`libreyolo data synth`, generateSynthDataset). */
export const SHAPE_CLASSES: readonly string[] = ['circle', 'square', 'triangle', 'star', 'ellipse', 'rectangle', 'hexagon', 'cross'];
