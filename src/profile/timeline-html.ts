/**
 * `timeline.html`: one self-contained page (no network: data, styles and script inline) showing a
 * profile as the original does: a canvas timeline of the analysis window with
 * lanes for steps, phases, host/JS spans, ORT kernels and memory (drag pans, the wheel zooms x1.2
 * about the pointer, hovering shows a tooltip), and a side panel with the verdict and its reason,
 * the figures, the kernel-category bars and the top kernels; an inference profile adds its latency
 * histogram with p50/p90/p99 marked. `compareHtml` puts two profiles' panels and the deltas side by
 * side.
 */
import { pyFixed } from './pyfmt.ts';
import { compareReader } from './readers/compare.ts';
import type { ProfileAnalysis } from './schema.ts';
import type { TimelineData } from './timeline-data.ts';

/** The original's phase colours; inference stages get their own. */
export const PHASE_COLOURS: Record<string, string> = {
  dataload: '#e67e22', to_device: '#f1c40f', forward: '#3498db', backward: '#9b59b6', optimizer: '#2ecc71',
  preprocess: '#1abc9c', postprocess: '#e74c3c', unphased: '#95a5a6',
};

const esc = (s: unknown): string => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** JSON safe inside a <script> element. */
const scriptJson = (v: unknown): string => JSON.stringify(v).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
const num = (x: unknown): string => (x === null || x === undefined ? '?' : typeof x === 'number' ? String(x) : esc(x));

function verdictColour(bound: string): string {
  if (bound === 'dataloader') return '#c0392b';
  if (bound === 'compute') return '#27ae60';
  return '#d35400';
}

