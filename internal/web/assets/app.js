// dta dashboard: samples the collector's /metrics and query API, derives
// rates from successive samples and draws them. Plain JavaScript, no
// dependencies, no build step; served by the collector from go:embed'd files.
//
// It reads only the documented HTTP API (docs/API.md, docs/openapi.yaml):
// every path it requests is in API below, and a Go test checks each against
// docs/openapi.yaml. With an API token set, every request carries it as a
// bearer token; the token lives in this tab's sessionStorage only.
import { Chart, COLORS } from './chart.js';
import { fmtBytes, fmtClock, fmtInt, fmtPercent, fmtSeconds, fmtSI } from './format.js';
import { parseMetrics, rate, Sample } from './prom.js';

// Every path this page requests, as documented in docs/openapi.yaml.
const API = {
  metrics: '/metrics',
  healthz: '/healthz',
  stores: '/v1/stores',
  appendHeads: '/v1/stores/{store}/append',
  appendHead: '/v1/stores/{store}/append/{list}/head',
  appendPoll: '/v1/stores/{store}/append/{list}',
  keywrite: '/v1/stores/{store}/keywrite',
  keyincrement: '/v1/stores/{store}/keyincrement',
  postcard: '/v1/stores/{store}/postcard',
  sketchmerge: '/v1/stores/{store}/sketchmerge',
  sketchEpochs: '/v1/stores/{store}/sketchmerge/epochs',
};

const PRIMITIVES = ['keywrite', 'keyincrement', 'postcard', 'append', 'sketchmerge'];
const PRIMITIVE_NAMES = { keywrite: 'Key-Write', keyincrement: 'Key-Increment', postcard: 'Postcarding', append: 'Append', sketchmerge: 'Sketch-Merge', teatable: 'TEA table' };
const MAX_HEAD_LISTS = 64; // lists per Append store whose heads are sampled
const STORES_EVERY_MS = 60 * 1000;
const TOKEN_KEY = 'dta.token';

const $ = (id) => document.getElementById(id);

// el builds an element; children are nodes or text (never parsed as HTML).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('--')) e.style.setProperty(k, v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function storage(kind) {
  try { return kind === 'session' ? window.sessionStorage : window.localStorage; } catch (_) { return null; }
}
function load(kind, key, def) {
  const s = storage(kind);
  const v = s && s.getItem(key);
  return v === null || v === undefined ? def : v;
}
function save(kind, key, v) {
  const s = storage(kind);
  if (!s) return;
  if (v === null || v === '') s.removeItem(key); else s.setItem(key, v);
}

// ---- HTTP ---------------------------------------------------------------

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function buildPath(tpl, params) {
  return tpl.replace(/\{(\w+)\}/g, (_, name) => {
    if (params[name] === undefined) throw new Error('missing ' + name + ' for ' + tpl);
    return encodeURIComponent(String(params[name]));
  });
}

// request fetches one documented path (a key of API) with its parameters.
async function request(name, params, query) {
  const tpl = API[name];
  let url = buildPath(tpl, params || {});
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  if ([...q.keys()].length) url += '?' + q.toString();
  const headers = { Accept: name === 'metrics' ? 'text/plain' : 'application/json' };
  const token = load('session', TOKEN_KEY, '');
  if (token) {
    if (!tokenOK(token)) {
      authNeeded = true;
      throw new APIError(0, 'the API token holds characters an HTTP header cannot carry (spaces, or letters outside ASCII): check what was pasted');
    }
    headers.Authorization = 'Bearer ' + token;
  }
  let resp;
  try {
    resp = await fetch(url, { headers, cache: 'no-store', credentials: 'same-origin', signal: AbortSignal.timeout(15000) });
  } catch (e) {
    throw new APIError(0, 'collector unreachable (' + (e && e.name === 'TimeoutError' ? 'timed out' : 'network error') + ')');
  }
  if (resp.status === 401 || resp.status === 403) {
    authNeeded = true;
    let why = '';
    try { why = (await resp.json()).error || ''; } catch (_) { /* not JSON */ }
    if (resp.status === 403) throw new APIError(403, 'the API token was refused' + (why ? ': ' + why : ''));
    throw new APIError(401, token
      ? 'the API token was not accepted' + (why ? ' (' + why + ')' : '') + ': enter another above'
      : 'the collector asks for an API token: enter it above');
  }
  return resp;
}

