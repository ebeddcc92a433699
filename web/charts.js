// Line charts drawn as inline SVG (no library): one chart per figure, a
// polyline per series, broken where a value is missing (null).
import { el } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 340;
const H = 140;
const PAD = { left: 48, right: 8, top: 8, bottom: 18 };

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function clock(ms) {
  const d = new Date(ms);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

// Runs of consecutive non-null points: [[x, y], ...] per run.
function runs(points) {
  const out = [];
  let run = [];
  for (const p of points) {
    if (p[1] === null || p[1] === undefined) {
      if (run.length) out.push(run);
      run = [];
    } else {
      run.push(p);
    }
  }
  if (run.length) out.push(run);
  return out;
}

// chart: {id, title, format(v) → text, series: [{name, points: [[time_ms, value|null]]}]}
export function lineChart({ id, title, format, series }) {
  const times = series.flatMap((s) => s.points.map((p) => p[0]));
  const values = series.flatMap((s) => s.points.map((p) => p[1]).filter((v) => v !== null && v !== undefined));
  const t1 = times.length ? Math.max(...times) : Date.now();
  const t0 = times.length ? Math.min(...times) : t1 - 1;
  const top = Math.max(...values, 0) * 1.1 || 1;
  const x = (t) => PAD.left + ((W - PAD.left - PAD.right) * (t - t0)) / Math.max(t1 - t0, 1);
  const y = (v) => H - PAD.bottom - ((H - PAD.top - PAD.bottom) * v) / top;

  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  for (const v of [0, top / 2, top]) {
    root.append(svg('line', { class: 'grid', x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v) }));
    root.append(svg('text', { class: 'axis', x: PAD.left - 4, y: y(v) + 4, 'text-anchor': 'end' }, format(v)));
  }
  root.append(svg('text', { class: 'axis', x: PAD.left, y: H - 4 }, clock(t0)));
  root.append(svg('text', { class: 'axis', x: W - PAD.right, y: H - 4, 'text-anchor': 'end' }, clock(t1)));
  series.forEach((s, n) => {
    const g = svg('g', { class: `series series-${n}`, 'data-series': s.name });
    for (const run of runs(s.points)) {
      if (run.length === 1) {
        g.append(svg('circle', { cx: x(run[0][0]), cy: y(run[0][1]), r: 2 }));
      } else {
        g.append(svg('polyline', { points: run.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ') }));
      }
    }
    root.append(g);
  });

  const last = (s) => [...s.points].reverse().find((p) => p[1] !== null && p[1] !== undefined);
  const legend = el('div', { class: 'chart-legend' }, ...series.map((s, n) => {
    const l = last(s);
    return el('span', { class: `key series-${n}` }, `${s.name} ${l ? format(l[1]) : '–'}`);
  }));
  return el('figure', { class: 'chart', 'data-chart': id }, el('figcaption', {}, title), root, legend);
}
