/**
 * Public method names: camelCase; the original's snake_case names (capture_graph, graph_info,
 * release_graphs) are aliases that call their camelCase twin.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LibreYOLOModel } from '../../src/model.ts';

const camel = (name: string): string => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

describe('LibreYOLOModel method names', () => {
  const proto = LibreYOLOModel.prototype as unknown as Record<string, unknown>;
  const methods = Object.getOwnPropertyNames(LibreYOLOModel.prototype).filter((n) => {
    const d = Object.getOwnPropertyDescriptor(LibreYOLOModel.prototype, n)!;
    return n !== 'constructor' && typeof d.value === 'function';
  });
  const snake = methods.filter((n) => n.includes('_'));

  it('keeps the original snake_case names as aliases', () => {
    assert.deepEqual(snake.sort(), ['capture_graph', 'graph_info', 'release_graphs']);
  });

  it('gives every snake_case alias a camelCase twin that it calls', async () => {
    for (const alias of snake) {
      const twin = camel(alias);
      assert.equal(typeof proto[twin], 'function', `${alias} has no ${twin}`);
      const seen: unknown[] = [];
      const self = { [twin]: (...args: unknown[]) => { seen.push(args); return 'twin'; } };
      assert.equal(await (proto[alias] as (...a: unknown[]) => unknown).call(self, { imgsz: 64 }), 'twin', alias);
      assert.equal(seen.length, 1, `${alias} calls ${twin} once`);
    }
  });

  it('names every other method in camelCase', () => {
    assert.deepEqual(methods.filter((n) => !n.includes('_') && /[^a-zA-Z0-9]/.test(n)), []);
  });
});