// tokenOK reports whether token can travel in an Authorization header:
// visible ASCII only (a bearer token has no spaces).
function tokenOK(token) {
  return /^[\x21-\x7e]+$/.test(token);
}

// parseJSON parses an answer, keeping integers beyond 2^53 exact as BigInt
// (a Key-Increment count may be any 64-bit number; JavaScript's numbers are
// doubles). Browsers without the reviver's source text keep doubles.
function parseJSON(text) {
  return JSON.parse(text, (k, v, ctx) => (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v) &&
    ctx && typeof ctx.source === 'string' && /^-?\d+$/.test(ctx.source)) ? BigInt(ctx.source) : v);
}

async function getJSON(name, params, query) {
  const resp = await request(name, params, query);
  let body = null;
  try { body = parseJSON(await resp.text()); } catch (_) { /* not JSON */ }
  if (!resp.ok) {
    throw new APIError(resp.status, (body && body.error) || ('HTTP ' + resp.status));
  }
  return body;
}

async function getText(name) {
  const resp = await request(name);
  if (!resp.ok) throw new APIError(resp.status, 'HTTP ' + resp.status + ' from ' + API[name]);
  return resp.text();
}

// ---- state ----------------------------------------------------------------

let intervalMs = Number(load('local', 'dta.interval', '2000')) || 2000;
let windowMs = (Number(load('local', 'dta.window', '5')) || 5) * 60000;
let paused = false;
let authNeeded = false;
let timer = null;
let prev = null; // the previous Sample
let stores = []; // GET /v1/stores
let storesAt = 0;
const prevHeads = new Map(); // "store/list" -> {t, head}
let samples = 0;
let lastOK = 0; // when the last sample came back
const charts = {};

// ---- rendering ---------------------------------------------------------

function setStatus(msg) {
  $('status').textContent = msg || '';
}

function card(key, label, value, sub, color) {
  return el('div', { class: 'card', id: 'card-' + key },
    el('div', { class: 'label' }, color ? el('span', { class: 'swatch', '--c': color }) : null, label),
    el('div', { class: 'value', id: 'rate-' + key }, value),
    el('div', { class: 'sub', id: 'total-' + key }, sub));
}

function renderIngest(cur) {
  const cards = [];
  const values = [];
  const chart = charts.ingest;
  if (cur.has('dta_translator_reports_total')) {
    $('ingest-note').textContent = '';
    let total = 0;
    let totalRate = 0;
    const prims = cur.labelValues('dta_translator_reports_total', 'primitive');
    for (const p of PRIMITIVES.filter((x) => prims.includes(x)).concat(prims.filter((x) => !PRIMITIVES.includes(x)))) {
      const name = PRIMITIVE_NAMES[p] || p;
      const r = rate(prev, cur, 'dta_translator_reports_total', { primitive: p });
      const n = cur.sum('dta_translator_reports_total', { primitive: p });
      total += n;
      totalRate += r || 0;
      values.push([name, r]);
      const s = chart.series.get(name);
      cards.push(card(p, name + ' reports/s', fmtSI(r), fmtInt(n) + ' total', s ? s.color : COLORS[values.length - 1]));
    }
    cards.unshift(card('reports', 'all reports/s', fmtSI(prev ? totalRate : null), fmtInt(total) + ' total'));
    cards.push(card('datagrams', 'datagrams/s', fmtSI(rate(prev, cur, 'dta_translator_datagrams_total')),
      fmtInt(cur.sum('dta_translator_datagrams_total')) + ' total'));
    cards.push(card('drops', 'reports dropped/s', fmtSI(rate(prev, cur, 'dta_translator_drops_total')),
      fmtInt(cur.sum('dta_translator_drops_total')) + ' total'));
    if (cur.has('dta_udp_kernel_drops_total')) {
      cards.push(card('kernel-drops', 'kernel drops/s', fmtSI(rate(prev, cur, 'dta_udp_kernel_drops_total')),
        fmtInt(cur.sum('dta_udp_kernel_drops_total')) + ' total'));
    }
  } else {
    $('ingest-note').textContent = 'No translator runs in this process (dta collector): translators write into the stores ' +
      'over RoCEv2, and these are the writes the collector\'s responder executed. Each translator\'s report rates and drops ' +
      'are on its own /metrics (dta translator --http), which Prometheus and the Grafana dashboard show.';
    for (const [key, label, metric] of [
      ['writes', 'RDMA WRITEs/s', 'dta_rdma_responder_writes_total'],
      ['atomics', 'atomics/s', 'dta_rdma_responder_atomics_total'],
      ['write-bytes', 'bytes written/s', 'dta_rdma_responder_write_bytes_total'],
    ]) {
      if (!cur.has(metric)) continue;
      const r = rate(prev, cur, metric);
      if (key !== 'write-bytes') values.push([label, r]);
      cards.push(card(key, label, key === 'write-bytes' ? fmtBytes(r) : fmtSI(r), fmtInt(cur.sum(metric)) + ' total'));
    }
    if (!cards.length) $('ingest-note').textContent = 'No translator and no RoCEv2 responder in this process: nothing writes to these stores.';
  }
  if (cur.has('dta_sink_ops_total') && cur.sum('dta_sink_ops_total') > 0) {
    cards.push(card('sink', 'memory ops/s (local sink)', fmtSI(rate(prev, cur, 'dta_sink_ops_total')),
      fmtInt(cur.sum('dta_sink_ops_total')) + ' total'));
  }
  chart.push(cur.t, values);
  $('ingest-cards').replaceChildren(...cards);
  // The swatches follow the plot's colours, known once the series exist.
  for (const [name, s] of chart.series) {
    const p = Object.keys(PRIMITIVE_NAMES).find((k) => PRIMITIVE_NAMES[k] === name);
    const sw = p && document.querySelector('#card-' + p + ' .swatch');
    if (sw) sw.style.setProperty('--c', s.color);
  }
}

