/**
 * The page `libreyolo ui` serves: one self-contained HTML document (inline CSS, script and logo; no
 * fonts, CDN or other request beyond this server's /api routes), so it works offline.
 */
export const UI_PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>LibreYOLO</title>
<link rel="icon" href="data:,">
<style>
:root { --bg: #0f1216; --panel: #171b21; --line: #2a313b; --text: #e6e9ee; --dim: #8d96a3; --accent: #3cb44b; --err: #e6194b; --run: #f58231; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; display: flex; flex-direction: column; min-height: 100vh; }
header { display: flex; align-items: center; gap: 12px; padding: 10px 16px; border-bottom: 1px solid var(--line); background: var(--panel); }
header b { font-size: 16px; letter-spacing: .3px; }
.tag { color: var(--dim); border: 1px solid var(--line); border-radius: 10px; padding: 1px 8px; font-size: 12px; }
header .grow { flex: 1; }
label { color: var(--dim); display: flex; align-items: center; gap: 6px; }
select, button { background: #222832; color: var(--text); border: 1px solid var(--line); border-radius: 6px; padding: 5px 10px; font: inherit; }
button { cursor: pointer; }
button:hover:not(:disabled) { border-color: var(--accent); }
button:disabled { opacity: .45; cursor: default; }
button.primary { background: var(--accent); border-color: var(--accent); color: #08110a; font-weight: 600; }
.toolbar { display: flex; align-items: center; gap: 10px; margin: 14px 16px 0; padding: 14px; border: 2px dashed var(--line); border-radius: 10px; }
.toolbar .hint { flex: 1; color: var(--dim); }
body.dragging .toolbar { border-color: var(--accent); background: rgba(60, 180, 75, .08); }
main { flex: 1; padding: 14px 16px; }
#grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 12px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
.card img { display: block; width: 100%; height: 170px; object-fit: contain; background: #0b0d10; }
.card .meta { display: flex; align-items: center; gap: 8px; padding: 6px 8px; font-size: 12px; }
.card .name { flex: 1; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.badge { border-radius: 8px; padding: 0 6px; font-size: 11px; background: #2a313b; }
.card[data-status=running] .badge { background: var(--run); color: #111; }
.card[data-status=rendered] .badge { background: var(--accent); color: #08110a; }
.card[data-status=error] .badge { background: var(--err); }
.caption { color: var(--dim); }
#empty { text-align: center; color: var(--dim); padding: 48px 0; display: flex; flex-direction: column; gap: 4px; }
#empty b { color: var(--text); font-size: 16px; }
.term { margin: 0 16px 14px; border: 1px solid var(--line); border-radius: 8px; background: #0b0d10; }
.termbar { display: flex; justify-content: space-between; align-items: center; padding: 4px 10px; color: var(--dim); border-bottom: 1px solid var(--line); font-size: 12px; }
.termbar button { padding: 1px 8px; font-size: 12px; }
#log { margin: 0; padding: 8px 10px; height: 170px; overflow-y: auto; font: 12px/1.45 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap; word-break: break-all; }
#log .ok { color: var(--accent); } #log .bad { color: var(--err); } #log .cmd { color: #42d4f4; }
#resultbar { display: flex; align-items: center; gap: 12px; margin: 0 16px 14px; padding: 8px 12px; border: 1px solid var(--accent); border-radius: 8px; }
#resultbar[hidden], #toast[hidden], #empty[hidden] { display: none; }
#resultbar span { flex: 1; }
#toast { position: fixed; bottom: 18px; left: 50%; transform: translateX(-50%); background: #222832; border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; }
</style>
</head>
<body>
<header>
  <svg width="26" height="26" viewBox="0 0 26 26" aria-hidden="true"><rect x="2" y="2" width="22" height="22" rx="5" fill="none" stroke="#3cb44b" stroke-width="2.5"/><rect x="8" y="8" width="10" height="10" rx="2" fill="#3cb44b"/></svg>
  <b>LibreYOLO</b>
  <span class="tag" id="hosttag"></span>
  <span class="grow"></span>
  <label>Model <select id="model"></select></label>
  <label>Conf <select id="conf"><option>0.25</option><option>0.40</option><option>0.50</option></select></label>
</header>
<section class="toolbar" id="drop">
  <span class="hint">Drop images or a folder, paste with Ctrl+V, or browse</span>
  <input type="file" id="files" multiple accept="image/*" hidden>
  <input type="file" id="folder" webkitdirectory multiple hidden>
  <button id="choose">Choose files</button>
  <button id="addfolder">Add folder</button>
  <button id="run" class="primary" disabled>Run inference</button>
</section>
<main>
  <div id="grid"></div>
  <div id="empty"><b>No images yet</b><span>Drop images or a folder, then hit Run inference</span></div>
</main>
<div id="resultbar" hidden><span id="resulttext"></span><button id="openfolder">Open results folder</button></div>
<section class="term">
  <div class="termbar"><span>libreyolo &mdash; inference</span><button id="clear">clear</button></div>
  <pre id="log"></pre>
</section>
<div id="toast" hidden></div>
<script>
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var cards = [];
  var running = false;
  var lastDir = null;
  var MAX_LINES = 800;
  $('hosttag').textContent = location.host;

  function logLine(text, cls) {
    var log = $('log');
    var el = document.createElement('div');
    if (cls) el.className = cls;
    el.textContent = text;
    log.appendChild(el);
    while (log.childNodes.length > MAX_LINES) log.removeChild(log.firstChild);
    log.scrollTop = log.scrollHeight;
    return el;
  }
  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }
  function typeCommand(text) {
    var el = logLine('$ ', 'cmd');
    var i = 0;
    return new Promise(function (resolve) {
      (function step() {
        if (i >= text.length) return setTimeout(resolve, 180);
        el.textContent += text[i++];
        setTimeout(step, 13);
      })();
    });
  }
  function toast(text) {
    var t = $('toast');
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(function () { t.hidden = true; }, 3500);
  }

  function refresh() {
    $('empty').hidden = cards.length > 0;
    $('run').disabled = running || !cards.some(function (c) { return c.status !== 'rendered'; });
    var done = cards.filter(function (c) { return c.status === 'rendered'; }).length;
    $('resultbar').hidden = done === 0;
    if (done) $('resulttext').textContent = done + ' rendered image' + (done === 1 ? '' : 's') + ' saved to ' + lastDir;
  }
  function setStatus(card, status, caption) {
    card.status = status;
    card.el.dataset.status = status;
    card.badge.textContent = status;
    card.caption.textContent = caption;
    refresh();
  }

  function addFile(file, fallbackName) {
    if (!file || !/^image\\//.test(file.type)) return;
    var name = file.name || fallbackName || 'pasted.png';
    var el = document.createElement('div');
    el.className = 'card';
    var img = document.createElement('img');
    img.alt = name;
    var meta = document.createElement('div');
    meta.className = 'meta';
    var nm = document.createElement('span');
    nm.className = 'name';
    nm.textContent = name;
    var badge = document.createElement('span');
    badge.className = 'badge';
    var caption = document.createElement('span');
    caption.className = 'caption';
    meta.appendChild(nm); meta.appendChild(caption); meta.appendChild(badge);
    el.appendChild(img); el.appendChild(meta);
    $('grid').appendChild(el);
    var card = { file: file, name: name, el: el, img: img, nameEl: nm, badge: badge, caption: caption, status: 'queued', size: '...' };
    img.onload = function () {
      if (card.status === 'queued' && img.src.indexOf('blob:') === 0) { card.size = img.naturalWidth + 'x' + img.naturalHeight; card.caption.textContent = card.size; }
    };
    img.src = URL.createObjectURL(file);
    cards.push(card);
    setStatus(card, 'queued', card.size);
  }
  function addFiles(list) { for (var i = 0; i < list.length; i++) addFile(list[i]); }

  function walkEntry(entry) {
    return new Promise(function (resolve) {
      if (entry.isFile) return entry.file(function (f) { addFile(f); resolve(); }, function () { resolve(); });
      if (!entry.isDirectory) return resolve();
      var reader = entry.createReader();
      var all = [];
      (function more() {
        reader.readEntries(function (batch) {
          if (!batch.length) return Promise.all(all.map(walkEntry)).then(function () { resolve(); });
          all = all.concat(Array.prototype.slice.call(batch));
          more();
        }, function () { resolve(); });
      })();
    });
  }

  async function inferCard(card, model, conf) {
    setStatus(card, 'running', '...');
    card.nameEl.title = '';
    await typeCommand('libreyolo predict --model ' + model + ' --source ' + card.name + ' --conf ' + conf + ' --save');
    var result = null;
    var error = null;
    try {
      var res = await fetch('/api/infer?model=' + encodeURIComponent(model) + '&conf=' + encodeURIComponent(conf), {
        method: 'POST', body: card.file, headers: { 'X-Filename': encodeURIComponent(card.name), 'Content-Type': 'application/octet-stream' },
      });
      if (!res.ok) {
        var body = await res.json().catch(function () { return {}; });
        throw new Error(body.error || ('HTTP ' + res.status));
      }
      if (!res.body || !res.body.getReader) throw new Error('streaming not supported');
      var reader = res.body.getReader();
      var decoder = new TextDecoder();
      var buffered = '';
      var handle = function (line) {
        if (!line.trim()) return;
        var msg = JSON.parse(line);
        if (msg.type === 'log') logLine(msg.line);
        else if (msg.type === 'result') result = msg;
        else if (msg.type === 'error') error = msg.error;
      };
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) break;
        buffered += decoder.decode(chunk.value, { stream: true });
        var lines = buffered.split('\\n');
        buffered = lines.pop();
        lines.forEach(handle);
      }
      handle(buffered + decoder.decode());
      if (!result && !error) error = 'no result returned';
    } catch (err) {
      error = err && err.message ? err.message : String(err);
    }
    if (result) {
      lastDir = result.dir;
      card.img.src = result.rendered;
      card.count = result.count;
      setStatus(card, 'rendered', result.count + ' obj');
      logLine('\\u2713 ' + card.name + ': ' + result.count + ' object(s)  \\u2192  ' + result.dir, 'ok');
    } else {
      card.nameEl.title = error;
      setStatus(card, 'error', 'failed');
      logLine('\\u2717 ' + card.name + ': ' + error, 'bad');
    }
  }

  async function runAll() {
    if (running) return;
    running = true;
    refresh();
    var model = $('model').value;
    var conf = $('conf').value;
    try {
      for (var i = 0; i < cards.length; i++) {
        if (cards[i].status !== 'rendered') await inferCard(cards[i], model, conf);
      }
    } finally {
      running = false;
      refresh();
    }
  }

  function requeue() {
    cards.forEach(function (c) { if (c.status === 'rendered') { c.img.src = URL.createObjectURL(c.file); setStatus(c, 'queued', c.size); } });
  }

  fetch('/api/models').then(function (r) { return r.json(); }).then(function (data) {
    fill(data.models, data.default);
  }).catch(function () { fill(['LibreYOLO9t-shapes'], 'LibreYOLO9t-shapes'); });
  function fill(models, def) {
    var sel = $('model');
    models.forEach(function (m) {
      var o = document.createElement('option');
      o.value = m; o.textContent = m;
      if (m === def) o.selected = true;
      sel.appendChild(o);
    });
  }

  $('choose').onclick = function () { $('files').click(); };
  $('addfolder').onclick = function () { $('folder').click(); };
  $('files').onchange = function (e) { addFiles(e.target.files); e.target.value = ''; };
  $('folder').onchange = function (e) { addFiles(e.target.files); e.target.value = ''; };
  $('run').onclick = runAll;
  $('clear').onclick = function () { $('log').textContent = ''; };
  $('model').onchange = requeue;
  $('conf').onchange = requeue;
  $('openfolder').onclick = function () {
    fetch('/api/open-folder', { method: 'POST' }).then(function (r) { return r.json(); }).then(function (d) {
      if (!d.ok) toast('Results folder: ' + (d.dir || lastDir));
    }).catch(function () { toast('Could not open the folder.'); });
  };
  var depth = 0;
  document.addEventListener('dragenter', function (e) { e.preventDefault(); depth++; document.body.classList.add('dragging'); });
  document.addEventListener('dragleave', function () { if (--depth <= 0) { depth = 0; document.body.classList.remove('dragging'); } });
  document.addEventListener('dragover', function (e) { e.preventDefault(); });
  document.addEventListener('drop', function (e) {
    e.preventDefault();
    depth = 0;
    document.body.classList.remove('dragging');
    var items = e.dataTransfer && e.dataTransfer.items;
    if (items && items.length && items[0].webkitGetAsEntry) {
      var entries = [];
      for (var i = 0; i < items.length; i++) { var en = items[i].webkitGetAsEntry(); if (en) entries.push(en); }
      entries.forEach(walkEntry);
    } else if (e.dataTransfer) addFiles(e.dataTransfer.files);
  });
  document.addEventListener('paste', function (e) {
    var files = e.clipboardData ? e.clipboardData.files : [];
    for (var i = 0; i < files.length; i++) addFile(files[i], 'pasted.png');
  });
  refresh();
})();
</script>
</body>
</html>
`;
