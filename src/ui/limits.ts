/** What `libreyolo ui` accepts by default: the largest upload and the largest decoded image. */
export const DEFAULT_MAX_UPLOAD_BYTES = 64 * 2 ** 20;
export const DEFAULT_MAX_PIXELS = 50_000_000;