/** The side panel (server-rendered, so the compare page shares it). */
export function panelHtml(a: ProfileAnalysis): string {
  const cfg = a.config ?? {};
  const inference = a.mode === 'inference';
  const rows: Array<[string, string]> = [
    [a.notes?.some((n) => n.startsWith('cpu:')) ? 'device busy (ORT kernels)' : 'device busy', `${pyFixed((a.gpu_util ?? 0) * 100, 0)}%`],
    ['busy / step', `${num(a.gpu_busy_ms_per_step)} ms`],
    ['ms / step', `${num(a.step_ms)} ms`],
    ['img/s', num(a.img_per_s)],
    ['kernels / step', `${num(a.kernels_per_step)} @ ~${pyFixed(a.mean_kernel_us ?? 0, 0)} us`],
    ['host overhead', `${num(a.host_overhead_ms_per_step)} ms/step`],
    ['memcpy', `${num(a.memcpy_ms_per_step)} ms/step`],
    ['peak memory', `${num(a.peak_vram_mb)} MB${a.peak_rss_mb !== undefined && a.peak_rss_mb !== null ? ` (RSS ${num(a.peak_rss_mb)} MB)` : ''}`],
    ['Tensor Cores', `${num(a.tensorcore_pct)}%`],
  ];
  if (inference && a.latency) rows.push(['latency p50 / p90 / p99', `${num(a.latency.p50_ms)} / ${num(a.latency.p90_ms)} / ${num(a.latency.p99_ms)} ms`]);
  if (inference && a.stages_ms) rows.push(['stages', `pre ${num(a.stages_ms.preprocess)} | fwd ${num(a.stages_ms.forward)} | post ${num(a.stages_ms.postprocess)} ms`]);
  const cats = (a.categories ?? []).map((c) => `<div class="bar"><span class="bl">${esc(c.name)}</span><span class="bt"><span class="bf" style="width:${Math.max(0, Math.min(100, c.pct))}%"></span></span><span class="bv">${num(c.pct)}%</span></div>`).join('');
  const top = (a.top_kernels ?? []).map((k) => `<tr><td>${num(k.pct_of_gpu)}%</td><td>${num(k.ms_per_step)} ms</td><td>x${num(k.count_per_step)}</td><td>${esc(k.kernel)}</td></tr>`).join('');
  return `<div class="panel">
<h2>${esc(a.model ?? 'profile')} <small>${esc(inference ? 'inference' : 'training')} · ${esc(cfg.device ?? '')} · batch ${esc(cfg.batch ?? '?')} · imgsz ${esc(Array.isArray(cfg.imgsz) ? cfg.imgsz.join('x') : cfg.imgsz ?? '?')}</small></h2>
<div class="verdict" style="border-color:${verdictColour(a.bound)}"><b class="bound" style="color:${verdictColour(a.bound)}">${esc(String(a.bound).toUpperCase())}</b><div class="why">${esc(a.bound_why)}</div></div>
${a.memory_pressure ? '<div class="warn">MEMORY-PRESSURE: utilisation and throughput here are unreliable</div>' : ''}
<table class="figs">${rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${v}</td></tr>`).join('')}</table>
${inference ? '<h3>latency</h3><canvas class="hist" width="300" height="110"></canvas>' : ''}
<h3>kernel mix</h3>${cats || '<div class="none">no kernels</div>'}
<h3>top kernels / step</h3><table class="top">${top || '<tr><td>none</td></tr>'}</table>
${(a.notes ?? []).map((n) => `<div class="note">${esc(n)}</div>`).join('')}
</div>`;
}

const STYLE = `*{box-sizing:border-box}body{margin:0;font:12px/1.4 system-ui,sans-serif;background:#1e1f22;color:#ddd;display:flex;height:100vh;overflow:hidden}
#main{flex:1;display:flex;flex-direction:column;min-width:0}#bar{padding:6px 10px;background:#2b2d31;display:flex;gap:16px;align-items:center;white-space:nowrap}
#bar>*{flex:none}#bar .info{flex:1 1 0;min-width:0;overflow:hidden;text-overflow:ellipsis}#range{min-width:13em}
#tl{flex:1;width:100%;display:block;cursor:grab}#tl.drag{cursor:grabbing}#tip{position:fixed;pointer-events:none;background:#000d;color:#fff;padding:4px 6px;border-radius:3px;display:none;max-width:420px;white-space:pre}
.panel{width:360px;overflow:auto;padding:10px 12px;background:#26282c;border-left:1px solid #3a3c40}.panel h2{font-size:15px;margin:2px 0 8px}.panel h2 small{display:block;font-weight:normal;color:#aaa}
.panel h3{font-size:12px;margin:12px 0 4px;color:#aaa;text-transform:uppercase}.verdict{border-left:4px solid;padding:4px 8px;background:#1e1f22}.why{color:#ccc}
.warn{color:#e74c3c;font-weight:bold;margin:6px 0}.figs,.top{border-collapse:collapse;width:100%;margin-top:8px}.figs th{text-align:left;font-weight:normal;color:#aaa;padding:1px 6px 1px 0}
.top td{padding:1px 4px;border-bottom:1px solid #333}.bar{display:flex;align-items:center;gap:6px;margin:2px 0}.bl{width:110px}.bt{flex:1;height:9px;background:#333}.bf{display:block;height:100%;background:#3498db}
.bv{width:44px;text-align:right}.note{color:#999;font-size:11px;margin-top:6px}.legend span{display:inline-block;width:10px;height:10px;margin:0 3px 0 8px;vertical-align:middle}`;

/** The page's script: draws the lanes and the histogram, handles pan, zoom and tooltips. */
const SCRIPT = String.raw`(() => {
const D = JSON.parse(document.getElementById('data').textContent);
const T = D.timeline, C = D.colours, LANES = ['steps', 'phases', 'host / JS', 'ORT kernels', 'memory'];
const cv = document.getElementById('tl'), ctx = cv.getContext('2d'), tip = document.getElementById('tip'), range = document.getElementById('range');
const LABEL = 96, AXIS = 22, PAD = 6, MIN_ROW = 12, MAX_ROW = 44, MEM_ROWS = 4, MEM_MIN = 60;
let ROW = 14;
let v0 = 0, v1 = T.total_ms || 1, W = 0, H = 0, layout = [];
const col = (s) => C[s.p] || (s.l === 0 ? '#7f8c8d' : s.l === 2 ? '#16a085' : '#95a5a6');
// Lanes fill the canvas: every row of every lane at one row height (between MIN_ROW and MAX_ROW),
// fewer rows for the host and kernel lanes only when they would not fit; the memory chart takes the rest.
function lanes() {
  const avail = Math.max(0, H - AXIS - 5 * PAD);
  const rows = [0, 1, 2, 3].map((l) => Math.max(1, T.lane_rows[l] || 0));
  let fit = Math.floor(avail / (rows.reduce((a, b) => a + b, 0) + MEM_ROWS));
  if (fit < MIN_ROW) {
    fit = MIN_ROW;
    const spare = Math.max(2, Math.floor(avail / MIN_ROW) - MEM_ROWS - rows[0] - rows[1]), deep = rows[2] + rows[3];
    rows[2] = Math.max(1, Math.floor(spare * rows[2] / deep)); rows[3] = Math.max(1, spare - rows[2]);
  }
  ROW = Math.min(fit, MAX_ROW);
  let y = AXIS; layout = [];
  for (let l = 0; l < 4; l++) { const h = rows[l] * ROW + PAD; layout.push({ y, h, rows: rows[l] }); y += h; }
  layout.push({ y, h: Math.max(MEM_MIN, H - y), rows: 1 });
  return H;
}
function size() {
  const dpr = window.devicePixelRatio || 1; W = cv.clientWidth; H = cv.clientHeight;
  cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr); ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
}
const xOf = (t) => LABEL + (t - v0) / (v1 - v0) * (W - LABEL);
const tOf = (x) => v0 + (x - LABEL) / (W - LABEL) * (v1 - v0);
function rowY(s) { const L = layout[s.l]; return L.y + PAD / 2 + (s.r % Math.max(L.rows, 1)) * ROW; }
function draw() {
  ctx.fillStyle = '#1e1f22'; ctx.fillRect(0, 0, W, H);
  lanes();
  for (let l = 0; l < 5; l++) { const L = layout[l]; ctx.fillStyle = l % 2 ? '#232428' : '#26282c'; ctx.fillRect(0, L.y, W, L.h); ctx.fillStyle = '#bbb'; ctx.font = '11px system-ui'; ctx.fillText(LANES[l], 6, L.y + 13); }
  ctx.save(); ctx.beginPath(); ctx.rect(LABEL, 0, W - LABEL, H); ctx.clip();
  for (const s of T.spans) {
    if (s.t + s.d < v0 || s.t > v1) continue;
    const x = xOf(s.t), w = Math.max(1, xOf(s.t + s.d) - x), y = rowY(s);
    ctx.fillStyle = col(s); ctx.fillRect(x, y, w, ROW - 2);
    if (w > 40) { const fs = Math.min(12, ROW - 4); ctx.fillStyle = '#000'; ctx.font = fs + 'px system-ui'; ctx.fillText(s.n.slice(0, Math.floor(w / (fs * 0.6))), x + 2, y + (ROW - 2) / 2 + fs * 0.35); }
  }
  const M = T.memory, L = layout[4];
  if (M.length) {
    let lo = Infinity, hi = -Infinity; for (const [, mb] of M) { lo = Math.min(lo, mb); hi = Math.max(hi, mb); }
    if (hi - lo < 1) { hi += 0.5; lo -= 0.5; }
    ctx.strokeStyle = '#e67e22'; ctx.lineWidth = 1.5; ctx.beginPath();
    M.forEach(([t, mb], k) => { const x = xOf(t), y = L.y + L.h - 6 - (mb - lo) / (hi - lo) * (L.h - 14); k ? ctx.lineTo(x, y) : ctx.moveTo(x, y); });
    ctx.stroke(); ctx.fillStyle = '#bbb'; ctx.font = '11px system-ui';
    ctx.fillText(hi.toFixed(0) + ' MB', LABEL + 4, L.y + 13); ctx.fillText(lo.toFixed(0) + ' MB', LABEL + 4, L.y + L.h - 8);
  }
  ctx.restore();
  ctx.fillStyle = '#2b2d31'; ctx.fillRect(LABEL, 0, W - LABEL, AXIS); ctx.fillStyle = '#ccc'; ctx.font = '10px system-ui';
  const span = v1 - v0, step = Math.pow(10, Math.floor(Math.log10(span / 6))), tick = span / step > 30 ? step * 5 : span / step > 12 ? step * 2 : step;
  for (let t = Math.ceil(v0 / tick) * tick; t <= v1; t += tick) { const x = xOf(t); ctx.fillRect(x, AXIS - 5, 1, 5); ctx.fillText((+t.toFixed(4)) + ' ms', x + 2, 12); }
  range.textContent = v0.toFixed(3) + ' - ' + v1.toFixed(3) + ' ms';
}
function hit(x, y) {
  const t = tOf(x), tol = (v1 - v0) / (W - LABEL) * 2;
  for (let k = T.spans.length - 1; k >= 0; k--) { const s = T.spans[k], ry = rowY(s); if (y >= ry && y < ry + ROW - 2 && t >= s.t - tol && t <= s.t + s.d + tol) return s; }
  return null;
}
let drag = null;
cv.addEventListener('mousedown', (e) => { drag = { x: e.clientX, v0, v1 }; cv.classList.add('drag'); });
window.addEventListener('mouseup', () => { drag = null; cv.classList.remove('drag'); });
window.addEventListener('mousemove', (e) => {
  const r = cv.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
  if (drag) { const dt = (e.clientX - drag.x) / (W - LABEL) * (drag.v1 - drag.v0); v0 = drag.v0 - dt; v1 = drag.v1 - dt; draw(); }
  const s = x > LABEL && y >= 0 && y <= r.height ? hit(x, y) : null;
  if (s) { tip.style.display = 'block'; tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px';
    tip.textContent = s.n + '\n' + LANES[s.l] + (s.p ? ' · ' + s.p : '') + '\nstart ' + s.t.toFixed(3) + ' ms · ' + (s.d * 1000).toFixed(1) + ' us'; }
  else tip.style.display = 'none';
});
cv.addEventListener('wheel', (e) => {
  e.preventDefault(); const r = cv.getBoundingClientRect(), t = tOf(e.clientX - r.left), f = e.deltaY > 0 ? 1.2 : 1 / 1.2;
  v0 = t - (t - v0) * f; v1 = t + (v1 - t) * f; draw();
}, { passive: false });
cv.addEventListener('dblclick', () => { v0 = 0; v1 = T.total_ms || 1; draw(); });
window.addEventListener('resize', () => { size(); draw(); });
function hist() {
  const h = document.querySelector('.hist'), xs = D.latency_samples; if (!h) return;
  const g = h.getContext('2d'); g.fillStyle = '#1e1f22'; g.fillRect(0, 0, h.width, h.height); g.font = '10px system-ui';
  if (!xs || !xs.length) { g.fillStyle = '#999'; g.fillText('no latency samples in this profile', 8, 20); return; }
  let lo = Infinity, hi = -Infinity; for (const x of xs) { lo = Math.min(lo, x); hi = Math.max(hi, x); } if (hi - lo < 1e-6) hi = lo + 1;
  const B = 30, bins = new Array(B).fill(0); for (const x of xs) bins[Math.min(B - 1, Math.floor((x - lo) / (hi - lo) * B))]++;
  const top = bins.reduce((m, c) => Math.max(m, c), 1), bw = (h.width - 10) / B, X = (ms) => 5 + (ms - lo) / (hi - lo) * (h.width - 10);
  g.fillStyle = '#3498db'; bins.forEach((c, k) => g.fillRect(5 + k * bw, h.height - 16 - c / top * (h.height - 34), bw - 1, c / top * (h.height - 34)));
  // A marker's label sits right of it, or left when it would run past the canvas edge (p99 is often the maximum).
  labels = [];
  for (const [k, c] of [['p50', '#2ecc71'], ['p90', '#f1c40f'], ['p99', '#e74c3c']]) {
    const ms = D.latency[k + '_ms']; if (ms == null) continue;
    const x = Math.round(X(ms)), tw = g.measureText(k).width, lx = x + 4 + tw <= h.width - 2 ? x + 4 : x - 2 - tw;
    g.fillStyle = c; g.fillRect(x, 12, 2, h.height - 28); g.fillText(k, lx, 10 + (k === 'p90' ? 10 : k === 'p99' ? 20 : 0));
    labels.push({ k, x: lx, w: tw });
  }
  g.fillStyle = '#aaa'; g.textAlign = 'left'; g.fillText(lo.toFixed(1) + ' ms', 4, h.height - 4); g.textAlign = 'right'; g.fillText(hi.toFixed(1) + ' ms', h.width - 4, h.height - 4); g.textAlign = 'left';
}
let labels = [];
size(); draw(); hist();
// For tests and curious users: the visible range, the lanes' extents and the histogram labels.
window.__timeline = { view: () => ({ t0: v0, t1: v1 }), spans: T.spans.length, layout: () => ({ height: H, row: ROW, lanes: layout.map((L) => ({ y: L.y, h: L.h, rows: L.rows })) }), histLabels: () => labels };
})();`;

export interface TimelineInput {
  profile: ProfileAnalysis;
  timeline: TimelineData | null;
  /** Per-call latencies (ms) of an inference profile, for the histogram. */
  latencySamples?: number[] | null;
}

export function timelineHtml(o: TimelineInput): string {
  const a = o.profile;
  const t = o.timeline ?? { total_ms: 1, spans: [], lane_rows: [0, 0, 0, 0], memory: [], dropped: { kernels: 0, host_ops: 0 } };
  const data = { timeline: t, colours: PHASE_COLOURS, latency: a.latency ?? null, latency_samples: o.latencySamples ?? null };
  const present = [...new Set(t.spans.map((s) => s.p).filter(Boolean))];
  const legend = present.map((p) => `<span style="background:${PHASE_COLOURS[p] ?? '#95a5a6'}"></span>${esc(p)}`).join('');
  const capped = t.dropped.kernels || t.dropped.host_ops
    ? ` · drawn: the ${t.spans.filter((s) => s.l === 3).length} longest kernels (${t.dropped.kernels} shorter not drawn), ${t.spans.filter((s) => s.l === 2).length} longest host spans` : '';
  const info = t.spans.length ? `window of ${a.window?.real_steps ?? '?'} steps${capped}` : 'no trace: timeline empty';
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>LibreYOLO profile - ${esc(a.model ?? '')}</title>
<style>${STYLE}</style></head>
<body><div id="main"><div id="bar"><b>LibreYOLO ${esc(a.mode === 'inference' ? 'inference' : 'training')} profile</b><span id="range"></span>
<span class="legend">${legend}</span><span class="info" title="${esc(info)}">${esc(info)}</span>
<span style="color:#888">drag to pan · wheel to zoom · double-click to reset</span></div>
<canvas id="tl"></canvas></div>
${panelHtml(a)}
<div id="tip"></div>
<script type="application/json" id="data">${scriptJson(data)}</script>
<script>${SCRIPT}</script>
</body></html>
`;
}

/** `profile compare --html`: both panels and the deltas table side by side. */
export function compareHtml(a: ProfileAnalysis, b: ProfileAnalysis, beforePath: string, afterPath: string): string {
  const cmp = compareReader(a, b, beforePath, afterPath);
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>LibreYOLO profile compare</title>
<style>${STYLE} body{height:auto;min-height:100vh;overflow:auto}.panel{height:auto}#deltas{flex:1;padding:12px 16px}#deltas pre{font:12px/1.5 ui-monospace,monospace;white-space:pre-wrap}</style></head>
<body><div><h3 style="margin:10px 12px">before: ${esc(beforePath)}</h3>${panelHtml(a)}</div>
<div id="deltas"><h2>before -> after</h2><pre>${esc(cmp.text)}</pre></div>
<div><h3 style="margin:10px 12px">after: ${esc(afterPath)}</h3>${panelHtml(b)}</div>
</body></html>
`;
}
