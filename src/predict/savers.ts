/**
 * The file writers predict calls for `save=true`, in one module so the browser build can swap them
 * for its refusal (src/browser/savers.ts): a page has no file system to save into.
 */
export { saveAnnotated } from './save.ts';
export { saveTiled } from './tiled-save.ts';
