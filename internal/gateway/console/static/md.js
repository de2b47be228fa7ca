// Markdown for the console: a small parser written for chat replies, safe by
// construction. It never produces HTML from the source: it builds a tree of
// plain objects whose text is only ever put into text nodes, from a fixed
// set of tags; the only attribute that comes from the source is a link's
// href, and only an http(s) URL becomes one.
//
// Supported: paragraphs with line breaks, ATX headings, fenced code blocks,
// inline code, bold, italic, strikethrough, links and bare http(s) URLs,
// bullet and numbered lists (nested), block quotes, rules and GFM tables.
//
// A node is a string (text) or {t: tag, c: [children], href, lang, start, align}.

export const TAGS = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'pre', 'code', 'strong', 'em', 'del', 'a', 'ul', 'ol',
  'li', 'blockquote', 'hr', 'br', 'table', 'thead', 'tbody', 'tr', 'th', 'td']);

const MAX_DEPTH = 12;   // nesting of quotes, lists and emphasis; deeper is text
const MAX_INPUT = 200000; // characters rendered; the rest is shown as plain text

// safeHref returns the URL if it is an absolute http(s) URL, else null.
export function safeHref(url) {
  if (typeof url !== 'string') return null;
  const u = url.trim();
  // No controls or spaces: browsers strip them, which is how "java\tscript:" gets through elsewhere.
  if (!/^https?:\/\/[^\s\x00-\x1f\x7f]+$/i.test(u)) return null;
  try {
    const p = new URL(u);
    if (p.protocol !== 'http:' && p.protocol !== 'https:') return null;
    return p.href;
  } catch {
    return null;
  }
}

// parse turns markdown source into block nodes.
export function parse(src) {
  src = String(src ?? '').replace(/\r\n?/g, '\n');
  let tail = null;
  if (src.length > MAX_INPUT) {
    tail = src.slice(MAX_INPUT);
    src = src.slice(0, MAX_INPUT);
  }
  const out = blocks(src.split('\n'), 0);
  if (tail !== null) out.push({ t: 'pre', c: [{ t: 'code', c: [tail] }] });
  return out;
}

const reFence = /^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const reHeading = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const reRule = /^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const reQuote = /^ {0,3}> ?/;
const reItem = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$/;
const reDelim = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;

function isBlank(l) { return /^[ \t]*$/.test(l); }

function startsBlock(l, next) {
  return reFence.test(l) || reHeading.test(l) || reRule.test(l) || reQuote.test(l) || reItem.test(l) ||
    (next !== undefined && isTableStart(l, next));
}

function isTableStart(l, next) {
  return l.includes('|') && reDelim.test(next) && next.includes('-') && (next.includes('|') || l.trim().startsWith('|'));
}

function blocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const l = lines[i];
    if (isBlank(l)) { i++; continue; }
    let m;
    if ((m = reFence.exec(l))) {
      const fence = m[1];
      const lang = (m[2] || '').toLowerCase().replace(/[^a-z0-9+#.-]/g, '').slice(0, 24);
      const body = [];
      i++;
      while (i < lines.length) {
        const c = lines[i].trim();
        if (c.length >= fence.length && c[0] === fence[0] && /^(`+|~+)$/.test(c)) { i++; break; }
        body.push(lines[i]);
        i++;
      }
      const code = { t: 'code', c: [body.join('\n')] };
      if (lang) code.lang = lang;
      out.push({ t: 'pre', c: [code] });
      continue;
    }
    if ((m = reHeading.exec(l))) {
      out.push({ t: 'h' + m[1].length, c: inline(m[2] || '', depth) });
      i++;
      continue;
    }
    if (reRule.test(l)) { out.push({ t: 'hr', c: [] }); i++; continue; }
    if (reQuote.test(l)) {
      const body = [];
      while (i < lines.length && !isBlank(lines[i]) && (reQuote.test(lines[i]) || body.length)) {
        if (!reQuote.test(lines[i]) && startsBlock(lines[i], lines[i + 1])) break;
        body.push(lines[i].replace(reQuote, ''));
        i++;
      }
      out.push(depth < MAX_DEPTH ? { t: 'blockquote', c: blocks(body, depth + 1) } : { t: 'p', c: [body.join('\n')] });
      continue;
    }
    if ((m = reItem.exec(l))) {
      i = list(lines, i, depth, out);
      continue;
    }
    if (i + 1 < lines.length && isTableStart(l, lines[i + 1])) {
      i = table(lines, i, depth, out);
      continue;
    }
    const para = [l];
    i++;
    while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines[i], lines[i + 1])) {
      para.push(lines[i]);
      i++;
    }
    out.push({ t: 'p', c: inline(para.map((s) => s.trim()).join('\n'), depth) });
  }
  return out;
}

function list(lines, i, depth, out) {
  const first = reItem.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const kind = ordered ? first[2].slice(-1) : first[2];
  const node = { t: ordered ? 'ol' : 'ul', c: [] };
  if (ordered) {
    const n = parseInt(first[2], 10);
    if (n !== 1) node.start = n;
  }
  let loose = false;
  while (i < lines.length) {
    const m = reItem.exec(lines[i]);
    if (!m || m[1].length > 3) break;
    const mk = /\d/.test(m[2]) ? m[2].slice(-1) : m[2];
    if (/\d/.test(m[2]) !== ordered || mk !== kind) break;
    const indent = m[1].length + m[2].length + Math.min(Math.max(m[3].length, 1), 4);
    const body = [m[4]];
    i++;
    let blankBefore = false;
    while (i < lines.length) {
      const l = lines[i];
      if (isBlank(l)) {
        // A blank line ends the item unless what follows is indented into it.
        let j = i + 1;
        while (j < lines.length && isBlank(lines[j])) j++;
        if (j < lines.length && leading(lines[j]) >= indent) {
          for (; i < j; i++) body.push('');
          blankBefore = true;
          continue;
        }
        break;
      }
      if (leading(l) >= indent) {
        body.push(l.slice(indent));
        i++;
        continue;
      }
      if (leading(l) >= 2 && reItem.test(l.trimStart())) {
        // A nested list indented less than the marker width.
        body.push(l.trimStart());
        i++;
        continue;
      }
      if (!blankBefore && !startsBlock(l, lines[i + 1])) {
        body.push(l.trim()); // lazy continuation of the item's paragraph
        i++;
        continue;
      }
      break;
    }
    if (body.some((l, k) => k > 0 && isBlank(l) && k < body.length - 1)) loose = true;
    const kids = depth < MAX_DEPTH ? blocks(body, depth + 1) : [{ t: 'p', c: [body.join('\n')] }];
    node.c.push({ t: 'li', c: kids });
    // A blank line between items makes the list loose.
    if (i < lines.length && isBlank(lines[i])) {
      let j = i;
      while (j < lines.length && isBlank(lines[j])) j++;
      const n = j < lines.length ? reItem.exec(lines[j]) : null;
      if (n && n[1].length <= 3 && /\d/.test(n[2]) === ordered) { loose = true; i = j; }
    }
  }
  if (!loose) {
    // Tight: an item's paragraphs are its text.
    for (const li of node.c) {
      li.c = li.c.flatMap((b, k) => (b.t === 'p' ? (k > 0 ? [{ t: 'br', c: [] }, ...b.c] : b.c) : [b]));
    }
  }
  out.push(node);
  return i;
}

function leading(l) {
  let n = 0;
  for (const ch of l) {
    if (ch === ' ') n++;
    else if (ch === '\t') n += 4 - (n % 4);
    else break;
  }
  return n;
}

function cells(l) {
  let s = l.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const out = [];
  let cur = '';
  let code = false;
  for (let k = 0; k < s.length; k++) {
    const ch = s[k];
    if (ch === '\\' && s[k + 1] === '|') { cur += '|'; k++; continue; }
    if (ch === '`') code = !code;
    if (ch === '|' && !code) { out.push(cur.trim()); cur = ''; continue; }
    cur += ch;
  }
  out.push(cur.trim());
  return out;
}

function table(lines, i, depth, out) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((d) => {
    const l = d.startsWith(':');
    const r = d.endsWith(':');
    return l && r ? 'center' : r ? 'right' : l ? 'left' : '';
  });
  const n = head.length;
  const row = (cs, tag) => ({
    t: 'tr',
    c: Array.from({ length: n }, (_, k) => {
      const cell = { t: tag, c: inline(cs[k] ?? '', depth) };
      if (align[k]) cell.align = align[k];
      return cell;
    }),
  });
  const node = { t: 'table', c: [{ t: 'thead', c: [row(head, 'th')] }] };
  const body = [];
  i += 2;
  while (i < lines.length && !isBlank(lines[i]) && lines[i].includes('|') && !reFence.test(lines[i])) {
    body.push(row(cells(lines[i]), 'td'));
    i++;
  }
  if (body.length) node.c.push({ t: 'tbody', c: body });
  out.push(node);
  return i;
}

const PUNCT = /[!-/:-@[-`{-~]/;

// inline parses the text of a paragraph, heading, cell or item.
export function inline(s, depth = 0, noLinks = false) {
  const out = [];
  let text = '';
  const flush = () => { if (text) { out.push(text); text = ''; } };
  const push = (node) => { flush(); out.push(node); };
  // fail[k] is the position from which no closer of delimiter k exists.
  const fail = {};
  let i = 0;
  while (i < s.length) {
    const ch = s[i];
    if (ch === '\\' && i + 1 < s.length && PUNCT.test(s[i + 1])) { text += s[i + 1]; i += 2; continue; }
    if (ch === '\n') { push({ t: 'br', c: [] }); i++; continue; }
    if (ch === '`') {
      let n = 1;
      while (s[i + n] === '`') n++;
      const close = findRun(s, i + n, '`', n);
      if (close < 0) { text += s.slice(i, i + n); i += n; continue; }
      let code = s.slice(i + n, close).replace(/\n/g, ' ');
      if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim()) code = code.slice(1, -1);
      push({ t: 'code', c: [code] });
      i = close + n;
      continue;
    }
    if (!noLinks && ch === '<') {
      const m = /^<(https?:\/\/[^\s<>]+)>/i.exec(s.slice(i, i + 2048));
      if (m && safeHref(m[1])) { push({ t: 'a', href: safeHref(m[1]), c: [m[1]] }); i += m[0].length; continue; }
    }
    if (ch === '[' || (ch === '!' && s[i + 1] === '[')) {
      const img = ch === '!';
      const l = link(s, img ? i + 1 : i);
      if (l) {
        const href = safeHref(l.url);
        const kids = depth < MAX_DEPTH ? inline(l.text, depth + 1, true) : [l.text];
        if (href && !noLinks) push({ t: 'a', href, c: kids.length ? kids : [l.url] });
        else { flush(); out.push(...kids); }
        i = l.end;
        continue;
      }
    }
    if (!noLinks && (ch === 'h' || ch === 'H') && (i === 0 || !/[\w/]/.test(s[i - 1]))) {
      const m = /^https?:\/\/[^\s<>]+/i.exec(s.slice(i, i + 2048));
      if (m) {
        let url = m[0];
        // Trailing punctuation belongs to the sentence, and an unmatched ) to its parenthesis.
        while (/[.,:;!?'"*_~]$/.test(url) || (url.endsWith(')') && count(url, '(') < count(url, ')'))) url = url.slice(0, -1);
        const href = safeHref(url);
        if (href) { push({ t: 'a', href, c: [url] }); i += url.length; continue; }
      }
    }
    if (ch === '*' || ch === '_' || ch === '~') {
      let n = 1;
      while (s[i + n] === ch) n++;
      const run = n;
      if (ch === '~' && n !== 2) { text += s.slice(i, i + n); i += n; continue; }
      n = Math.min(n, 3);
      const after = s[i + run];
      const before = i > 0 ? s[i - 1] : ' ';
      const opens = after !== undefined && !/\s/.test(after) &&
        (ch !== '_' || !/[\p{L}\p{N}]/u.test(before));
      const key = ch + n;
      if (opens && run === n && depth < MAX_DEPTH && !(fail[key] <= i)) {
        const close = findDelim(s, i + n, ch, n);
        if (close < 0) fail[key] = i;
        else {
          const inner = inline(s.slice(i + n, close), depth + 1, noLinks);
          let node;
          if (ch === '~') node = { t: 'del', c: inner };
          else if (n === 1) node = { t: 'em', c: inner };
          else if (n === 2) node = { t: 'strong', c: inner };
          else node = { t: 'strong', c: [{ t: 'em', c: inner }] };
          push(node);
          i = close + n;
          continue;
        }
      }
      text += s.slice(i, i + run);
      i += run;
      continue;
    }
    text += ch;
    i++;
  }
  flush();
  return out;
}

function count(s, ch) { let n = 0; for (const c of s) if (c === ch) n++; return n; }

// findRun finds the next run of exactly n chars ch at or after from.
function findRun(s, from, ch, n) {
  let j = s.indexOf(ch, from);
  while (j >= 0) {
    let m = 1;
    while (s[j + m] === ch) m++;
    if (m === n) return j;
    j = s.indexOf(ch, j + m);
  }
  return -1;
}

// findDelim finds the closer of an emphasis run: the same char, the same
// length, after a character that is not a space; code spans are skipped.
function findDelim(s, from, ch, n) {
  let j = from;
  while (j < s.length) {
    const c = s[j];
    if (c === '\\') { j += 2; continue; }
    if (c === '`') {
      let m = 1;
      while (s[j + m] === '`') m++;
      const close = findRun(s, j + m, '`', m);
      j = close < 0 ? j + m : close + m;
      continue;
    }
    if (c === ch) {
      let m = 1;
      while (s[j + m] === ch) m++;
      const after = s[j + m];
      if (m === n && j > from && !/\s/.test(s[j - 1]) &&
        (ch !== '_' || after === undefined || !/[\p{L}\p{N}]/u.test(after))) return j;
      j += m;
      continue;
    }
    j++;
  }
  return -1;
}

// link parses [text](url "title") at s[i] === '['.
function link(s, i) {
  let d = 0;
  let j = i;
  for (; j < s.length && j - i < 1024; j++) {
    const c = s[j];
    if (c === '\\') { j++; continue; }
    if (c === '`') {
      let m = 1;
      while (s[j + m] === '`') m++;
      const close = findRun(s, j + m, '`', m);
      if (close > 0) { j = close + m - 1; continue; }
    }
    if (c === '[') d++;
    else if (c === ']' && --d === 0) break;
  }
  if (d !== 0 || s[j + 1] !== '(') return null;
  const m = /^\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+("[^"\n]*"|'[^'\n]*'))?\s*\)/.exec(s.slice(j + 1, j + 4096));
  if (!m) return null;
  let url = m[1];
  if (url.startsWith('<')) url = url.slice(1, -1);
  return { text: s.slice(i + 1, j), url, end: j + 1 + m[0].length };
}

// render parses src and builds DOM nodes in doc (a Document).
export function render(src, doc = document) {
  const frag = doc.createDocumentFragment();
  for (const n of parse(src)) frag.appendChild(toDOM(n, doc));
  return frag;
}

// toDOM builds one node. A tag outside TAGS becomes its text.
export function toDOM(n, doc = document) {
  if (typeof n === 'string') return doc.createTextNode(n);
  if (!TAGS.has(n.t)) return doc.createTextNode(textOf(n));
  const el = doc.createElement(n.t);
  if (n.t === 'a') {
    const href = safeHref(n.href);
    if (!href) return doc.createTextNode(textOf(n));
    el.setAttribute('href', href);
    el.setAttribute('rel', 'noopener noreferrer nofollow');
    el.setAttribute('target', '_blank');
  }
  if (n.t === 'code' && n.lang) el.className = 'lang-' + String(n.lang).replace(/[^a-z0-9+#.-]/g, '');
  if (n.t === 'ol' && Number.isInteger(n.start)) el.setAttribute('start', String(n.start));
  if ((n.t === 'th' || n.t === 'td') && /^(left|right|center)$/.test(n.align || '')) el.className = 'al-' + n.align;
  for (const c of n.c || []) el.appendChild(toDOM(c, doc));
  return el;
}

// textOf is the plain text of a node.
export function textOf(n) {
  if (typeof n === 'string') return n;
  if (n.t === 'br') return '\n';
  return (n.c || []).map(textOf).join('');
}

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function escapeHTML(s) { return String(s).replace(/[&<>"']/g, (c) => ESC[c]); }

// toHTML serializes nodes as HTML, escaping all text: what render builds,
// as a string (for tests and for copying).
export function toHTML(nodes) {
  return nodes.map(htmlOf).join('');
}

function htmlOf(n) {
  if (typeof n === 'string') return escapeHTML(n);
  if (!TAGS.has(n.t)) return escapeHTML(textOf(n));
  if (n.t === 'br' || n.t === 'hr') return `<${n.t}>`;
  let attrs = '';
  if (n.t === 'a') {
    const href = safeHref(n.href);
    if (!href) return escapeHTML(textOf(n));
    attrs = ` href="${escapeHTML(href)}" rel="noopener noreferrer nofollow" target="_blank"`;
  }
  if (n.t === 'code' && n.lang) attrs = ` class="lang-${escapeHTML(String(n.lang).replace(/[^a-z0-9+#.-]/g, ''))}"`;
  if (n.t === 'ol' && Number.isInteger(n.start)) attrs = ` start="${n.start}"`;
  if ((n.t === 'th' || n.t === 'td') && /^(left|right|center)$/.test(n.align || '')) attrs = ` class="al-${n.align}"`;
  return `<${n.t}${attrs}>${(n.c || []).map(htmlOf).join('')}</${n.t}>`;
}
