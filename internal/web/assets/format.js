// Number formatting shared by the dashboard's modules.

export function fmtInt(v) {
  if (typeof v === 'bigint') return v.toLocaleString('en-US'); // exact beyond 2^53
  return v === null || v === undefined || !isFinite(v) ? '–' : Math.round(v).toLocaleString('en-US');
}
export function fmtNum(v) {
  if (v === null || v === undefined || !isFinite(v)) return '–';
  if (v === 0) return '0';
  return String(Number(v.toPrecision(3)));
}
export function fmtSI(v, unit) {
  if (v === null || v === undefined || !isFinite(v)) return '–';
  const a = Math.abs(v);
  for (const [d, s] of [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']]) {
    if (a >= d) return fmtNum(v / d) + s + (unit || '');
  }
  return fmtNum(v) + (unit || '');
}
export function fmtBytes(v) {
  if (v === null || v === undefined || !isFinite(v)) return '–';
  // A value that three significant digits round up to 1000 of a unit is
  // shown in the next (1000 KiB is 0.977 MiB, shown as 0.977 MiB).
  for (const [d, s] of [[2 ** 40, 'TiB'], [2 ** 30, 'GiB'], [2 ** 20, 'MiB'], [2 ** 10, 'KiB']]) {
    if (v >= d * 0.9765625) return fmtNum(v / d) + ' ' + s;
  }
  return fmtInt(v) + ' B';
}
export function fmtSeconds(s) {
  if (s === null || s === undefined || !isFinite(s)) return '–';
  if (s < 1e-3) return fmtNum(s * 1e6) + ' µs';
  if (s < 1) return fmtNum(s * 1e3) + ' ms';
  return fmtNum(s) + ' s';
}
export function fmtPercent(r) {
  return r === null || r === undefined || !isFinite(r) ? '–' : fmtNum(r * 100) + ' %';
}
export function fmtClock(t) {
  const d = new Date(t);
  return d.toLocaleTimeString('en-GB', { hour12: false });
}
