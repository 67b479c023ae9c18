// The operator view: polls /ops/state and /ops/series once a second and draws the tables,
// the cards and the charts (on canvases, no library). Every value from the desk goes into
// the page as text, never as HTML.
'use strict';

const REFRESH_MS = 1000;
const TABLE_ROWS = 20; // the newest rows of each table
const COLORS = { settled: '#1a7f4b', failed: '#c0392b', p50: '#2c5cc5', p90: '#b7791f', p99: '#c0392b',
  makers: '#2c5cc5', sign: '#b7791f', volume: '#5a3fc0' };

const view = {
  paused: false,
  windowMin: 60,
  capacity: 3600,
  lastT: 0,
  series: { t: [], settled: [], failed: [], p50: [], p90: [], p99: [], makersOnline: [], signQueue: [], followerLag: [] },
  volume: new Map(), // instrument → cumulative values aligned with series.t
  state: null,
  busy: false,
};

const $ = (id) => document.getElementById(id);

async function getJSON(path) {
  const res = await fetch(path, { cache: 'no-store', headers: { Accept: 'application/json' } });
  if (!res.ok) {
    let msg = res.status + ' ' + res.statusText;
    try { const body = await res.json(); if (body.error) msg += ': ' + body.error; } catch (_) { /* not JSON */ }
    throw new Error(msg);
  }
  return res.json();
}

// merge appends the new samples to the page's columns and keeps at most capacity.
function merge(se) {
  view.capacity = se.capacity || view.capacity;
  const before = view.series.t.length;
  const s = view.series;
  for (const key of Object.keys(s)) {
    if (Array.isArray(se[key])) s[key].push(...se[key]);
  }
  se.instruments.forEach((name, i) => {
    if (!view.volume.has(name)) view.volume.set(name, new Array(before).fill(0));
    view.volume.get(name).push(...se.volume[i]);
  });
  for (const col of view.volume.values()) {
    while (col.length < s.t.length) col.push(col.length ? col[col.length - 1] : 0);
  }
  const extra = s.t.length - view.capacity;
  if (extra > 0) {
    for (const key of Object.keys(s)) s[key].splice(0, extra);
    for (const col of view.volume.values()) col.splice(0, extra);
  }
  if (s.t.length) view.lastT = s.t[s.t.length - 1];
}

async function refresh() {
  if (view.paused || view.busy) return;
  view.busy = true;
  try {
    const [st, se] = await Promise.all([getJSON('state?limit=' + TABLE_ROWS), getJSON('series?since=' + view.lastT)]);
    merge(se);
    view.state = st;
    render(st);
    draw();
    const status = $('status');
    status.textContent = 'updated ' + new Date(st.now).toLocaleTimeString() + (st.deskError ? ' · desk: ' + st.deskError : '');
    status.classList.toggle('error', Boolean(st.deskError));
  } catch (err) {
    const status = $('status');
    status.textContent = 'cannot reach the desk: ' + err.message;
    status.classList.add('error');
  } finally {
    view.busy = false;
  }
}

// ---- cards and tables ----

