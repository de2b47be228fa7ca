// Usage and cost: totals and a bar chart per day, drawn as inline SVG.

import { h, s, fill } from './dom.js';
import { get, query, APIError } from './api.js';
import { fmtNum, fmtUSD, empty, errorBox, spinner } from './util.js';

const RANGES = [['7d', '7 days'], ['30d', '30 days'], ['90d', '90 days']];

// days lists the days (YYYY-MM-DD, UTC) of the last n days, oldest first.
export function lastDays(n, now = new Date()) {
  const out = [];
  const t = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  for (let i = n - 1; i >= 0; i--) out.push(new Date(t - i * 86400000).toISOString().slice(0, 10));
  return out;
}

// series fills in the days without usage.
export function series(rows, n, now) {
  const by = new Map();
  for (const r of rows) {
    const day = String(r.day || r.key || r.date || '').slice(0, 10);
    if (!day) continue;
    const cur = by.get(day) || { day, input_tokens: 0, output_tokens: 0, cost_usd: 0, turns: 0, calls: 0 };
    cur.input_tokens += +r.input_tokens || 0;
    cur.output_tokens += +r.output_tokens || 0;
    cur.cost_usd += +r.cost_usd || 0;
    cur.turns += +r.turns || 0;
    cur.calls += +r.calls || 0;
    by.set(day, cur);
  }
  return lastDays(n, now).map((d) => by.get(d) || { day: d, input_tokens: 0, output_tokens: 0, cost_usd: 0, turns: 0, calls: 0 });
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
export function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function dayLabel(d, short) {
  const dt = new Date(d + 'T00:00:00Z');
  return dt.toLocaleDateString([], short ? { day: 'numeric', timeZone: 'UTC' } : { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

// chart draws one bar per day; stacks are [{key, cls, label}] drawn bottom up.
function chart(data, stacks, fmt, width, title) {
  const H = 220;
  const padL = 56;
  const padR = 8;
  const padT = 12;
  const padB = 28;
  const W = Math.max(260, width);
  const innerW = W - padL - padR;
  const innerH = H - padT - padB;
  const total = (r) => stacks.reduce((a, st) => a + (+r[st.key] || 0), 0);
  const max = niceMax(Math.max(...data.map(total)));
  const y = (v) => padT + innerH - (v / max) * innerH;
  const band = innerW / data.length;
  const bw = Math.max(2, Math.min(28, band * 0.7));
  const svg = s('svg', { class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  svg.append(s('title', null, title));
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    const yy = y(v);
    svg.append(s('line', { x1: padL, x2: W - padR, y1: yy, y2: yy, class: i === 0 ? 'axis' : 'grid' }));
    svg.append(s('text', { x: padL - 6, y: yy + 4, class: 'tick', 'text-anchor': 'end' }, fmt(v)));
  }
  const every = Math.ceil(data.length / Math.max(1, Math.floor(innerW / 44)));
  data.forEach((r, i) => {
    const x = padL + band * i + (band - bw) / 2;
    let base = 0;
    const g = s('g', { class: 'bar', tabindex: '0', role: 'img', 'aria-label': `${dayLabel(r.day)}: ${stacks.map((st) => st.label + ' ' + fmt(+r[st.key] || 0)).join(', ')}` });
    g.append(s('title', null, `${dayLabel(r.day)}\n${stacks.map((st) => st.label + ': ' + fmt(+r[st.key] || 0)).join('\n')}`));
    // A full-height target for pointing at a day with little usage.
    g.append(s('rect', { x: padL + band * i, y: padT, width: band, height: innerH, class: 'hit' }));
    for (const st of stacks) {
      const v = +r[st.key] || 0;
      if (v > 0) {
        const top = y(base + v);
        const hgt = Math.max(1, y(base) - top);
        g.append(s('rect', { x, y: top, width: bw, height: hgt, rx: Math.min(3, bw / 4), class: st.cls }));
      }
      base += v;
    }
    svg.append(g);
    if (i % every === 0 || i === data.length - 1) {
      svg.append(s('text', { x: padL + band * i + band / 2, y: H - 8, class: 'tick', 'text-anchor': 'middle' }, dayLabel(r.day, data.length > 14 && i !== 0)));
    }
  });
  return svg;
}

export function usageScreen(app, el) {
  app.setTitle('Usage');
  let alive = true;
  let range = '30d';
  let data = null;
  const rangeBtns = RANGES.map(([v, label]) => {
    const b = h('button', { type: 'button', class: 'seg', 'aria-pressed': String(v === range) }, label);
    b.addEventListener('click', () => {
      range = v;
      for (const x of rangeBtns) x.setAttribute('aria-pressed', String(x === b));
      load();
    });
    return b;
  });
  const totals = h('div', { class: 'stats' });
  const costBox = h('div', { class: 'chart-box' });
  const tokBox = h('div', { class: 'chart-box' });
  const table = h('div');
  const body = h('div', { class: 'usage-body' }, spinner());
  fill(el, h('div', { class: 'page' },
    h('div', { class: 'page-head' }, h('div', null, h('h1', null, 'Usage'), h('p', { class: 'muted' }, 'Tokens and cost per day, across all agents (days in UTC).')),
      h('div', { class: 'segmented', role: 'group', 'aria-label': 'Period' }, rangeBtns)),
    body));

  const draw = () => {
    if (!data || !alive) return;
    const w = Math.floor(costBox.clientWidth || el.clientWidth || 600);
    fill(costBox, h('h2', null, 'Cost per day'), chart(data, [{ key: 'cost_usd', cls: 'b-cost', label: 'Cost' }], fmtUSD, w, 'Cost per day'));
    fill(tokBox, h('div', { class: 'chart-title' }, h('h2', null, 'Tokens per day'),
      h('span', { class: 'legend' }, h('span', { class: 'sw b-in' }), 'input', h('span', { class: 'sw b-out' }), 'output')),
    chart(data, [{ key: 'input_tokens', cls: 'b-in', label: 'Input' }, { key: 'output_tokens', cls: 'b-out', label: 'Output' }], fmtNum, w, 'Tokens per day'));
  };

  const load = async () => {
    const n = parseInt(range, 10);
    let res;
    try {
      res = await get('/v1/usage' + query({ group: 'day', since: lastDays(n)[0] + 'T00:00:00Z', limit: 1000 }));
    } catch (e) {
      if (!alive) return;
      fill(body, e instanceof APIError && (e.status === 404 || e.status === 501) ? empty('Usage is not available', 'This agentd does not report usage.') : errorBox(e));
      return;
    }
    if (!alive) return;
    const rows = Array.isArray(res) ? res : (res && (res.rows || res.days || res.usage)) || [];
    data = series(rows, n);
    const sum = (k) => data.reduce((a, r) => a + (+r[k] || 0), 0);
    const cost = sum('cost_usd');
    const calls = sum('calls');
    fill(totals,
      stat('Cost', fmtUSD(cost), `${fmtUSD(cost / n)} a day on average`),
      stat('Input tokens', fmtNum(sum('input_tokens'))),
      stat('Output tokens', fmtNum(sum('output_tokens'))),
      calls ? stat('Model calls', fmtNum(calls), ((k) => `${k} active day${k === 1 ? '' : 's'}`)(data.filter((r) => r.calls).length)) : stat('Active days', String(data.filter((r) => r.input_tokens || r.output_tokens || r.cost_usd).length)));
    fill(table, h('details', { class: 'usage-table' }, h('summary', null, 'Show as a table'),
      h('table', { class: 'table' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Day'), h('th', { scope: 'col', class: 'num' }, 'Input'), h('th', { scope: 'col', class: 'num' }, 'Output'), h('th', { scope: 'col', class: 'num' }, 'Cost'))),
        h('tbody', null, [...data].reverse().map((r) => h('tr', null, h('td', null, r.day), h('td', { class: 'num' }, fmtNum(r.input_tokens)), h('td', { class: 'num' }, fmtNum(r.output_tokens)), h('td', { class: 'num' }, fmtUSD(r.cost_usd))))))));
    fill(body, totals, costBox, tokBox, table);
    if (!rows.length) body.prepend(h('p', { class: 'muted' }, 'No usage in this period yet.'));
    draw();
  };

  const ro = new ResizeObserver(() => { clearTimeout(ro.t); ro.t = setTimeout(draw, 80); });
  ro.observe(el);
  load();
  return { unmount() { alive = false; ro.disconnect(); } };
}

function stat(label, value, note) {
  return h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value), note ? h('div', { class: 'stat-note muted' }, note) : null);
}

