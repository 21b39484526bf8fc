/**
 * The CLI starts small: importing its command table (src/cli/main.ts, what every `libreyolo` start
 * loads before a command runs) in a fresh process loads commander and the option tables, not the
 * commands' actions, the model loader, ONNX Runtime's or sharp's wrappers (each action is imported
 * when its command runs, so `--help`, `--version` and usage errors stay quick).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadedSrcModules } from '../helpers/loaded-modules.ts';

/** Modules an action loads that no command definition needs (the loader, the runtimes, the services). */
const ACTION_ONLY = ['load.ts', 'model.ts', 'runtime/environment.ts', 'runtime/onnx-model.ts', 'ui/server.ts', 'data/synth.ts', 'data/dataset.ts',
  'doctor/diagnose.ts', 'profile/load.ts', 'train/trainer.ts', 'val/validate.ts', 'weights/checkpoint.ts', 'graph/onnx.ts'];

describe('CLI start-up import', () => {
  it('loads the command definitions but no action, loader or runtime module', () => {
    const loaded = loadedSrcModules('src/cli/main.ts');
    assert.ok(loaded.includes('cli/commands/predict.ts') && loaded.includes('cli/commands/train.ts'), `the module log missed the commands: ${loaded.join(' ')}`);
    const heavy = loaded.filter((f) => f.startsWith('cli/actions/') || f.startsWith('app/') || ACTION_ONLY.includes(f));
    assert.deepEqual(heavy, [], `${loaded.length} src modules loaded`);
  });
});
