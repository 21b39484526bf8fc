/**
 * Modules the browser build replaces: core module (Node implementation) -> its browser
 * counterpart, both relative to src/. Each pair exports the same names (test/platform-seams.test.ts).
 */
export const BROWSER_SEAMS: Readonly<Record<string, string>> = {
  'util/platform.ts': 'browser/platform.ts',
  'runtime/worker-host.ts': 'browser/worker-host.ts',
  'predict/savers.ts': 'browser/savers.ts',
  'runtime/device-probe.ts': 'browser/device-probe.ts',
};