// dropRows lists every drop counter the collector exports, with where it
// happens.
function dropRows(cur) {
  const rows = [];
  for (const s of cur.series('dta_translator_drops_total')) {
    rows.push({ where: 'translator', reason: s.labels.reason, metric: 'dta_translator_drops_total', match: { reason: s.labels.reason } });
  }
  const fixed = [
    ['report socket', 'kernel: receive buffer full', 'dta_udp_kernel_drops_total'],
    ['report socket', 'datagram truncated', 'dta_udp_truncated_total'],
    ['report socket', 'read error', 'dta_udp_read_errors_total'],
    ['postcard cache', 'partial path evicted', 'dta_postcard_cache_evicted_total'],
    ['rdma requester', 'op refused before sending', 'dta_rdma_requester_refused_total'],
    ['rdma requester', 'op refused by the responder', 'dta_rdma_requester_ops_failed_total'],
    ['rdma requester', 'lost on disconnect', 'dta_rdma_requester_ops_lost_total'],
    ['rdma responder', 'bad ICRC', 'dta_rdma_responder_bad_icrc_total'],
    ['rdma responder', 'malformed', 'dta_rdma_responder_malformed_total'],
    ['rdma responder', 'unknown QP', 'dta_rdma_responder_unknown_qp_total'],
    ['rdma responder', 'out of sequence', 'dta_rdma_responder_out_of_sequence_total'],
    ['rdma responder', 'unknown R_Key', 'dta_rdma_responder_reject_rkey_total'],
    ['rdma responder', 'out of bounds', 'dta_rdma_responder_reject_bounds_total'],
    ['rdma responder', 'access rights', 'dta_rdma_responder_reject_rights_total'],
    ['rdma responder', 'misaligned atomic', 'dta_rdma_responder_reject_misaligned_total'],
    ['collector', 'memory op refused', 'dta_sink_rejected_total'],
    ['collector', 'notification missed', 'dta_notifications_dropped_total'],
  ];
  for (const [where, reason, metric] of fixed) {
    if (cur.has(metric)) rows.push({ where, reason, metric });
  }
  return rows;
}

