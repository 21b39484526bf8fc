/** The decoded image every stage shares (decoders, letterbox, augmentation, predict, save). */

/** Packed HWC RGB, 8 bits per sample. */
export interface RgbImage {
  data: Uint8Array;
  width: number;
  height: number;
}
