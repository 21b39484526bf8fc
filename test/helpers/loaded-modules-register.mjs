// `node --import` target: registers loaded-modules-hooks.mjs (see loaded-modules.ts).
import { register } from 'node:module';

register('./loaded-modules-hooks.mjs', import.meta.url);