function renderDrops(cur) {
  const body = $('drops-table').tBodies[0];
  const all = $('drops-all').checked;
  const values = [];
  const trs = [];
  let zero = 0;
  for (const r of dropRows(cur)) {
    const total = cur.sum(r.metric, r.match);
    const rt = rate(prev, cur, r.metric, r.match);
    if (total > 0) values.push([r.where + ': ' + r.reason, rt]);
    else zero++;
    if (total > 0 || all) {
      trs.push(el('tr', { class: total > 0 ? (rt > 0 ? 'hot' : '') : 'zero' },
        el('td', {}, r.where), el('td', {}, r.reason),
        el('td', { class: 'num' }, fmtSI(rt)), el('td', { class: 'num' }, fmtInt(total))));
    }
  }
  if (!all && zero) {
    trs.push(el('tr', { class: 'zero' }, el('td', { colspan: 4 },
      values.length ? zero + ' other reasons at zero' : 'nothing dropped: all ' + zero + ' reasons at zero')));
  }
  body.replaceChildren(...trs);
  charts.drops.push(cur.t, values);
}

function geometry(s) {
  const g = s.geometry || {};
  switch (s.primitive) {
    case 'keywrite': return fmtInt(g.slots) + ' slots × ' + g.value_size + ' B, N ≤ ' + g.max_redundancy + ', ' + g.hash;
    case 'keyincrement': return fmtInt(g.slots) + ' counters, N = ' + g.redundancy + ', ' + g.hash;
    case 'postcard': return fmtInt(g.chunks) + ' chunks × ' + g.hops + ' hops, N = ' + g.redundancy + ', ' + g.hash;
    case 'append': return fmtInt(g.lists) + ' lists × ' + fmtInt(g.capacity) + ' entries × ' + g.entry_size + ' B, batch ' + g.batch;
    case 'sketchmerge': return g.kind + ', ' + g.rows + ' rows × ' + fmtInt(g.columns) + ' columns, ' + g.epochs + ' epochs';
    case 'teatable': return fmtInt(g.buckets) + ' buckets × ' + g.cells + ' cells, keys ' + g.key_size + ' B, values ' + (g.value_size || 0) + ' B' + (g.scratchpad ? ', scratchpads ' + g.scratchpad + ' B' : '') + ', ' + g.hash;
    default: return '';
  }
}

function units(s) {
  const g = s.geometry || {};
  switch (s.primitive) {
    case 'keywrite': case 'keyincrement': return [g.slots, s.primitive === 'keywrite' ? 'slots' : 'counters'];
    case 'postcard': return [g.chunks, 'chunks'];
    case 'append': return [g.lists, 'lists'];
    case 'sketchmerge': return [g.rows * g.columns * g.epochs, 'counters'];
    case 'teatable': return [g.buckets * g.cells, 'cells'];
    default: return [null, ''];
  }
}

function renderStores(cur) {
  const body = $('stores-table').tBodies[0];
  body.replaceChildren(...stores.map((s) => {
    const occ = cur.sum('dta_store_occupancy_ratio', { store: s.name });
    const [n, what] = units(s);
    return el('tr', { id: 'store-' + s.name },
      el('td', {}, s.name + (s.default ? ' ' : ''), s.default ? el('span', { class: 'badge' }, 'default') : null),
      el('td', {}, PRIMITIVE_NAMES[s.primitive] || s.primitive),
      el('td', {}, geometry(s)),
      el('td', { class: 'num' }, fmtBytes(s.region_bytes), ' ', el('small', {}, s.backing)),
      el('td', { class: 'num occupancy' }, fmtPercent(occ)),
      el('td', { class: 'num' }, occ === null || n === null ? '–' : '≈ ' + fmtInt(occ * n) + ' ' + what));
  }));
}

