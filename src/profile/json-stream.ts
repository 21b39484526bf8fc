/**
 * Streaming reader for the one large JSON shape the profiler reads: an event list, given either as
 * a top-level array or as the `traceEvents` array of a top-level object (Chrome traces, ORT's own
 * profile files). The file is read in 1 MB chunks and each element is parsed on its own, so a trace
 * of millions of events never becomes one string or one array (V8 strings stop near 512 MB).
 */
import { createReadStream } from 'node:fs';

const CHUNK = 1 << 20;
/** One event larger than this is not an event: refuse rather than grow without bound. */
const MAX_ITEM_CHARS = 64 << 20;

export interface JsonArrayStreamOptions {
  /** ORT's file of a session that never finished is cut off or empty: stop quietly at its end. */
  lenient?: boolean;
  /** Bytes per read (1 MB); tests use a few bytes, so that elements, strings and escapes cross reads. */
  chunkBytes?: number;
}

export interface JsonArrayStreamResult {
  /** 'array' (a bare event list) or 'object' (an object with `traceEvents`). */
  shape: 'array' | 'object' | 'empty';
  /** Whether the object had a `traceEvents` key. */
  hasEvents: boolean;
  items: number;
}

export class JsonStreamError extends Error {}

const WS = new Set([0x20, 0x0a, 0x0d, 0x09]);

/**
 * Calls `onItem` with every element of the event list, in order. A promise returned by `onItem` is
 * awaited before the next element (a writer's back-pressure). Errors name what is wrong: not JSON,
 * not an object or array, `traceEvents` not an array.
 */
