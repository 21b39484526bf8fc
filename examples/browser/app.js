// The demo page: loads the chosen model in the browser build, detects on a dropped or chosen image,
// the sample, or webcam frames, and draws the boxes with the timings of each run.
import * as libreyolo from '/dist/libreyolo.js';

const $ = (id) => document.getElementById(id);
const canvas = $('canvas');
const status = $('status');
let model = null;
let loading = null;
let webcam = null;

const say = (text) => { status.textContent = text; };

async function currentModel() {
  const name = $('model').value;
  if (model?.name === name) return model.m;
  loading ??= (async () => {
    await model?.m.close();
    model = null;
    say(`loading ${name}…`);
    const t0 = performance.now();
    const m = await libreyolo.LibreYOLO(name);
    model = { name, m, loadMs: performance.now() - t0 };
    return m;
  })().finally(() => { loading = null; });
  return loading;
}

/** Detects on `source` (anything the browser build's predict takes) and draws it with its boxes. */
async function detect(source, image) {
  const m = await currentModel();
  const t0 = performance.now();
  const r = await m.predict(source, { conf: Number($('conf').value) });
  const ms = performance.now() - t0;
  canvas.width = r.orig_shape[1];
  canvas.height = r.orig_shape[0];
  canvas.getContext('2d').drawImage(image ?? source, 0, 0);
  libreyolo.drawResults(canvas, r);
  const info = await libreyolo.runtimeInfo();
  const s = r.speed;
  say(`${r.boxes.length} detections: ${r.summary().map((d) => `${d.name} ${d.confidence.toFixed(2)}`).join(', ') || 'none'}\n`
    + `${ms.toFixed(0)} ms (preprocess ${s.preprocess.toFixed(1)}, inference ${s.inference.toFixed(1)}, postprocess ${s.postprocess.toFixed(1)} ms); `
    + `model ${model.name} loaded in ${model.loadMs.toFixed(0)} ms; WASM ${info.numThreads} thread(s), cross-origin isolated ${info.crossOriginIsolated}`);
  window.lastResults = r;
  return r;
}

async function fromFile(file) {
  const bitmap = await createImageBitmap(file);
  try {
    await detect(bitmap);
  } finally {
    bitmap.close();
  }
}

const report = (p) => p.catch((e) => { say(`error: ${e.message}`); console.warn(e); });

$('file').onchange = () => $('file').files[0] && report(fromFile($('file').files[0]));
$('sample').onclick = () => report((async () => {
  const img = new Image();
  img.src = '/assets/sample.jpg';
  await img.decode();
  await detect(img);
})());
$('model').onchange = () => report(currentModel().then(() => say(`${model.name} ready`)));
const drop = $('drop');
drop.ondragover = (e) => { e.preventDefault(); drop.classList.add('over'); };
drop.ondragleave = () => drop.classList.remove('over');
drop.ondrop = (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  const file = e.dataTransfer.files[0];
  if (file) report(fromFile(file));
};
$('webcam').onclick = () => report((async () => {
  if (webcam) {
    webcam.getTracks().forEach((t) => t.stop());
    webcam = null;
    $('webcam').textContent = 'Start webcam';
    return;
  }
  const video = $('video');
  webcam = await navigator.mediaDevices.getUserMedia({ video: true });
  video.srcObject = webcam;
  await video.play();
  $('webcam').textContent = 'Stop webcam';
  while (webcam) await detect(video);
})());

window.libreyolo = libreyolo;
report(currentModel().then(() => say(`${model.name} ready: drop an image, pick one, or start the webcam`)));