async function renderAppend(cur) {
  const appendStores = stores.filter((s) => s.primitive === 'append');
  const blocks = await Promise.all(appendStores.map(async (s) => {
    const page = await getJSON('appendHeads', { store: s.name }, { limit: MAX_HEAD_LISTS });
    const now = Date.now();
    const g = s.geometry;
    const rows = [];
    let busy = 0;
    for (const { list, head } of page.heads) {
      const key = s.name + '/' + list;
      const p = prevHeads.get(key);
      prevHeads.set(key, { t: now, head });
      if (head === 0) continue;
      busy++;
      const r = p && head >= p.head && now > p.t ? (head - p.head) / ((now - p.t) / 1000) : null;
      const oldest = Math.max(0, head - g.capacity + g.batch);
      rows.push(el('tr', { 'data-list': list },
        el('td', { class: 'num' }, list), el('td', { class: 'num head' }, fmtInt(head)),
        el('td', { class: 'num' }, fmtSI(r)), el('td', { class: 'num' }, fmtInt(oldest))));
    }
    const parts = [
      el('b', {}, s.name), ': ',
      busy + ' of ' + (page.lists > page.heads.length ? 'the first ' + page.heads.length + ' of ' + fmtInt(page.lists) : fmtInt(page.lists)) + ' lists hold entries',
    ];
    if (cur.has('dta_append_entries_total')) {
      const m = { store: s.name };
      parts.push('; translator: ', fmtSI(rate(prev, cur, 'dta_append_entries_total', m)), ' entries/s, ',
        el('span', { class: 'lag', id: 'lag-' + s.name }, fmtInt(cur.sum('dta_append_pending_entries', m))),
        ' held in partial batches (lag), ',
        fmtSI(rate(prev, cur, 'dta_append_partial_batches_total', m)), ' partial batches/s');
    }
    return el('div', { class: 'append-store', id: 'append-' + s.name },
      el('h3', {}, 'Append heads'),
      el('p', { class: 'note' }, parts),
      rows.length ? el('table', {},
        el('thead', {}, el('tr', {}, el('th', { class: 'num' }, 'list'), el('th', { class: 'num' }, 'head'),
          el('th', { class: 'num' }, 'entries/s'), el('th', { class: 'num' }, 'oldest readable'))),
        el('tbody', {}, rows)) : null);
  }));
  $('append-stores').replaceChildren(...blocks);
}

function counterTable(cur, rows) {
  return el('table', {},
    el('thead', {}, el('tr', {}, el('th', {}, 'counter'), el('th', { class: 'num' }, 'per second'), el('th', { class: 'num' }, 'total'))),
    el('tbody', {}, rows.filter(([, m]) => cur.has(m)).map(([label, m, bytes]) => {
      const r = rate(prev, cur, m);
      const total = cur.sum(m);
      return el('tr', { class: total > 0 ? '' : 'zero' }, el('td', {}, label),
        el('td', { class: 'num' }, bytes ? fmtBytes(r) + '/s' : fmtSI(r)),
        el('td', { class: 'num' }, bytes ? fmtBytes(total) : fmtInt(total)));
    })));
}

function renderRoCE(cur) {
  const hasResp = cur.has('dta_rdma_responder_packets_total');
  const hasReq = cur.has('dta_rdma_requester_packets_total');
  $('roce-note').textContent = hasResp || hasReq ? '' :
    'No RoCEv2 in this process: the translator writes through the local sink (dta up --sink local). ' +
    'Run dta up --sink roce, or dta collector with dta translator, to see queue pairs here.';
  const resp = [];
  if (hasResp) {
    const qps = cur.series('dta_rdma_responder_qp_expected_psn');
    resp.push(el('h3', {}, 'Responder (this collector) ',
      el('span', { class: 'badge ' + (qps.length ? 'ok' : 'warn'), id: 'qp-count' },
        qps.length + (qps.length === 1 ? ' queue pair' : ' queue pairs') + ' connected')));
    if (qps.length) {
      resp.push(el('table', { id: 'qp-table' },
        el('thead', {}, el('tr', {}, el('th', {}, 'QPN'), el('th', {}, 'peer (translator)'), el('th', { class: 'num' }, 'expected PSN'))),
        el('tbody', {}, qps.map((q) => el('tr', {}, el('td', {}, q.labels.qpn), el('td', {}, q.labels.peer),
          el('td', { class: 'num' }, fmtInt(q.value)))))));
    }
    resp.push(counterTable(cur, [
      ['packets', 'dta_rdma_responder_packets_total'],
      ['RDMA WRITEs', 'dta_rdma_responder_writes_total'],
      ['bytes written', 'dta_rdma_responder_write_bytes_total', true],
      ['atomics', 'dta_rdma_responder_atomics_total'],
      ['ACKs sent', 'dta_rdma_responder_acks_total'],
      ['duplicates (re-ACKed)', 'dta_rdma_responder_duplicates_total'],
      ['atomic replays', 'dta_rdma_responder_atomic_replays_total'],
      ['NAK sequence error sent', 'dta_rdma_responder_nak_sequence_total'],
      ['NAK invalid request sent', 'dta_rdma_responder_nak_invalid_request_total'],
      ['NAK remote access sent', 'dta_rdma_responder_nak_remote_access_total'],
      ['CM requests', 'dta_rdma_responder_cm_requests_total'],
      ['connections established', 'dta_rdma_responder_cm_established_total'],
      ['disconnects', 'dta_rdma_responder_cm_disconnects_total'],
    ]));
  }
  $('roce-responder').replaceChildren(...resp);
  const req = [];
  if (hasReq) {
    const up = cur.sum('dta_rdma_requester_connects_total') - cur.sum('dta_rdma_requester_reconnects_total');
    req.push(el('h3', {}, 'Requester (this process\'s translator) ',
      el('span', { class: 'badge ' + (up > 0 ? 'ok' : 'bad'), id: 'requester-state' }, up > 0 ? 'connected' : 'not connected')));
    req.push(counterTable(cur, [
      ['packets sent', 'dta_rdma_requester_packets_total'],
      ['bytes sent', 'dta_rdma_requester_bytes_total', true],
      ['RDMA WRITE ops', 'dta_rdma_requester_writes_total'],
      ['FETCH_ADD ops', 'dta_rdma_requester_fetch_adds_total'],
      ['retransmitted packets', 'dta_rdma_requester_retransmits_total'],
      ['ACK timeouts', 'dta_rdma_requester_timeouts_total'],
      ['send window full', 'dta_rdma_requester_window_full_total'],
      ['NAK sequence error received', 'dta_rdma_requester_nak_sequence_total'],
      ['NAK remote access received', 'dta_rdma_requester_nak_remote_access_total'],
      ['connections', 'dta_rdma_requester_connects_total'],
      ['connections lost', 'dta_rdma_requester_reconnects_total'],
    ]));
  }
  $('roce-requester').replaceChildren(...req);
}

