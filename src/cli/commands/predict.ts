/** `libreyolo predict model=... source=... conf=0.25 save=true ...` */
import { Command, Option } from 'commander';
import { PREDICT_OPTIONS } from '../../predict/options.ts';
import { THREADS } from '../../runtime/threads.ts';
import { addTableFlags, ruleParser } from '../option-flags.ts';
import { DEFAULT_MODEL } from '../../assets.ts';
import { lazyAction } from '../lazy-action.ts';

/** The bundled shapes detector, so `libreyolo predict` works offline on a fresh install. */
export const DEFAULT_PREDICT_MODEL = DEFAULT_MODEL;

export function predictCommand(): Command {
  const cmd = new Command('predict')
    .description('Detect objects in an image, a folder, a URL or a list (key=value or --flag style); a segment model (LibreYOLO9t-seg.pt) also gives each object\'s mask.')
    .argument('[sources...]', 'image files, folders or URLs, one or several (default: the bundled sample image)')
    .option('--model <weights>', 'weights: a path, an exported .onnx, or a published name such as LibreYOLO9t.pt (the bundled shapes model by default)', DEFAULT_PREDICT_MODEL)
    .option('--task <task>', 'detect or segment (default: what the weights say; a -seg file or a mask head is segment)')
    .option('--source <source>', "image file, folder or URL, or a list as the original writes it: source=[a.jpg,b.jpg] (same as the positional arguments)");
  // Every predict option, its help and its check come from the library's table.
  addTableFlags(cmd, PREDICT_OPTIONS);
  return cmd
    .option('--threads <n>', 'ONNX Runtime threads (default: all cores)', ruleParser('threads', THREADS))
    .addOption(new Option('--json', 'print one JSON object (results only on stdout)').default(false))
    .action(lazyAction(async () => (await import('../actions/predict.ts')).runPredict));
}
