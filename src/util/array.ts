/**
 * Appends `items` to `target` one by one. `target.push(...items)` passes every element as a call
 * argument and overflows the stack past about 100k of them, which a folder, a list file or one
 * image's boxes can reach.
 */
export function appendAll<T>(target: T[], items: Iterable<T>): T[] {
  for (const item of items) target.push(item);
  return target;
}
