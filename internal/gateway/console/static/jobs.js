// The Jobs page: every job with its triggers in words, its state, when it
// fires next in the viewer's time zone and how its last run went; a job's
// page with its spec in short, its next fires, its run history (paged,
// each run linked to its session) and the buttons Run now, Pause and
// Resume.
//
// There is no job event on the stream, so the pages poll: every few
// seconds while a run is open, else when the next fire shown has come
// (a little after, for its run to show), but at least every 15 s and at
// most every 2 s; not while the tab is hidden. The relative times ("in
// 4 s") are redrawn from the times already read, without asking agentd.
//
// Routes: #/jobs, #/jobs/NAME.

import { h, icon, fill } from './dom.js';
import { get, post, path, query, APIError } from './api.js';
import { fmtDuration, fmtUSD, badge, toast, empty, errorBox, spinner, splitAddr, routeHash } from './util.js';

// OPEN are the statuses of a run that has not ended.
const OPEN = new Set(['queued', 'running']);
const FAST = 2000; // ms between refreshes while a run is open
const SLOW = 15000; // ms between refreshes otherwise
const PAGE = 20; // runs a page of the history shows

// triggerWords says a trigger in words: "cron 0 8 * * 1-5 (Europe/Berlin)",
// "every 2s", "at …", "webhook", "watch notes (*.md)", "after build
// succeeds", "heartbeat every 30m (quiet 22:00-07:00)".
export function triggerWords(t) {
  if (!t || typeof t !== 'object') return '?';
  if (t.cron) return 'cron ' + t.cron + ' (' + (t.tz || 'UTC') + ')';
  if (t.every) return 'every ' + t.every;
  if (t.at) return 'at ' + t.at;
  if (t.webhook) return 'webhook';
  if (t.watch) return 'watch ' + (t.watch.path || '?') + (t.watch.glob ? ' (' + t.watch.glob + ')' : '');
  if (t.chain) {
    const on = { failure: 'fails', either: 'ends' }[t.chain.on] || 'succeeds';
    return 'after ' + (t.chain.after || '?') + ' ' + on;
  }
  if (t.heartbeat) return 'heartbeat every ' + (t.heartbeat.every || '?') + (t.heartbeat.quiet_hours ? ' (quiet ' + t.heartbeat.quiet_hours + ')' : '');
  const keys = Object.keys(t).filter((k) => k !== 'catch_up');
  return keys.length ? keys.join(', ') : '?';
}

// jobState is what a job is: paused (its row disabled), error (its row
// is not active) or active.
export function jobState(j) {
  if (!j.enabled) return 'paused';
  if (j.error) return 'error';
  return 'active';
}

// relativeTo says how far t is from now: "in 4 s", "in 4 min", "3 h ago",
// "now" within half a second.
export function relativeTo(t, now) {
  const ms = new Date(t).getTime() - new Date(now).getTime();
  if (Number.isNaN(ms)) return '';
  const a = Math.abs(ms);
  if (a < 500) return 'now';
  let n;
  let unit;
  if (a < 60000) [n, unit] = [Math.round(a / 1000), 's'];
  else if (a < 3600000) [n, unit] = [Math.round(a / 60000), 'min'];
  else if (a < 86400000) [n, unit] = [Math.round(a / 3600000), 'h'];
  else [n, unit] = [Math.round(a / 86400000), 'd'];
  if (unit === 's' && n === 60) [n, unit] = [1, 'min'];
  return ms > 0 ? 'in ' + n + ' ' + unit : n + ' ' + unit + ' ago';
}