export async function forEachJsonItem(
  path: string, onItem: (item: unknown) => void | Promise<void>, options: JsonArrayStreamOptions = {},
): Promise<JsonArrayStreamResult> {
  // Scanner state, kept across chunks.
  let top: 'start' | 'array' | 'object' | 'done' = 'start';
  let shape: 'array' | 'object' = 'array';
  let depth = 0; // bracket depth inside the whole document
  let itemDepth = -1; // depth of the event list's own brackets' contents (1 for an array, 2 for traceEvents)
  let inString = false;
  let escape = false;
  let itemStart = -1; // index in `text` where the current element began
  let key = ''; // last key seen at object depth 1
  let capturing = false; // capturing a depth-1 string
  let expectKey = true;
  let awaitingValueOfEvents = false;
  let hasEvents = false;
  let items = 0;
  let offset = 0; // bytes-ish (chars) before `text`
  let carry = '';

  const fail = (msg: string): never => {
    throw new JsonStreamError(msg);
  };

  const emitOne = async (raw: string): Promise<void> => {
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch (err) {
      fail(`invalid JSON in event ${items} (near character ${offset}): ${(err as Error).message}`);
    }
    items++;
    const r = onItem(v);
    if (r && typeof (r as Promise<void>).then === 'function') await r;
  };

  /**
   * The elements at text[starts[k], ends[k]), in order. One JSON.parse of the whole run (the
   * elements and the commas between them, in brackets) costs a fraction of one parse per element;
   * every element's brackets balance, so the run parses exactly when each element does. When it
   * does not, the elements are parsed one by one, so the error names the bad one.
   */
  const emitRun = async (text: string, starts: number[], ends: number[]): Promise<void> => {
    if (!starts.length) return;
    let values: unknown[] | null = null;
    if (starts.length > 1) {
      try {
        const parsed: unknown = JSON.parse(`[${text.slice(starts[0], ends[ends.length - 1])}]`);
        if (Array.isArray(parsed) && parsed.length === starts.length) values = parsed;
      } catch {
        values = null;
      }
    }
    if (!values) {
      for (let k = 0; k < starts.length; k++) await emitOne(text.slice(starts[k], ends[k]));
      return;
    }
    for (const v of values) {
      items++;
      const r = onItem(v);
      if (r && typeof (r as Promise<void>).then === 'function') await r;
    }
  };

  // Inside an element's brackets only whole strings and brackets matter: one regex step takes a
  // whole string literal (escapes included) or one bracket, skipping keys, numbers and colons.
  // A lone quote is a string this read cuts off: the character loop below carries it over.
  const TOKEN = /"[^"\\]*(?:\\[\s\S][^"\\]*)*"|[[\]{}"]/g;

  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: options.chunkBytes ?? CHUNK });
  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      const text = carry + chunk;
      let i = carry.length;
      if (itemStart < 0) i = 0;
      // When not inside an element, the carry is empty (nothing to keep).
      const starts: number[] = [];
      const ends: number[] = [];
      for (; i < text.length; i++) {
        if (inString && !capturing) {
          // Jump to the closing quote: a quote preceded by an odd run of backslashes is escaped.
          if (escape) {
            escape = false;
            continue;
          }
          let from = i;
          for (;;) {
            const q = text.indexOf('"', from);
            if (q < 0) {
              let run = 0;
              for (let k = text.length - 1; k >= from && text.charCodeAt(k) === 0x5c; k--) run++;
              escape = run % 2 === 1;
              i = text.length;
              break;
            }
            let run = 0;
            for (let k = q - 1; k >= from && text.charCodeAt(k) === 0x5c; k--) run++;
            if (run % 2 === 0) {
              inString = false;
              i = q;
              break;
            }
            from = q + 1;
          }
          continue;
        }
        const c = text.charCodeAt(i);
        if (inString) {
          if (escape) escape = false;
          else if (c === 0x5c) escape = true;
          else if (c === 0x22) {
            inString = false;
            capturing = false;
          } else key += text[i];
          continue;
        }
        if (itemStart >= 0 && depth > itemDepth && itemDepth > 0) {
          TOKEN.lastIndex = i;
          let m: RegExpExecArray | null;
          while ((m = TOKEN.exec(text))) {
            if (m[0].length > 1) continue;
            const t = m[0].charCodeAt(0);
            if (t === 0x22) {
              inString = true; // cut off by the end of this read: the string path takes it from here
              break;
            }
            if (t === 0x5b || t === 0x7b) depth++;
            else if (--depth === itemDepth) break;
          }
          i = m ? m.index : text.length;
          continue;
        }
        if (top === 'done') {
          if (!WS.has(c)) fail(`unexpected text after the end of the JSON value (near character ${offset + i})`);
          continue;
        }
        if (top === 'start') {
          if (WS.has(c)) continue;
          if (c === 0x5b) {
            top = 'array';
            depth = 1;
            itemDepth = 1;
            continue;
          }
          if (c === 0x7b) {
            top = 'object';
            shape = 'object';
            depth = 1;
            continue;
          }
          fail('a trace must be a JSON object or an array of events');
        }
        // Inside the document.
        if (awaitingValueOfEvents && !WS.has(c)) {
          awaitingValueOfEvents = false;
          hasEvents = true;
          if (c !== 0x5b) fail(`traceEvents must be an array of events, got ${describeStart(text, i)}`);
          depth = 2;
          itemDepth = 2;
          continue;
        }
        if (c === 0x22) {
          inString = true;
          if (top === 'object' && depth === 1 && expectKey) {
            capturing = true;
            key = '';
          } else if (depth === itemDepth && itemStart < 0) itemStart = i;
          continue;
        }
        if (WS.has(c)) continue;
        if (top === 'object' && depth === 1) {
          if (c === 0x3a) {
            expectKey = false;
            awaitingValueOfEvents = key === 'traceEvents';
            continue;
          }
          if (c === 0x2c) {
            expectKey = true;
            continue;
          }
          if (c === 0x7d) {
            depth = 0;
            top = 'done';
            continue;
          }
          // Any other value at depth 1: track its brackets.
          if (c === 0x5b || c === 0x7b) depth++;
          continue;
        }
        if (depth === itemDepth && (c === 0x2c || c === 0x5d)) {
          if (itemStart >= 0) {
            starts.push(itemStart);
            ends.push(i);
            itemStart = -1;
          } else if (c === 0x2c) fail(`empty element in the event list (near character ${offset + i})`);
          if (c === 0x5d) {
            depth--;
            if (top === 'array') top = 'done';
            else itemDepth = -1;
          }
          continue;
        }
        if (c === 0x5b || c === 0x7b) {
          if (depth === itemDepth && itemStart < 0) itemStart = i;
          depth++;
        } else if (c === 0x5d || c === 0x7d) {
          depth--;
          if (depth < 0) fail(`unbalanced brackets (near character ${offset + i})`);
          if (top === 'object' && depth === 0) top = 'done';
        } else if (depth === itemDepth && itemStart < 0) itemStart = i; // a bare number / literal element
      }
      await emitRun(text, starts, ends);
      if (itemStart >= 0) {
        carry = text.slice(itemStart);
        if (carry.length > MAX_ITEM_CHARS) fail(`an event is larger than ${MAX_ITEM_CHARS >> 20} MB (near character ${offset + itemStart})`);
        offset += itemStart;
        itemStart = 0;
      } else {
        offset += text.length;
        carry = '';
      }
    }
  } finally {
    stream.destroy();
  }
  if (top === 'start') {
    if (options.lenient) return { shape: 'empty', hasEvents: false, items };
    fail('the file is empty');
  }
  if (top !== 'done' && !options.lenient) fail('the JSON ends early (truncated file?)');
  return { shape, hasEvents, items };
}

function describeStart(text: string, i: number): string {
  const c = text[i];
  if (c === '"') return 'a string';
  if (c === '{') return 'an object';
  if (c === 't' || c === 'f') return 'a boolean';
  if (c === 'n') return 'null';
  return 'a number';
}
