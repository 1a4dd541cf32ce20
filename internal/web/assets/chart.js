// Line plots on a canvas, drawn by hand: no charting library.

import { fmtClock, fmtSI } from './format.js';

// COLORS are the series colours, in the order series appear.
export const COLORS = ['#1f6feb', '#d97706', '#16a34a', '#db2777', '#7c3aed', '#0891b2', '#dc2626', '#65a30d', '#9333ea', '#ea580c'];

// HISTORY_MS is how long points are kept: the longest plot window.
export const HISTORY_MS = 30 * 60 * 1000;

// Chart draws time series on a canvas: the last span() milliseconds of
// each series, a y axis from 0 with round ticks, a legend below, the values
// under the mouse.
export class Chart {
  constructor(canvas, legend, unit, span) {
    this.canvas = canvas;
    this.legend = legend;
    this.unit = unit || '';
    this.span = span; // returns the window to show, in ms
    this.series = new Map(); // name -> {color, points: [[t, v]]}
    this.hover = null;
    this.tip = document.createElement('div');
    this.tip.className = 'tip';
    this.tip.hidden = true;
    canvas.parentElement.append(this.tip);
    canvas.addEventListener('mousemove', (e) => {
      const r = canvas.getBoundingClientRect();
      this.hover = e.clientX - r.left;
      this.draw();
    });
    canvas.addEventListener('mouseleave', () => { this.hover = null; this.draw(); });
  }

  // push adds one point per named value (null leaves a gap) and forgets
  // points older than the longest window.
  push(t, values) {
    for (const [name, v] of values) {
      let s = this.series.get(name);
      if (!s) {
        s = { color: COLORS[this.series.size % COLORS.length], points: [] };
        this.series.set(name, s);
      }
      s.points.push([t, v]);
    }
    for (const s of this.series.values()) {
      while (s.points.length && s.points[0][0] < t - HISTORY_MS) s.points.shift();
    }
    this.renderLegend();
  }

  renderLegend() {
    const names = [...this.series.keys()].join('\u0000');
    if (names === this.legendNames) return;
    this.legendNames = names;
    this.legend.replaceChildren(...[...this.series].map(([name, s]) => {
      const e = document.createElement('span');
      e.style.setProperty('--c', s.color);
      e.textContent = name;
      return e;
    }));
  }

  draw() {
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth;
    const h = c.clientHeight;
    if (w === 0 || h === 0) return;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const css = getComputedStyle(document.documentElement);
    const gridColor = css.getPropertyValue('--grid').trim() || '#eee';
    const muted = css.getPropertyValue('--muted').trim() || '#666';
    const pad = { l: 56, r: 12, t: 8, b: 22 };
    const pw = w - pad.l - pad.r;
    const ph = h - pad.t - pad.b;
    const windowMs = this.span();
    const now = Date.now();
    const t0 = now - windowMs;
    let ymax = 0;
    for (const s of this.series.values()) {
      for (const [t, v] of s.points) if (t >= t0 && v !== null && isFinite(v)) ymax = Math.max(ymax, v);
    }
    const ticks = niceTicks(ymax);
    const ytop = ticks[ticks.length - 1];
    const x = (t) => pad.l + ((t - t0) / windowMs) * pw;
    const y = (v) => pad.t + ph - (v / ytop) * ph;
    ctx.font = '11px system-ui, sans-serif';
    ctx.lineWidth = 1;
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    for (const v of ticks) {
      ctx.strokeStyle = gridColor;
      ctx.beginPath();
      ctx.moveTo(pad.l, Math.round(y(v)) + 0.5);
      ctx.lineTo(pad.l + pw, Math.round(y(v)) + 0.5);
      ctx.stroke();
      ctx.fillStyle = muted;
      ctx.fillText(fmtSI(v, this.unit), pad.l - 6, y(v));
    }
    const mins = windowMs / 60000;
    const step = mins <= 5 ? 1 : 5;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    for (let m = 0; m <= mins; m += step) {
      const tx = x(now - m * 60000);
      ctx.fillStyle = muted;
      ctx.fillText(m === 0 ? 'now' : '−' + m + ' min', Math.min(Math.max(tx, pad.l + 20), pad.l + pw - 14), pad.t + ph + 6);
    }
    let anyPoint = false;
    ctx.lineWidth = 1.5;
    for (const s of this.series.values()) {
      ctx.strokeStyle = s.color;
      ctx.beginPath();
      let pen = false;
      for (const [t, v] of s.points) {
        if (t < t0 || v === null || !isFinite(v)) { pen = false; continue; }
        anyPoint = true;
        if (pen) ctx.lineTo(x(t), y(v)); else ctx.moveTo(x(t), y(v));
        pen = true;
      }
      ctx.stroke();
    }
    if (!anyPoint) {
      ctx.fillStyle = muted;
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      ctx.fillText(this.series.size ? 'collecting samples…' : 'nothing to plot', pad.l + pw / 2, pad.t + ph / 2);
    }
    this.drawHover(ctx, x, pad, pw, ph, t0, windowMs, muted);
  }

  drawHover(ctx, x, pad, pw, ph, t0, windowMs, muted) {
    if (this.hover === null || this.hover < pad.l || this.hover > pad.l + pw || !this.series.size) {
      this.tip.hidden = true;
      return;
    }
    const t = t0 + ((this.hover - pad.l) / pw) * windowMs;
    const lines = [];
    let at = null;
    for (const [name, s] of this.series) {
      const p = nearest(s.points, t);
      if (!p || p[0] < t0) continue;
      at = at === null ? p[0] : at;
      lines.push(name + '  ' + fmtSI(p[1], this.unit));
    }
    if (at === null) { this.tip.hidden = true; return; }
    ctx.strokeStyle = muted;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(Math.round(x(at)) + 0.5, pad.t);
    ctx.lineTo(Math.round(x(at)) + 0.5, pad.t + ph);
    ctx.stroke();
    this.tip.textContent = fmtClock(at) + '\n' + lines.join('\n');
    this.tip.hidden = false;
    const left = x(at) + 10 + this.tip.offsetWidth > pad.l + pw ? x(at) - 10 - this.tip.offsetWidth : x(at) + 10;
    this.tip.style.left = left + 'px';
    this.tip.style.top = pad.t + 'px';
  }
}

function nearest(points, t) {
  let lo = 0;
  let hi = points.length - 1;
  if (hi < 0) return null;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid][0] < t) lo = mid + 1; else hi = mid;
  }
  if (lo > 0 && Math.abs(points[lo - 1][0] - t) < Math.abs(points[lo][0] - t)) lo--;
  return points[lo];
}

// niceTicks returns 0 and 3 to 6 round values up to at least max.
function niceTicks(max) {
  if (!(max > 0)) return [0, 1];
  const raw = max / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw);
  const ticks = [];
  for (let v = 0; v < max + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}
