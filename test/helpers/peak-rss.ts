/** This process's peak resident set in kB: src/util/peak-rss.ts, for tests and benches. */
export { peakRssKb } from '../../src/util/peak-rss.ts';
