import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { cp, mkdir, mkdtemp, readFile, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { zipSync } from 'fflate';
import { LibreYOLOError } from '../../src/errors.ts';
import {
  ensureDataset, extractZipInto, loadDataset, loadDatasetConfig, loadSplit, resolveDatasetYaml,
} from '../../src/data/dataset.ts';
import { generateSynthDataset } from '../../src/data/synth.ts';

const quiet = { log: () => undefined };
let base: string;
let synth: string; // a small synthetic dataset: images/{train,val}, labels/{train,val}, data.yaml

function isError(code: string, re: RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof LibreYOLOError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, re);
    return true;
  };
}

before(async () => {
  base = await mkdtemp(join(tmpdir(), 'ly-dataset-'));
  synth = join(base, 'synth');
  await generateSynthDataset({ out: synth, seed: 1, train: 6, val: 3, imgsz: 64, classes: ['circle', 'square', 'star'] });
});

after(async () => { await rm(base, { recursive: true, force: true }); });

describe('dataset YAML resolution', () => {
  it('finds a YAML by path, by name without .yaml, by folder, and bundled names', async () => {
    const byPath = await resolveDatasetYaml(join(synth, 'data.yaml'));
    assert.equal(byPath.file, join(synth, 'data.yaml'));
    assert.equal(byPath.name, 'synth');
    assert.equal((await resolveDatasetYaml('data', { cwd: synth })).file, join(synth, 'data.yaml'));
    assert.equal((await resolveDatasetYaml(synth)).file, join(synth, 'data.yaml'));
    const coco = await resolveDatasetYaml('coco8', { cwd: base });
    assert.equal(coco.file, null);
    assert.match(coco.text, /coco8\.zip/);
    await assert.rejects(resolveDatasetYaml('nope', { cwd: base }), isError('data_not_found', /not a bundled dataset.*coco8/));
  });

  it('resolves the root (no path = the YAML folder) and the splits, and pairs labels', async () => {
    const cfg = await loadDatasetConfig(join(synth, 'data.yaml'));
    assert.equal(cfg.root, synth);
    assert.deepEqual(cfg.names, { 0: 'circle', 1: 'square', 2: 'star' });
    assert.equal(cfg.nc, 3);
    const split = await loadSplit(cfg, 'train', quiet);
    assert.equal(split.images.length, 6);
    assert.equal(split.labelFiles[0], join(synth, 'labels', 'train', '000000.txt'));
    assert.ok(split.instances > 0);
    assert.equal(split.instances, split.labels.reduce((s, l) => s + l.n, 0));
  });

  it('looks for a relative path under LIBREYOLO_DATASETS_DIR first, then beside the YAML', async () => {
    const dir = join(base, 'rel');
    await mkdir(join(dir, 'yamls'), { recursive: true });
    await cp(synth, join(dir, 'yamls', 'mydata'), { recursive: true });
    const yaml = join(dir, 'yamls', 'my.yaml');
    await writeFile(yaml, 'path: mydata\ntrain: images/train\nval: images/val\nnames: [circle, square, star]\n');
    const env = { LIBREYOLO_DATASETS_DIR: join(dir, 'datasets') };
    assert.equal((await loadDatasetConfig(yaml, { env })).root, join(dir, 'yamls', 'mydata'));
    await cp(synth, join(dir, 'datasets', 'mydata'), { recursive: true });
    const cfg = await loadDatasetConfig(yaml, { env });
    assert.equal(cfg.root, join(dir, 'datasets', 'mydata'));
    assert.deepEqual(cfg.splits.train, [join(dir, 'datasets', 'mydata', 'images', 'train')]);
  });

  it('accepts .txt image lists and {id: name} names', async () => {
    const yaml = join(synth, 'list.yaml');
    await writeFile(join(synth, 'train.txt'), './images/train/000001.png\nimages/train/000003.png\n');
    await writeFile(yaml, 'train: train.txt\nval: images/val\nnc: 3\nnames:\n  0: circle\n  1: square\n  2: star\n');
    const split = await loadDataset(yaml, 'train', quiet);
    assert.deepEqual(split.images, [join(synth, 'images/train/000001.png'), join(synth, 'images/train/000003.png')]);
    await writeFile(join(synth, 'train.txt'), 'images/train/000001.png\nimages/train/missing.png\n');
    await assert.rejects(loadDataset(yaml, 'train', quiet), isError('data_images_missing', /1 of the 2 images listed in .*train\.txt do not exist.*missing\.png/));
  });

  it('a .txt list counts links to images as images, and folders, dangling links and paths under a missing folder as missing', async () => {
    const d = join(base, 'listkinds');
    await mkdir(join(d, 'pics', 'folder.png'), { recursive: true });
    await symlink(join(synth, 'images', 'train', '000001.png'), join(d, 'pics', 'link.png'));
    await symlink(join(d, 'nowhere.png'), join(d, 'pics', 'dangling.png'));
    await writeFile(join(d, 'list.yaml'), 'train: list.txt\nval: list.txt\nnc: 3\nnames: [a, b, c]\n');
    await writeFile(join(d, 'list.txt'), 'pics/link.png\npics/folder.png\npics/dangling.png\nnot-a-folder/x.png\n');
    await assert.rejects(loadDataset(join(d, 'list.yaml'), 'train', quiet),
      isError('data_images_missing', /3 of the 4 images listed in .*list\.txt do not exist, e\.g\. .*folder\.png, .*dangling\.png, .*not-a-folder.x\.png$/));
    await writeFile(join(d, 'list.txt'), 'pics/link.png\n');
    assert.deepEqual((await loadDataset(join(d, 'list.yaml'), 'train', quiet)).images, [join(d, 'pics', 'link.png')]);
  });

  it('lists a split of 160k entries from a .txt list (no argument-spread stack overflow)', async () => {
    const n = 160_000;
    const d = join(base, 'biglist');
    await cp(synth, d, { recursive: true });
    // The six train images, repeated: oversampling by repetition is a valid list.
    const names = (await readdir(join(d, 'images', 'train'))).sort();
    await writeFile(join(d, 'big.txt'), Array.from({ length: n }, (_, i) => `images/train/${names[i % names.length]}`).join('\n'));
    await writeFile(join(d, 'big.yaml'), 'train: big.txt\nval: images/val\nnc: 3\nnames: [circle, square, star]\n');
    const split = await loadDataset(join(d, 'big.yaml'), 'train', quiet);
    assert.equal(split.images.length, n);
    assert.equal(split.labels.length, n);
    assert.equal(split.images[n - 1], join(d, 'images', 'train', names[(n - 1) % names.length]!));
  });

  it('rejects inconsistent YAMLs', async () => {
    const yaml = join(base, 'bad.yaml');
    await writeFile(yaml, `path: ${synth}\ntrain: images/train\nval: images/val\nnc: 4\nnames: [a, b, c]\n`);
    await assert.rejects(loadDatasetConfig(yaml), isError('data_invalid', /nc=4 does not match the 3 entries of names/));
    await writeFile(yaml, `path: ${synth}\ntrain: images/train\n`);
    await assert.rejects(loadDatasetConfig(yaml), isError('data_invalid', /'names' is required/));
    await writeFile(yaml, `path: ${synth}\ntrain: images/train\nnames: {0: a, 2: c}\n`);
    await assert.rejects(loadDatasetConfig(yaml), isError('data_invalid', /1 is missing/));
    await writeFile(yaml, 'train: [unclosed\n');
    await assert.rejects(loadDatasetConfig(yaml), isError('data_invalid', /not valid YAML/));
  });
});