function renderAPI(cur) {
  const body = $('api-table').tBodies[0];
  const eps = cur.labelValues('dta_query_requests_total', 'endpoint')
    .filter((e) => cur.sum('dta_query_requests_total', { endpoint: e }) > 0);
  body.replaceChildren(...eps.map((e) => {
    const m = { endpoint: e };
    const n = cur.sum('dta_query_request_duration_seconds_count', m);
    const sum = cur.sum('dta_query_request_duration_seconds_sum', m);
    return el('tr', {}, el('td', {}, e),
      el('td', { class: 'num' }, fmtSI(rate(prev, cur, 'dta_query_requests_total', m))),
      el('td', { class: 'num' }, fmtInt(cur.sum('dta_query_requests_total', m))),
      el('td', { class: 'num' }, fmtInt(cur.sum('dta_query_errors_total', m) || 0)),
      el('td', { class: 'num' }, n > 0 ? fmtSeconds(sum / n) : '–'));
  }));
}

function renderHealth(h, cur) {
  const parts = [h.status, h.stores + ' stores', 'up ' + h.uptime];
  const cpu = rate(prev, cur, 'process_cpu_seconds_total');
  if (cpu !== null) parts.push('CPU ' + fmtPercent(cpu));
  const rss = cur.sum('process_resident_memory_bytes');
  if (rss !== null) parts.push('RSS ' + fmtBytes(rss));
  if (h.name) {
    parts.unshift(h.name);
    document.title = 'dta collector · ' + h.name;
  }
  const e = $('health');
  e.textContent = parts.join(' · ');
  e.className = 'health ' + (h.status === 'ok' ? 'ok' : 'bad');
}

// ---- the sampling loop ---------------------------------------------------

async function refreshStores() {
  const body = await getJSON('stores');
  stores = body.stores || [];
  storesAt = Date.now();
  for (const form of document.querySelectorAll('form.query')) {
    const sel = form.elements.store;
    const want = stores.filter((s) => s.primitive === form.dataset.primitive);
    const names = want.map((s) => s.name).join('\u0000');
    if (sel.dataset.names === names) continue;
    sel.dataset.names = names;
    const keep = sel.value;
    sel.replaceChildren(...want.map((s) => el('option', { value: s.name, selected: s.default || s.name === keep }, s.name)));
    form.querySelector('button[type=submit]').disabled = want.length === 0;
    if (!want.length) showResult(form, 'no ' + PRIMITIVE_NAMES[form.dataset.primitive] + ' store on this collector', true);
  }
}