function fmtNum(n, digits = 0) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–';
  return Number(n).toLocaleString(undefined, { maximumFractionDigits: digits });
}
function fmtMs(s) { return s === null || s === undefined ? '–' : fmtNum(s * 1000, 2) + ' ms'; }
function fmtBytes(b) {
  if (b === null || b === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return fmtNum(b, 1) + ' ' + units[i];
}
// fmtAxis writes an axis value short enough for the axis: thousands as k, millions as M.
function fmtAxis(v, fmt) {
  if (v >= 1e6) return fmtNum(v / 1e6, 2) + 'M';
  if (v >= 1e4) return fmtNum(v / 1e3, 1) + 'k';
  return fmt ? fmt(v) : fmtNum(v, 2);
}
function fmtTime(t) { return t ? new Date(t).toLocaleTimeString() : '–'; }
function fmtUptime(s) {
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = Math.floor(s % 60);
  return (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + sec + 's';
}

function fillDL(id, rows) {
  const dl = $(id);
  dl.replaceChildren();
  for (const [k, v, bad] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    if (bad) dd.className = 'bad';
    dl.append(dt, dd);
  }
}

function fillTable(id, rows, cells) {
  const tbody = $(id).tBodies[0];
  const frag = document.createDocumentFragment();
  for (const row of rows) {
    const tr = document.createElement('tr');
    for (const [text, cls] of cells(row)) {
      const td = document.createElement('td');
      td.textContent = text;
      if (cls) td.className = cls;
      tr.append(td);
    }
    frag.append(tr);
  }
  tbody.replaceChildren(frag);
}

function shown(count, listed) { return listed < count ? '(' + listed + ' newest of ' + count + ')' : '(' + count + ')'; }

function render(st) {
  const role = $('role');
  role.textContent = st.role;
  role.className = 'badge ' + st.role;
  const d = st.desk;
  const c = d ? d.counts : null;
  fillDL('card-desk', [
    ['role', st.role],
    ['uptime', fmtUptime(st.uptimeSeconds)],
    ['parties', c ? fmtNum(c.parties) : '–'],
    ['RFQs open / retained', c ? fmtNum(c.rfqsOpen) + ' / ' + fmtNum(c.rfqs) : '–'],
    ['quotes live / retained', c ? fmtNum(c.quotesLive) + ' / ' + fmtNum(c.quotes) : '–'],
    ['trades in flight / retained', c ? fmtNum(c.tradesInFlight) + ' / ' + fmtNum(c.trades) : '–'],
    ['loop queue / held outputs', fmtNum(st.loop.queueDepth) + ' / ' + fmtNum(st.loop.heldOutputs)],
    ['stream sockets', fmtNum(st.stream.socketsOpen)],
  ]);
  const l = st.ledger;
  const failures = Object.entries(l.failures).filter(([, n]) => n > 0);
  const failed = failures.reduce((a, [, n]) => a + n, 0);
  fillDL('card-ledger', [
    ['calls', fmtNum(l.calls)],
    ['failures', fmtNum(failed), failed > 0],
    ...failures.map(([k, n]) => ['  ' + k, fmtNum(n), true]),
    ['p50 / p99 (' + l.windowSeconds + ' s)', fmtMs(l.p50) + ' / ' + fmtMs(l.p99)],
    ['calls in flight', fmtNum(l.inFlight)],
    ['retrying later', fmtNum(l.retrying), l.retrying > 0],
    ['replies waiting', fmtNum(l.heldReplies)],
    ['ledger offset', fmtNum(l.offset)],
  ]);
  const jrows = [];
  for (const j of st.journals) {
    jrows.push([j.name + ' last record', fmtNum(j.lastSeq)]);
    jrows.push([j.name + ' size', fmtBytes(j.bytes)]);
    jrows.push([j.name + ' fsync p99', fmtMs(j.fsyncP99)]);
    jrows.push([j.name + ' records / commit', fmtNum(j.recordsPerSync, 1)]);
  }
  fillDL('card-journals', jrows);
  const f = st.follower;
  fillDL('card-follower', [
    ['desk follower lag', fmtNum(f.deskLag) + ' records', f.deskLag > 1000],
    ['ledger follower lag', fmtNum(f.ledgerLag) + ' records', f.ledgerLag > 1000],
    ['HA', f.ha ? (f.ha.leader ? 'leader' : 'standby') : 'files (no standby)'],
    ['HA standby lag', f.ha ? fmtNum(f.ha.lagRecords) + ' records' : '–', f.ha && f.ha.lagRecords > 1000],
    ['HA records applied', f.ha ? fmtNum(f.ha.applied) : '–'],
  ]);
  const rfqs = d ? d.rfqs : [], quotes = d ? d.quotes : [], trades = d ? d.trades : [];
  const sign = d ? d.signQueue : [], makers = d ? d.makers : [];
  $('count-rfqs').textContent = c ? shown(c.rfqs, rfqs.length) : '';
  $('count-quotes').textContent = c ? shown(c.quotes, quotes.length) : '';
  $('count-trades').textContent = c ? shown(c.trades, trades.length) : '';
  $('count-sign').textContent = c ? shown(c.signQueue, sign.length) : '';
  $('count-makers').textContent = c ? shown(c.makersOnline, makers.length) : '';
  fillTable('table-rfqs', rfqs, (r) => [[fmtTime(r.createdAt)], [r.id, 'id'], [r.state, 'state-' + r.state], [r.taker],
    [r.direction], [r.qty, 'num'], [r.base + '/' + r.quote], [String(r.quotes), 'num']]);
  fillTable('table-quotes', quotes, (q) => [[fmtTime(q.createdAt)], [q.id, 'id'], [q.state, 'state-' + q.state], [q.maker],
    [q.rfq, 'id'], [q.price, 'num'], [fmtTime(q.validUntil)]]);
  fillTable('table-trades', trades, (t) => [[fmtTime(t.acceptedAt)], [t.id, 'id'], [t.state + (t.failReason ? ': ' + t.failReason : ''), 'state-' + t.state],
    [t.taker], [t.maker], [t.direction], [t.qty + ' ' + t.base, 'num'], [t.price + ' ' + t.quote, 'num'], [t.fee, 'num'],
    [t.updateId || '–', 'id']]);
  fillTable('table-sign', sign, (x) => [[fmtTime(x.createdAt)], [x.id, 'id'], [x.state], [x.party], [x.purpose], [x.flow],
    [fmtTime(x.expiresAt)]]);
  fillTable('table-makers', makers, (m) => [[m.hint], [String(m.sockets), 'num'], [m.house ? 'yes' : 'no']]);
}

// ---- charts ----

// windowStart is the first time the charts show.
function windowStart() {
  const s = view.series.t;
  const end = s.length ? s[s.length - 1] : Date.now();
  return end - view.windowMin * 60000;
}

// perMinute turns a cumulative column into per-minute increases: one bucket per minute of
// the window, the increase from the last sample before the minute to its last sample.
function perMinute(col) {
  const t = view.series.t;
  const start = Math.floor(windowStart() / 60000) * 60000;
  const buckets = new Map();
  // The counters start at zero with the desk: while the page holds every sample since
  // (fewer than the ring's capacity), the first minute counts from zero.
  let prev = t.length < view.capacity ? 0 : null;
  for (let i = 0; i < t.length; i++) {
    const m = Math.floor(t[i] / 60000) * 60000;
    if (m < start) { prev = col[i]; continue; }
    const b = buckets.get(m) || { first: prev === null ? col[i] : prev, last: col[i] };
    b.last = col[i];
    buckets.set(m, b);
    prev = col[i];
  }
  const xs = [], ys = [];
  for (const [m, b] of buckets) { xs.push(m); ys.push(Math.max(0, b.last - b.first)); }
  return { xs, ys };
}

// sliceWindow returns the samples of the window of column col.
function sliceWindow(col) {
  const t = view.series.t;
  const start = windowStart();
  let i = 0;
  while (i < t.length && t[i] < start) i++;
  return { xs: t.slice(i), ys: col.slice(i) };
}

function setupCanvas(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(canvas.clientWidth, 100), h = Math.max(canvas.clientHeight, 60);
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  return { ctx, w, h };
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// plot draws series (lines, or bars side by side) against time on a canvas, with a y axis,
// the window's start and end times, and a legend; it marks the canvas drawn.
// lineRange is the time span of the line charts: the window, or the samples held when
// they cover less of it (at least a minute).
function lineRange() {
  const t = view.series.t;
  const x1 = t.length ? t[t.length - 1] : Date.now();
  let x0 = t.length ? Math.max(windowStart(), t[0]) : x1;
  if (x1 - x0 < 60000) x0 = x1 - 60000;
  return [x0, x1];
}

// barRange is the span of the per-minute charts: whole minutes, at least MIN_BAR_MINUTES.
const MIN_BAR_MINUTES = 5;
const FEW_POINTS = 30;
function barRange() {
  const [a, b] = lineRange();
  const x1 = Math.floor(b / 60000) * 60000 + 60000;
  const x0 = Math.min(Math.floor(a / 60000) * 60000, x1 - MIN_BAR_MINUTES * 60000);
  return [x0, x1];
}

function plot(canvas, series, opts = {}) {
  const { ctx, w, h } = setupCanvas(canvas);
  const pad = { l: 44, r: 8, t: 18, b: 18 };
  const bars = series.filter((s) => s.bar);
  const [x0, x1] = bars.length ? barRange() : lineRange();
  let ymax = 0, points = 0;
  for (const s of series) for (const y of s.ys) if (y !== null && y > ymax) ymax = y;
  ymax = niceMax(ymax * 1.05);
  const X = (t) => pad.l + (w - pad.l - pad.r) * (t - x0) / (x1 - x0);
  const Y = (v) => h - pad.b - (h - pad.t - pad.b) * v / ymax;
  ctx.font = '11px system-ui, sans-serif';
  ctx.strokeStyle = '#e3e6ea';
  ctx.fillStyle = '#5b6472';
  ctx.lineWidth = 1;
  for (let k = 0; k <= 4; k++) {
    const v = ymax * k / 4, y = Y(v);
    ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(w - pad.r, y); ctx.stroke();
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    ctx.fillText(fmtAxis(v, opts.fmt), pad.l - 4, y);
  }
  ctx.textBaseline = 'alphabetic';
  ctx.textAlign = 'left'; ctx.fillText(new Date(x0).toLocaleTimeString(), pad.l, h - 4);
  ctx.textAlign = 'right'; ctx.fillText(new Date(x1).toLocaleTimeString(), w - pad.r, h - 4);
  const slot = (w - pad.l - pad.r) * 60000 / (x1 - x0);
  const barW = Math.max(1, slot * 0.8 / Math.max(1, bars.length));
  bars.forEach((s, k) => {
    ctx.fillStyle = s.color;
    s.xs.forEach((t, i) => {
      if (s.ys[i] === null || t < x0) return;
      const x = X(t) + slot * 0.1 + k * barW;
      ctx.fillRect(x, Y(s.ys[i]), barW, Y(0) - Y(s.ys[i]));
      points++;
    });
  });
  for (const s of series.filter((s) => !s.bar)) {
    ctx.strokeStyle = s.color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let pen = false;
    s.xs.forEach((t, i) => {
      const y = s.ys[i];
      if (y === null || y === undefined) { pen = false; return; }
      if (pen) ctx.lineTo(X(t), Y(y)); else ctx.moveTo(X(t), Y(y));
      pen = true;
      points++;
    });
    ctx.stroke();
    if (s.xs.length < FEW_POINTS) { // a short series shows its points
      ctx.fillStyle = s.color;
      s.xs.forEach((t, i) => { if (s.ys[i] !== null && s.ys[i] !== undefined) ctx.fillRect(X(t) - 2, Y(s.ys[i]) - 2, 4, 4); });
    }
  }
  let lx = pad.l;
  ctx.textAlign = 'left'; ctx.textBaseline = 'middle';
  for (const s of series) {
    ctx.fillStyle = s.color;
    ctx.fillRect(lx, 5, 10, 8);
    ctx.fillStyle = '#1d2430';
    ctx.fillText(s.name, lx + 13, 9);
    lx += ctx.measureText(s.name).width + 28;
  }
  canvas.dataset.drawn = String(points);
}

function draw() {
  const s = view.series;
  const settled = perMinute(s.settled), failed = perMinute(s.failed);
  plot($('chart-trades'), [
    { name: 'settled', color: COLORS.settled, bar: true, ...settled },
    { name: 'failed', color: COLORS.failed, bar: true, ...failed },
  ], { fmt: (v) => fmtNum(v, 2) });
  const ms = (col) => col.map((v) => (v === null ? null : v * 1000));
  plot($('chart-latency'), [
    { name: 'p50', color: COLORS.p50, ...sliceWindow(ms(s.p50)) },
    { name: 'p90', color: COLORS.p90, ...sliceWindow(ms(s.p90)) },
    { name: 'p99', color: COLORS.p99, ...sliceWindow(ms(s.p99)) },
  ], { fmt: (v) => fmtNum(v, 1) });
  plot($('chart-makers'), [
    { name: 'makers online', color: COLORS.makers, ...sliceWindow(s.makersOnline) },
    { name: 'sign queue', color: COLORS.sign, ...sliceWindow(s.signQueue) },
  ], { fmt: (v) => fmtNum(v, 2) });
  drawVolumes();
}

function drawVolumes() {
  const box = $('volume-charts');
  if (view.volume.size === 0) {
    if (!box.querySelector('p')) {
      const p = document.createElement('p');
      p.textContent = 'No settled volume yet.';
      box.replaceChildren(p);
    }
    return;
  }
  for (const [name, col] of view.volume) {
    const id = 'chart-volume-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
    let canvas = document.getElementById(id);
    if (!canvas) {
      box.querySelector('p')?.remove();
      canvas = document.createElement('canvas');
      canvas.id = id;
      canvas.className = 'volume';
      canvas.setAttribute('role', 'img');
      canvas.setAttribute('aria-label', 'Settled volume of ' + name + ' per minute');
      box.append(canvas);
    }
    plot(canvas, [{ name, color: COLORS.volume, bar: true, ...perMinute(col) }], { fmt: (v) => fmtNum(v, 4) });
  }
}

function init() {
  $('lat-window').textContent = '10';
  $('pause').addEventListener('click', () => {
    view.paused = !view.paused;
    $('pause').setAttribute('aria-pressed', String(view.paused));
    $('pause').textContent = view.paused ? 'Resume updates' : 'Pause updates';
    if (!view.paused) refresh();
  });
  $('window').addEventListener('change', (e) => {
    view.windowMin = Number(e.target.value) || 60;
    draw();
  });
  window.addEventListener('resize', () => { if (view.state) draw(); });
  refresh();
  setInterval(refresh, REFRESH_MS);
}

document.addEventListener('DOMContentLoaded', init);