describe('image/label pairing errors', () => {
  async function copy(name: string): Promise<string> {
    const d = join(base, name);
    await cp(synth, d, { recursive: true });
    return d;
  }

  it('a label file without an image', async () => {
    const d = await copy('orphan');
    await rm(join(d, 'images', 'train', '000002.png'));
    const cfg = await loadDatasetConfig(join(d, 'data.yaml'));
    await assert.rejects(loadSplit(cfg, 'train', quiet), isError('data_invalid', /1 label file\(s\) under .*labels\/train have no image .*000002\.txt/));
    const split = await loadSplit(cfg, 'train', { ...quiet, orphanLabels: 'ignore' });
    assert.equal(split.images.length, 5);
  });

  it('two images sharing a label file, a bad row, a class id >= nc', async () => {
    const d = await copy('dupes');
    await cp(join(d, 'images', 'train', '000001.png'), join(d, 'images', 'train', '000001.webp'));
    const cfg = await loadDatasetConfig(join(d, 'data.yaml'));
    await assert.rejects(loadSplit(cfg, 'train', quiet), isError('data_invalid', /share one label file .*000001\.txt/));
    await rm(join(d, 'images', 'train', '000001.webp'));
    const lab = join(d, 'labels', 'train', '000004.txt');
    await writeFile(lab, `${await readFile(lab, 'utf8')}0 0.5 0.5\n`);
    await assert.rejects(loadSplit(cfg, 'train', quiet), isError('data_invalid', /000004\.txt:\d+: expected 5 values/));
    await writeFile(lab, '3 0.5 0.5 0.1 0.1\n');
    await assert.rejects(loadSplit(cfg, 'train', quiet), isError('data_invalid', /000004\.txt:1: class id 3 is out of range: the dataset has nc=3/));
  });

  it('missing or empty image folders', async () => {
    const d = await copy('empty');
    await rm(join(d, 'images', 'val'), { recursive: true });
    await mkdir(join(d, 'images', 'val'));
    const cfg = await loadDatasetConfig(join(d, 'data.yaml'));
    await assert.rejects(loadSplit(cfg, 'val', quiet), isError('data_images_missing', /no images found in .*images\/val/));
    await rm(join(d, 'images'), { recursive: true });
    await assert.rejects(ensureDataset(cfg, quiet), isError('data_not_found', /do not exist or are empty, and the YAML has no download URL[\s\S]*libreyolo data synth/));
  });
});

