// The Prometheus text exposition format, as /metrics serves it, and the
// rates derived from two successive scrapes.

// parseMetrics reads the Prometheus text exposition format into a map from
// metric name to its samples ({labels, value}).
export function parseMetrics(text) {
  const out = new Map();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line[0] === '#') continue;
    let i = 0;
    while (i < line.length && line[i] !== '{' && line[i] !== ' ' && line[i] !== '\t') i++;
    const name = line.slice(0, i);
    const labels = {};
    if (line[i] === '{') {
      i++;
      while (i < line.length && line[i] !== '}') {
        const eq = line.indexOf('=', i);
        if (eq < 0 || line[eq + 1] !== '"') { i = line.length; break; }
        const key = line.slice(i, eq).trim();
        i = eq + 2;
        let val = '';
        while (i < line.length && line[i] !== '"') {
          if (line[i] === '\\' && i + 1 < line.length) {
            const c = line[i + 1];
            val += c === 'n' ? '\n' : c;
            i += 2;
          } else {
            val += line[i++];
          }
        }
        i++; // the closing quote
        labels[key] = val;
        while (line[i] === ',' || line[i] === ' ') i++;
      }
      i++; // the closing brace
    }
    const fields = line.slice(i).trim().split(/\s+/);
    const value = parseValue(fields[0]);
    if (name === '' || value === undefined) continue;
    let list = out.get(name);
    if (!list) out.set(name, (list = []));
    list.push({ labels, value });
  }
  return out;
}

function parseValue(s) {
  switch (s) {
    case '+Inf': return Infinity;
    case '-Inf': return -Infinity;
    case 'NaN': return NaN;
  }
  const v = Number(s);
  return s === undefined || s === '' || Number.isNaN(v) ? undefined : v;
}

function matches(labels, match) {
  for (const [k, v] of Object.entries(match || {})) {
    if (labels[k] !== v) return false;
  }
  return true;
}

// Sample is one scrape of /metrics and the time it arrived.
export class Sample {
  constructor(t, metrics) { this.t = t; this.m = metrics; }
  has(name) { return this.m.has(name); }
  series(name) { return this.m.get(name) || []; }
  // sum adds the samples of name whose labels include match; null when
  // the metric is absent.
  sum(name, match) {
    const list = this.m.get(name);
    if (!list) return null;
    let s = 0;
    for (const x of list) if (matches(x.labels, match)) s += x.value;
    return s;
  }
  labelValues(name, label) {
    const seen = [];
    for (const x of this.series(name)) {
      const v = x.labels[label];
      if (v !== undefined && !seen.includes(v)) seen.push(v);
    }
    return seen;
  }
}

// rate is the per-second increase of a counter between two samples; null
// without a previous sample or across a counter reset (a restart).
export function rate(prev, cur, name, match) {
  if (!prev || !cur) return null;
  const a = prev.sum(name, match);
  const b = cur.sum(name, match);
  const dt = (cur.t - prev.t) / 1000;
  if (a === null || b === null || dt <= 0 || b < a) return null;
  return (b - a) / dt;
}
