/** Box colours by class id, shared by saved images (save.ts) and the browser's canvas drawing. */

/** Distinct, saturated colours cycled by class id. */
const PALETTE = [
  '#E6194B', '#3CB44B', '#4363D8', '#F58231', '#911EB4', '#42D4F4', '#F032E6', '#BFEF45', '#FABED4', '#469990',
  '#DCBEFF', '#9A6324', '#FFE119', '#800000', '#AAFFC3', '#808000', '#FFD8B1', '#000075', '#A9A9A9', '#00A5A5',
];

export function classColour(cls: number): string {
  return PALETTE[((cls % PALETTE.length) + PALETTE.length) % PALETTE.length]!;
}

/** Black or white, whichever reads better on `hex`. */
export function textColour(hex: string): string {
  const v = parseInt(hex.slice(1), 16);
  const lum = 0.299 * (v >> 16) + 0.587 * ((v >> 8) & 255) + 0.114 * (v & 255);
  return lum > 150 ? '#000000' : '#FFFFFF';
}