describe('bundled datasets and download', () => {
  let server: Server;
  let url: string;
  const served = new Map<string, Uint8Array>();
  let requests = 0;

  before(async () => {
    const files: Record<string, Uint8Array> = {};
    for (const sub of ['images/train', 'images/val', 'labels/train', 'labels/val']) {
      for (const f of await readdir(join(synth, sub))) files[`ds/${sub}/${f}`] = await readFile(join(synth, sub, f));
    }
    served.set('/nested.zip', zipSync(files));
    const flat: Record<string, Uint8Array> = {};
    for (const [k, v] of Object.entries(files)) flat[k.slice('ds/'.length)] = v;
    served.set('/flat.zip', zipSync(flat));
    served.set('/evil.zip', zipSync({ '../escape.txt': new Uint8Array([1]) }));
    server = createServer((req, res) => {
      requests++;
      const body = served.get(req.url ?? '');
      if (!body) { res.writeHead(404); res.end('not found'); return; }
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': body.length });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const addr = server.address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  });

  after(async () => { await new Promise((r) => server.close(r)); });

  async function yamlFor(name: string, zip: string, pathKey = name): Promise<string> {
    const y = join(base, 'yamls', `${name}.yaml`);
    await mkdir(join(base, 'yamls'), { recursive: true });
    await writeFile(y, `path: ${pathKey}\ntrain: images/train\nval: images/val\nnames: [circle, square, star]\ndownload: ${url}/${zip}\n`);
    return y;
  }

  it('downloads and extracts a zip with one top folder into the datasets dir, once', async () => {
    const env = { LIBREYOLO_DATASETS_DIR: join(base, 'dl1') };
    const y = await yamlFor('nested', 'nested.zip');
    const before = requests;
    const split = await loadDataset(y, 'val', { env, ...quiet });
    assert.equal(split.config.root, join(base, 'dl1', 'nested'));
    assert.equal(split.images.length, 3);
    assert.equal(split.images[0], join(base, 'dl1', 'nested', 'images', 'val', '000000.png'));
    assert.ok(split.instances > 0);
    await loadDataset(y, 'train', { env, ...quiet });
    assert.equal(requests - before, 1, 'a dataset on disk is not downloaded again');
    assert.deepEqual((await readdir(join(base, 'dl1'))).sort(), ['nested'], 'no staging folder is left behind');
  });

  it('extracts a zip without a single top folder into the root', async () => {
    const env = { LIBREYOLO_DATASETS_DIR: join(base, 'dl2') };
    const split = await loadDataset(await yamlFor('flat', 'flat.zip'), 'train', { env, ...quiet });
    assert.equal(split.images.length, 6);
    assert.equal(split.config.root, join(base, 'dl2', 'flat'));
  });

  it('fails clearly on HTTP errors, refused connections, unsafe zips and when offline', async () => {
    const env = { LIBREYOLO_DATASETS_DIR: join(base, 'dl3') };
    await assert.rejects(loadDataset(await yamlFor('gone', 'gone.zip'), 'train', { env, ...quiet }),
      isError('data_not_found', /downloading http:\/\/127\.0\.0\.1:\d+\/gone\.zip failed \(HTTP 404[\s\S]*unzip it so that .*dl3\/gone\/images\/train exists[\s\S]*libreyolo data synth/));
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    const y = join(base, 'yamls', 'refused.yaml');
    await writeFile(y, `path: refused\ntrain: images/train\nnames: [a]\ndownload: http://127.0.0.1:${port}/x.zip\n`);
    await assert.rejects(loadDataset(y, 'train', { env, ...quiet }), isError('data_not_found', /failed \(fetch failed: ECONNREFUSED\)/));
    await assert.rejects(loadDataset(await yamlFor('evil', 'evil.zip'), 'train', { env, ...quiet }), isError('data_invalid', /unsafe path in zip entry '\.\.\/escape\.txt'/));
    const before = requests;
    await assert.rejects(loadDataset(await yamlFor('off', 'flat.zip'), 'train', { env: { ...env, HF_HUB_OFFLINE: '1' }, ...quiet }),
      isError('data_not_found', /HF_HUB_OFFLINE=1 forbids downloading http:\/\/127\.0\.0\.1:\d+\/flat\.zip/));
    assert.equal(requests, before, 'offline means no request at all');
  });

  it('a split other than train, val or test is refused before anything is downloaded', async () => {
    const env = { LIBREYOLO_DATASETS_DIR: join(base, 'dl4') };
    const before = requests;
    await assert.rejects(loadDataset(await yamlFor('splitname', 'flat.zip'), 'bogus' as 'val', { env, ...quiet }),
      isError('config_type_error', /^split must be train, val or test, got "bogus"$/));
    assert.equal(requests, before, 'no request for a split that cannot exist');
  });

  it('coco8 / coco128 resolve under the datasets dir and explain how to get them offline', async () => {
    const env = { LIBREYOLO_DATASETS_DIR: join(base, 'cocos'), HF_HUB_OFFLINE: '1' };
    for (const [name, split] of [['coco8', 'images/train'], ['coco128', 'images/train2017']] as const) {
      const cfg = await loadDatasetConfig(name, { env, cwd: base });
      assert.equal(cfg.root, join(base, 'cocos', name));
      assert.equal(cfg.nc, 80);
      assert.equal(cfg.names[0], 'person');
      assert.equal(cfg.download, `https://huggingface.co/datasets/LibreYOLO/${name}/resolve/main/${name}.zip`);
      await assert.rejects(ensureDataset(cfg, { env, ...quiet }), (e: unknown) => {
        assert.ok(e instanceof LibreYOLOError && e.code === 'data_not_found' && e.exitCode === 3);
        assert.ok(e.message.includes(`https://huggingface.co/datasets/LibreYOLO/${name}/resolve/main/${name}.zip`), e.message);
        assert.ok(e.message.includes(join(base, 'cocos', name, split)), e.message);
        assert.match(e.message, /libreyolo data synth --out/);
        return true;
      });
    }
    // coco128 uses the same images for train and val
    const c128 = await loadDatasetConfig('coco128', { env });
    assert.deepEqual(c128.splits.train, c128.splits.val);
  });

  it('a bundled name already on disk is used as is', async () => {
    const env = { LIBREYOLO_DATASETS_DIR: join(base, 'cocos2'), HF_HUB_OFFLINE: '1' };
    await mkdir(join(base, 'cocos2'), { recursive: true });
    await cp(synth, join(base, 'cocos2', 'coco8'), { recursive: true });
    const split = await loadDataset('coco8', 'val', { env, ...quiet });
    assert.equal(split.images.length, 3);
  });

  it('extractZipInto replaces an existing root atomically', async () => {
    const root = join(base, 'replace', 'r');
    await mkdir(root, { recursive: true });
    await writeFile(join(root, 'old.txt'), 'x');
    await extractZipInto(zipSync({ 'top/a.txt': new Uint8Array([65]) }), root);
    assert.deepEqual(await readdir(root), ['a.txt']);
    await rename(root, `${root}2`);
  });
});
