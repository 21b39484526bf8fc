/**
 * The streaming event-list reader on a real trace: events per second of forEachJsonItem against
 * JSON.parse of the whole file (the anchor, in this process: what the file costs to parse at all).
 * Usage: node --import tsx bench/json-stream.ts <trace.json> (a profile_trace.json or ORT's file;
 * the anchor needs the file under V8's string limit, ~512 MB).
 */
import { readFileSync, statSync } from 'node:fs';
import { forEachJsonItem } from '../src/profile/json-stream.ts';
import { median } from './common.ts';

const file = process.argv[2];
if (!file) {
  console.error('usage: node --import tsx bench/json-stream.ts <trace.json>');
  process.exit(2);
}
const mb = statSync(file).size / 1e6;
const stream: number[] = [];
const whole: number[] = [];
let items = 0;
for (let rep = 0; rep < 3; rep++) {
  let t = performance.now();
  items = (await forEachJsonItem(file, () => undefined)).items;
  stream.push(performance.now() - t);
  t = performance.now();
  JSON.parse(readFileSync(file, 'utf8'));
  whole.push(performance.now() - t);
}
const s = median(stream);
const w = median(whole);
console.log(`${file}: ${mb.toFixed(1)} MB, ${items} events`);
console.log(`streamed ${s.toFixed(0)} ms (${(mb / (s / 1000)).toFixed(0)} MB/s), whole-file JSON.parse ${w.toFixed(0)} ms; ratio streamed/whole ${(s / w).toFixed(2)}`);
