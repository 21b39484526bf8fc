// Module hooks for loaded-modules.ts: each module Node loads is appended to $LOADED_MODULES_LOG.
import { appendFileSync } from 'node:fs';

export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context);
  if (process.env.LOADED_MODULES_LOG) appendFileSync(process.env.LOADED_MODULES_LOG, `${url}\n`);
  return result;
}
