/** Every command's --help: one default per option, and JavaScript/CLI spelling (true/false), not Python's. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { listFamilies } from '../../src/models/index.ts';
import { runCli, type CliRun } from '../helpers/cli.ts';

const COMMANDS = [['predict'], ['export'], ['quantize'], ['train'], ['val'], ['data', 'synth'], ['data', 'check'], ['profile', 'infer'], ['profile', 'run'], ['doctor'], ['ui'], ['version'], ['checks'], ['models'], ['formats'], ['cfg'], ['info'], ['metadata'], ['track']];

/** Option entries of a commander help text, each with its wrapped description joined. */
function optionEntries(help: string): string[] {
  const entries: string[] = [];
  let inOptions = false;
  for (const line of help.split('\n')) {
    if (/^Options:/.test(line)) { inOptions = true; continue; }
    if (/^\S/.test(line)) inOptions = false;
    if (!inOptions || line.trim() === '') continue;
    if (/^ {2}-/.test(line)) entries.push(line.trim());
    else if (entries.length) entries[entries.length - 1] += ` ${line.trim()}`;
  }
  return entries;
}

describe('CLI help text', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'libreyolo-help-'));
  after(() => rmSync(cwd, { recursive: true, force: true }));
  // One child per command: the tests below read the same `export --help` / `predict --help` output.
  const helps = new Map<string, Promise<CliRun>>();
  const help = (cmd: string[]): Promise<CliRun> => {
    const key = cmd.join(' ');
    if (!helps.has(key)) helps.set(key, runCli([...cmd, '--help'], cwd));
    return helps.get(key)!;
  };

  for (const cmd of COMMANDS) {
    it(`libreyolo ${cmd.join(' ')} --help`, async () => {
      const r = await help(cmd);
      assert.equal(r.code, 0, r.stderr);
      const entries = optionEntries(r.stdout);
      assert.ok(entries.length >= 2, r.stdout);
      for (const e of entries) assert.ok((e.match(/\(default\b/g) ?? []).length <= 1, `two defaults: ${e}`);
      // A flag the CLI ignores says so and shows no default that reads as if it mattered.
      for (const e of entries.filter((x) => /accepted for compatibility/.test(x) && !/no-op \(warns\)/.test(x))) assert.doesNotMatch(e, /\(default:/, e);
      assert.doesNotMatch(r.stdout, /\b(True|False|None)\b/, 'Python spelling in the help');
    });
  }

  it('export --help states each family\'s opset and fixed-size export, from the family contract', async () => {
    const r = await help(['export']);
    assert.equal(r.code, 0, r.stderr);
    const text = optionEntries(r.stdout).join('\n');
    for (const f of listFamilies()) {
      if (f.exportOpset) assert.match(text, new RegExp(`${f.exportOpset} for ${f.displayName}`), f.name);
      if (f.staticExportSize) assert.match(text, new RegExp(`--dynamic .*batch only for [^)]*${f.displayName}`), f.name);
    }
    assert.match(r.stdout, /in its family's layout/);
  });

  it('predict --model names the bundled model once', async () => {
    const r = await help(['predict']);
    assert.equal(r.code, 0, r.stderr);
    const model = optionEntries(r.stdout).find((e) => e.startsWith('--model'))!;
    assert.match(model, /\(default: "LibreYOLO9t-shapes\.pt"\)$/);
  });
});
