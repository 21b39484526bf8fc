/** A model loaded once for the tests of the enclosing describe(). */
import { after, before } from 'node:test';
import { LibreYOLO, type LibreYOLOModel, type LoadOptions } from '../../src/index.ts';
import { fixture } from './fixtures.ts';

/**
 * Loads `fixtureName` (a file of ../shared/fixtures; absent: the bundled model) before the enclosing
 * describe()'s tests and closes it after them; the tests read it through the returned function. Call
 * it in the describe() body, before any before() hook that uses the model.
 */
export function useModel(fixtureName?: string, options: LoadOptions = {}): () => LibreYOLOModel {
  let model: LibreYOLOModel | undefined;
  before(async () => {
    model = await LibreYOLO(fixtureName === undefined ? undefined : fixture(fixtureName), { progress: false, ...options });
  });
  after(async () => {
    await model?.close();
  });
  return () => {
    if (!model) throw new Error('useModel(): the model was read before its before() hook ran (call useModel() first in the describe body)');
    return model;
  };
}
