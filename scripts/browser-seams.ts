/**
 * Modules the browser build replaces: core module (Node implementation) -> its browser
 * counterpart, both relative to src/. Each pair exports the same names (test/platform-seams.test.ts).
 */
export const BROWSER_SEAMS: Readonly<Record<string, string>> = {
  'util/platform.ts': 'browser/platform.ts',
};