let running = false;

// tick samples once, renders, and schedules the next sample. Calling it
// early (a new token, Resume) replaces the pending sample.
async function tick() {
  if (timer !== null) {
    clearTimeout(timer);
    timer = null;
  }
  if (paused || running) return;
  running = true;
  try {
    if (!stores.length || Date.now() - storesAt > STORES_EVERY_MS) await refreshStores();
    const [text, health] = await Promise.all([getText('metrics'), getJSON('healthz')]);
    const cur = new Sample(Date.now(), parseMetrics(text));
    renderIngest(cur);
    renderDrops(cur);
    renderStores(cur);
    renderRoCE(cur);
    renderAPI(cur);
    renderHealth(health, cur);
    await renderAppend(cur);
    prev = cur;
    samples++;
    document.body.dataset.samples = String(samples);
    drawCharts();
    setStatus('');
    lastOK = Date.now();
    document.body.classList.remove('stale');
    const follow = $('q-append');
    if (follow.elements.follow.checked) runQuery(follow, true);
  } catch (e) {
    const msg = (e && e.message) || String(e);
    // Unreachable: what is shown is as old as the last sample, and says so.
    const stale = e instanceof APIError && e.status === 0 && lastOK > 0;
    setStatus(stale ? msg + ' — the figures below are from ' + fmtClock(lastOK) + ', the last sample that came back' : msg);
    document.body.classList.toggle('stale', stale);
    if (stale) $('health').textContent = 'unreachable · last sample ' + fmtClock(lastOK);
    $('health').className = 'health bad';
    if (authNeeded) {
      $('token').focus();
      return; // wait for a token
    }
  } finally {
    running = false;
  }
  schedule();
}

function schedule() {
  if (timer !== null) clearTimeout(timer);
  timer = paused ? null : setTimeout(tick, intervalMs);
}

function drawCharts() {
  for (const c of Object.values(charts)) c.draw();
}

// ---- queries ---------------------------------------------------------------

function showResult(form, content, isError) {
  const out = form.querySelector('output');
  out.className = 'result' + (isError ? ' error' : '');
  out.replaceChildren(...[].concat(content));
}

const queries = {
  async keywrite(f) {
    const r = await getJSON('keywrite', { store: f.store.value }, { key: keyOf(f), n: f.n.value });
    const lines = ['key     ' + r.key, 'status  ' + r.status];
    if (r.status === 'found') lines.push('value   ' + r.value + (r.value_u32 !== undefined ? '  (u32 ' + r.value_u32 + ')' : ''));
    lines.push('votes   ' + r.votes + ' of ' + r.checks + ' matching copies, ' + r.copies + ' read');
    return lines.join('\n');
  },
  async keyincrement(f) {
    const r = await getJSON('keyincrement', { store: f.store.value }, { key: keyOf(f) });
    return 'key     ' + r.key + '\ncount   ' + fmtInt(r.count) + '\n' + 'minimum of ' + r.copies + ' counters';
  },
  async postcard(f) {
    const r = await getJSON('postcard', { store: f.store.value }, { key: keyOf(f) });
    const lines = ['key     ' + r.key, 'status  ' + r.status];
    if (r.hops.length) {
      lines.push('path    ' + r.hops.map((h) => (h.present ? String(h.value) : '?')).join(' → '));
      lines.push('length  ' + (r.path_len || 'unknown') + (r.complete ? ', complete' : ', incomplete'));
    }
    lines.push('chunks  ' + r.valid + ' of ' + r.copies + ' decode as this flow');
    return lines.join('\n');
  },
  async sketchmerge(f) {
    const store = f.store.value;
    const epoch = f.epoch.value.trim();
    const q = { key: keyOf(f) };
    if (epoch !== '') q.epoch = epoch;
    const r = await getJSON('sketchmerge', { store }, q);
    const e = await getJSON('sketchEpochs', { store });
    const held = (e.epochs || []).map((x) => x.epoch + ' ' + x.state).join(', ');
    return 'key      ' + r.key + '\nestimate ' + fmtInt(r.estimate) + '\n' + 'epoch    ' + r.epoch + (held ? '  (held: ' + held + ')' : '');
  },
  async append(f) {
    const store = storeOf(f);
    const list = f.list.value.trim();
    if (!/^\d+$/.test(list)) throw new Error('list: enter a list id, a whole number from 0');
    const count = Math.min(Math.max(Number(f.count.value) || 20, 1), 1000);
    const { head } = await getJSON('appendHead', { store, list });
    const r = await getJSON('appendPoll', { store, list }, { cursor: Math.max(0, head - count), limit: count });
    const lines = ['list ' + r.list + ', head ' + fmtInt(r.head) + (r.lost ? ', ' + fmtInt(r.lost) + ' older entries overwritten' : '')];
    if (!r.entries.length) lines.push('(no entries)');
    for (const e of r.entries) {
      lines.push(String(e.index).padStart(8) + '  ' + e.value + (e.value_u32 !== undefined ? '  ' + e.value_u32 : ''));
    }
    return lines.join('\n');
  },
};