// viewerZone is the browser's IANA time zone ("Asia/Kolkata").
export function viewerZone() {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

// inZone formats t in the time zone zone (default the viewer's), with the
// zone's short name: "26 Nov 2026, 13:30:02 GMT+5:30" in en-GB.
export function inZone(t, zone, locale) {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return '';
  return new Intl.DateTimeFormat(locale, {
    timeZone: zone || undefined, year: 'numeric', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
  }).format(d);
}

// took is how long a run took (ms), or has run so far while open.
export function took(run, now) {
  const start = new Date(run.started).getTime();
  const end = run.ended ? new Date(run.ended).getTime() : new Date(now).getTime();
  return Number.isNaN(start) || Number.isNaN(end) ? null : Math.max(0, end - start);
}

// preview is the start of a text on one line, cut at n characters.
export function preview(s, n = 140) {
  s = String(s ?? '').replace(/\s+/g, ' ').trim();
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// soon is how long (ms) to wait before reading again: FAST while a run is
// open, else until a second after the earliest of times still ahead, but
// no less than FAST and no more than SLOW.
export function soon(open, times, now) {
  if (open) return FAST;
  const t = new Date(now).getTime();
  const ahead = times.map((x) => new Date(x).getTime()).filter((x) => x > t);
  if (!ahead.length) return SLOW;
  return Math.min(SLOW, Math.max(FAST, Math.min(...ahead) - t + 1000));
}

// upcoming are the fire times still ahead of now, of next_fires (or next).
export function upcoming(j, now) {
  const all = Array.isArray(j.next_fires) && j.next_fires.length ? j.next_fires : j.next ? [j.next] : [];
  const t = new Date(now).getTime();
  return all.filter((f) => new Date(f).getTime() > t - 500);
}

// when shows a time in the viewer's zone with how far it is, kept fresh
// by the page's ticker (data-at).
function when(t, cls) {
  return h('time', { datetime: t, class: ['when', cls], 'data-at': t }, h('span', { class: 'abs' }, inZone(t)), ' ', h('span', { class: 'rel muted' }, '(' + relativeTo(t, Date.now()) + ')'));
}

// tick redraws the relative times under el.
function tick(el) {
  const now = Date.now();
  for (const t of el.querySelectorAll('time[data-at]')) {
    const rel = t.querySelector('.rel');
    if (rel) rel.textContent = '(' + relativeTo(t.dataset.at, now) + ')';
  }
}

function pageHead(title, sub, ...actions) {
  return h('div', { class: 'page-head' }, h('div', null, h('h1', null, title), sub ? h('p', { class: 'muted' }, sub) : null),
    actions.length ? h('div', { class: 'page-actions' }, actions) : null);
}

function zoneNote() {
  return h('p', { class: 'muted small zone-note' }, icon('clock'), ' Times in ', h('strong', { class: 'viewer-zone' }, viewerZone()), ', your browser\u2019s time zone.');
}

// poller calls fn, then again after the ms fn answers, while the tab is
// visible, until stopped; every second it redraws the relative times
// under el and calls onTick, both from what was read.
function poller(el, fn, onTick) {
  let timer = 0;
  let stopped = false;
  const ticker = setInterval(() => { if (onTick) onTick(); tick(el); }, 1000);
  const again = (ms) => {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(run, ms);
  };
  const run = async () => {
    if (document.visibilityState !== 'visible') { again(SLOW); return; }
    again(await fn());
  };
  const onVisible = () => { if (document.visibilityState === 'visible') run(); };
  document.addEventListener('visibilitychange', onVisible);
  return {
    now: run,
    again,
    stop() { stopped = true; clearTimeout(timer); clearInterval(ticker); document.removeEventListener('visibilitychange', onVisible); },
  };
}

export function jobsScreen(app, el, args) {
  return args[0] ? jobScreen(app, el, args[0]) : listScreen(app, el);
}

// ---- the list --------------------------------------------------------------

function listScreen(app, el) {
  app.setTitle('Jobs');
  let alive = true;
  const body = h('div', { class: 'jobs-body' }, spinner('Reading the jobs'));
  fill(el, h('div', { class: 'page page-wide' },
    pageHead('Jobs', 'Work the agents do on their own: on a schedule, a webhook, a file change or another job\u2019s end.'),
    zoneNote(), body));
  const load = async () => {
    let list;
    try {
      list = ((await get('/v1/jobs')) || {}).jobs || [];
    } catch (e) {
      if (alive) fill(body, errorBox(e));
      return SLOW;
    }
    if (!alive) return SLOW;
    if (!list.length) {
      fill(body, empty('No jobs', 'A row of type job runs an agent on its own: agentd ext put, or New extension. docs/jobs.md has examples.'));
      return SLOW;
    }
    const now = Date.now();
    fill(body, h('div', { class: 'table-scroll' }, h('table', { class: 'table jobs-table' },
      h('thead', null, h('tr', null, ['Job', 'Agent', 'Triggers', 'State', 'Next fire', 'Last run'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', null, list.map((j) => {
        const next = upcoming(j, now)[0];
        return h('tr', { 'data-job': j.name },
          h('td', { 'data-label': 'Job' }, h('a', { href: routeHash('jobs', j.name), class: 'job-link' }, h('span', { class: 'mono' }, j.name)),
            j.description ? h('div', { class: 'muted small' }, j.description) : null),
          h('td', { 'data-label': 'Agent' }, j.agent || ''),
          h('td', { 'data-label': 'Triggers', class: 'job-triggers' }, (j.triggers || []).map((t) => h('span', { class: 'chip' }, triggerWords(t)))),
          h('td', { 'data-label': 'State' }, badge(jobState(j), j.error || null), j.enabled && j.error ? h('div', { class: 'small run-error' }, preview(j.error, 120)) : null),
          h('td', { 'data-label': 'Next fire', class: 'job-next' }, next ? when(next) : h('span', { class: 'muted' }, '—')),
          h('td', { 'data-label': 'Last run', class: 'job-last' }, j.last ? [badge(j.last.status), ' ', when(j.last.started, 'small')] : h('span', { class: 'muted' }, 'none yet')));
      })))));
    return soon(list.some((j) => j.last && OPEN.has(j.last.status)), list.map((j) => upcoming(j, now)[0]).filter(Boolean), Date.now());
  };
  const p = poller(el, load);
  p.now();
  return { unmount() { alive = false; p.stop(); } };
}

// ---- a job -----------------------------------------------------------------

function jobScreen(app, el, name) {
  app.setTitle('Job ' + name);
  let alive = true;
  let job = null;
  let first = []; // the newest page of runs, refreshed
  let older = []; // the pages loaded after it
  let cursor = ''; // the before of the page after the last loaded
  let busy = false;
  const head = h('div', null, spinner('Reading the job'));
  const problem = h('div', { class: 'job-problem' }); // what an action of the person's met
  const stale = h('div', { class: 'job-stale' }); // why the page could not be refreshed
  const spec = h('section', { class: 'card job-spec', 'aria-labelledby': 'job-spec-h' });
  const fires = h('section', { class: 'card job-fires', 'aria-labelledby': 'job-fires-h' });
  const runsBox = h('div', { class: 'job-runs' });
  const more = h('button', { class: 'btn btn-sm', type: 'button', hidden: true }, 'Older runs');
  fill(el, h('div', { class: 'page page-wide job-page' },
    h('a', { href: routeHash('jobs'), class: 'back' }, icon('back'), 'Jobs'),
    head, problem, stale,
    h('div', { class: 'cards job-cards' }, spec, fires),
    h('section', { class: 'job-history', 'aria-labelledby': 'job-runs-h' },
      h('div', { class: 'card-head' }, h('h2', { id: 'job-runs-h' }, 'Runs'), zoneNote()), runsBox, h('div', { class: 'more-row' }, more))));

  const fail = (what, e) => {
    fill(problem, h('div', { class: 'error-box', role: 'alert' }, what + ': ' + (e && e.message ? e.message : String(e))));
    toast(what + ': ' + (e && e.message ? e.message : String(e)), 'error');
  };

  const runNow = h('button', { class: 'btn btn-primary btn-sm', type: 'button', id: 'job-run' }, icon('bolt'), 'Run now');
  const toggle = h('button', { class: 'btn btn-sm', type: 'button', id: 'job-toggle' });
  runNow.addEventListener('click', async () => {
    runNow.disabled = true;
    fill(problem);
    try {
      const run = await post(path('jobs', name, 'run'));
      if (run && run.run) first = [run, ...first.filter((r) => r.run !== run.run)];
      showRuns();
      toast('Started run ' + (run && run.run ? run.run : ''));
      p.again(FAST);
    } catch (e) {
      fail('Run now failed', e);
    } finally {
      runNow.disabled = false;
    }
  });
  toggle.addEventListener('click', async () => {
    const pausing = job.enabled;
    toggle.disabled = true;
    fill(problem);
    try {
      job = await post(path('jobs', name, pausing ? 'pause' : 'resume'));
      showJob();
      toast(pausing ? 'Paused ' + name : 'Resumed ' + name);
    } catch (e) {
      fail((pausing ? 'Pause' : 'Resume') + ' failed', e);
    } finally {
      toggle.disabled = false;
    }
  });

  // The head is built once and changed in place, so a refresh does not
  // take the focus from its buttons.
  const desc = h('p', { class: 'muted' });
  const status = h('div', { class: 'job-status' });
  const notActive = h('div');
  const showJob = () => {
    const st = jobState(job);
    if (!head.contains(runNow)) fill(head, h('div', { class: 'page-head' }, h('div', null, h('h1', null, h('span', { class: 'mono' }, name)), desc), h('div', { class: 'page-actions' }, runNow, toggle)), status, notActive);
    desc.textContent = job.description || '';
    desc.hidden = !job.description;
    toggle.textContent = job.enabled ? 'Pause' : 'Resume';
    toggle.setAttribute('aria-label', (job.enabled ? 'Pause ' : 'Resume ') + name);
    fill(status, badge(st, job.error || null), h('span', { class: 'muted small' }, ' agent ', h('strong', null, job.agent || '?')));
    fill(notActive, job.error ? h('div', { class: 'error-box', role: 'alert' }, h('strong', null, 'Not active: '), job.error) : null);
    const key = JSON.stringify([job.agent, job.triggers, st, job.last]);
    if (key !== specKey) drawSpec(st);
    specKey = key;
    showFires();
  };
  let specKey = '';
  const drawSpec = (st) => {
    fill(spec, h('h2', { id: 'job-spec-h' }, 'Spec'),
      h('dl', { class: 'kv' },
        h('dt', null, 'Agent'), h('dd', null, job.agent || ''),
        h('dt', null, 'Triggers'), h('dd', null, (job.triggers || []).length
          ? h('ul', { class: 'job-trigger-list' }, job.triggers.map((t) => h('li', null, h('span', { class: 'chip' }, triggerWords(t)), t.catch_up ? h('span', { class: 'muted small' }, ' catch-up ' + t.catch_up) : null)))
          : h('span', { class: 'muted' }, 'none: it runs when asked')),
        h('dt', null, 'State'), h('dd', null, st === 'paused' ? 'paused: nothing fires it until it is resumed' : st === 'error' ? 'not active on this node' : 'active'),
        h('dt', null, 'Last run'), h('dd', null, job.last ? [badge(job.last.status), ' ', when(job.last.started)] : 'none yet')),
      h('p', { class: 'small' }, h('a', { href: routeHash('extensions', 'job', name) }, 'The whole row in Extensions')));
  };

  const showFires = () => {
    const list = upcoming(job, Date.now());
    shown = list.join();
    fill(fires, h('h2', { id: 'job-fires-h' }, 'Next fires'),
      list.length
        ? h('ol', { class: 'job-fire-list', 'aria-label': 'Next fire times' }, list.map((f) => h('li', null, when(f))))
        : h('p', { class: 'muted no-fires' }, !job.enabled ? 'None: the job is paused.' : job.error ? 'None: the job is not active.' : 'None: no time trigger fires it.'),
      zoneNote());
  };

  // showRuns draws the history again, unless nothing in it changed; an
  // output opened and the focus stay where they were.
  let drawn = '';
  const showRuns = () => {
    const seen = new Set(first.map((r) => r.run));
    const runs = [...first, ...older.filter((r) => !seen.has(r.run))];
    more.hidden = !cursor;
    const key = JSON.stringify(runs);
    if (key === drawn && !runs.some((r) => OPEN.has(r.status))) return;
    drawn = key;
    const opened = new Set([...runsBox.querySelectorAll('details[open]')].map((d) => d.closest('tr').dataset.run));
    const act = document.activeElement;
    const focus = act && runsBox.contains(act) && act.closest('tr') ? [act.closest('tr').dataset.run, act.tagName] : null;
    drawRuns(runs);
    for (const tr of runsBox.querySelectorAll('tr[data-run]')) {
      const d = tr.querySelector('details');
      if (d && opened.has(tr.dataset.run)) d.open = true;
      if (focus && tr.dataset.run === focus[0]) {
        const el = tr.querySelector(focus[1] === 'SUMMARY' ? 'summary' : 'a');
        if (el) el.focus();
      }
    }
  };
  const drawRuns = (runs) => {
    if (!runs.length) {
      fill(runsBox, empty('No runs yet', 'Runs appear here as the job fires, or when you run it now.'));
      return;
    }
    const now = Date.now();
    fill(runsBox, h('div', { class: 'table-scroll' }, h('table', { class: 'table runs-table' },
      h('thead', null, h('tr', null, ['Status', 'Trigger', 'Scheduled', 'Started', 'Took', 'Cost', 'Steps', 'Output', 'Session']
        .map((x) => h('th', { scope: 'col', class: ['Took', 'Cost', 'Steps'].includes(x) ? 'num' : null }, x)))),
      h('tbody', null, runs.map((r) => {
        const [agent, key] = splitAddr(r.session || '');
        const ms = took(r, now);
        return h('tr', { 'data-run': r.run, 'data-status': r.status },
          h('td', { 'data-label': 'Status' }, badge(r.status), h('div', { class: 'mono small muted run-id' }, r.run)),
          h('td', { 'data-label': 'Trigger' }, r.trigger || ''),
          h('td', { 'data-label': 'Scheduled', class: 'small' }, r.scheduled ? when(r.scheduled) : ''),
          h('td', { 'data-label': 'Started', class: 'small' }, r.started ? inZone(r.started) : ''),
          h('td', { 'data-label': 'Took', class: 'num' }, ms === null ? '' : (r.ended ? '' : 'running ') + fmtDuration(ms)),
          h('td', { 'data-label': 'Cost', class: 'num' }, r.cost_usd ? fmtUSD(r.cost_usd) : ''),
          h('td', { 'data-label': 'Steps', class: 'num' }, r.steps ? String(r.steps) : ''),
          h('td', { 'data-label': 'Output', class: 'run-output' },
            r.error ? h('div', { class: 'run-error' }, h('strong', null, 'Error: '), preview(r.error)) : null,
            r.delivery_error ? h('div', { class: 'run-error' }, h('strong', null, 'Not delivered: '), preview(r.delivery_error)) : null,
            r.output ? (r.output.length > 140
              ? h('details', null, h('summary', null, preview(r.output)), h('pre', { class: 'code' }, r.output))
              : h('span', null, r.output)) : null),
          h('td', { 'data-label': 'Session', class: 'row-actions' }, agent && key
            ? h('a', { href: routeHash('chat', agent, key), class: 'btn btn-sm', 'aria-label': 'Open the session of run ' + r.run }, icon('chat'), 'Chat')
            : null));
      })))));
  };

  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const pg = await get(path('jobs', name, 'runs') + query({ limit: PAGE, before: cursor }));
      older = [...older, ...((pg && pg.runs) || [])];
      cursor = (pg && pg.next) || '';
      showRuns();
    } catch (e) {
      fail('Older runs not read', e);
    } finally {
      more.disabled = false;
    }
  });

  // refresh reads the job and the newest page of runs; it answers when to
  // read them again.
  const refresh = async () => {
    if (busy) return FAST;
    busy = true;
    try {
      const [j, pg] = await Promise.all([get(path('jobs', name)), get(path('jobs', name, 'runs') + query({ limit: PAGE }))]);
      if (!alive) return SLOW;
      job = j;
      first = (pg && pg.runs) || [];
      if (!older.length) cursor = (pg && pg.next) || '';
      showJob();
      showRuns();
      fill(stale);
      return soon(first.some((r) => OPEN.has(r.status)), upcoming(job, Date.now()), Date.now());
    } catch (e) {
      if (!alive) return SLOW;
      if (!job) fill(head, e instanceof APIError && e.status === 404 ? empty('No such job', 'There is no job ' + name + '.') : errorBox(e));
      else fill(stale, h('div', { class: 'error-box small', role: 'alert' }, 'Not refreshed: ' + e.message));
      return SLOW;
    } finally {
      busy = false;
    }
  };
  let shown = '';
  const p = poller(el, refresh, () => {
    // A fire that passed leaves the list without asking agentd.
    if (!job) return;
    const now = upcoming(job, Date.now()).join();
    if (now !== shown) showFires();
  });
  p.now();
  return { unmount() { alive = false; p.stop(); } };
}