// keyOf returns the form's key, refusing an empty one before any request.
function keyOf(f) {
  storeOf(f);
  const k = f.key.value.trim();
  if (k === '') throw new Error('key: enter a key (42, 0x0a0b, or a 5-tuple tcp,10.0.0.1:5000,10.0.0.2:80)');
  return k;
}

// storeOf returns the form's store, or refuses while the stores are loading.
function storeOf(f) {
  if (!f.store.value) throw new Error('the stores are still loading: try again in a moment');
  return f.store.value;
}

// runQuery asks a form's query and shows its answer. A box shows the answer
// to the last question asked of it: an answer that comes back after a newer
// question was asked is dropped, so a slow reply to an older key never
// replaces the newer key's (each answer also names its key).
async function runQuery(form, quiet) {
  const seq = (Number(form.dataset.seq) || 0) + 1;
  form.dataset.seq = String(seq);
  const out = form.querySelector('output');
  if (!quiet) {
    out.classList.add('pending');
    out.setAttribute('aria-busy', 'true');
  }
  try {
    const text = await queries[form.dataset.primitive](form.elements);
    if (form.dataset.seq !== String(seq)) return;
    showResult(form, text, false);
  } catch (e) {
    if (form.dataset.seq !== String(seq)) return;
    if (!quiet || !(e instanceof APIError)) showResult(form, (e && e.message) || String(e), true);
  } finally {
    if (form.dataset.seq === String(seq)) {
      out.classList.remove('pending');
      out.removeAttribute('aria-busy');
    }
  }
}

// ---- start -------------------------------------------------------------------

function start() {
  charts.ingest = new Chart($('plot-ingest'), $('legend-ingest'), '/s', () => windowMs);
  charts.drops = new Chart($('plot-drops'), $('legend-drops'), '/s', () => windowMs);
  $('interval').value = String(intervalMs);
  $('window').value = String(windowMs / 60000);
  $('interval').addEventListener('change', (e) => {
    intervalMs = Number(e.target.value);
    save('local', 'dta.interval', String(intervalMs));
    schedule();
  });
  $('window').addEventListener('change', (e) => {
    windowMs = Number(e.target.value) * 60000;
    save('local', 'dta.window', e.target.value);
    drawCharts();
  });
  $('pause').addEventListener('click', (e) => {
    paused = !paused;
    e.target.textContent = paused ? 'Resume' : 'Pause';
    if (paused) {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      setStatus('paused');
    } else {
      setStatus('');
      tick();
    }
  });
  $('token').value = load('session', TOKEN_KEY, '');
  $('auth').addEventListener('submit', (e) => {
    e.preventDefault();
    const tok = $('token').value.trim();
    if (tok !== '' && !tokenOK(tok)) {
      setStatus('the API token holds characters an HTTP header cannot carry (spaces, or letters outside ASCII): check what was pasted');
      return;
    }
    save('session', TOKEN_KEY, tok);
    authNeeded = false;
    stores = [];
    tick();
  });
  $('forget').addEventListener('click', () => {
    $('token').value = '';
    save('session', TOKEN_KEY, null);
  });
  $('drops-all').addEventListener('change', () => tick());
  for (const form of document.querySelectorAll('form.query')) {
    form.querySelector('button[type=submit]').disabled = true; // until the stores are known
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      runQuery(form, false);
    });
  }
  window.addEventListener('resize', drawCharts);
  drawCharts();
  tick();
}

start();
