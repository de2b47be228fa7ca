// JSON Schema validation for the console: the subset agentd's extension
// types are written in, with the server's messages and pointers, so that
// an editor can show every problem before a save (internal/schema is the
// same validator in Go; both run over internal/schema/testdata).
//
// compile(schema) returns {validate(value) → [{pointer, message}]} and
// throws an Error (the server's wording) for a schema outside the subset.
// Patterns run with the "u" flag; compile refuses RE2-only syntax.

const ANNOTATIONS = new Set(['$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'deprecated',
  'readOnly', 'writeOnly', 'format']);
const TYPE_NAMES = ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string'];
const TYPE_NOUN = {
  array: 'an array', boolean: 'true or false', integer: 'a whole number', null: 'null',
  number: 'a number', object: 'an object', string: 'a string',
};
const MAX_INT32 = 2147483647;

const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// byCodePoint orders strings as Go does (by UTF-8 bytes, which is by code point).
export function byCodePoint(a, b) {
  const x = Array.from(a, (c) => c.codePointAt(0));
  const y = Array.from(b, (c) => c.codePointAt(0));
  for (let i = 0; i < x.length && i < y.length; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}
const sortedKeys = (o) => Object.keys(o).sort(byCodePoint);

// escape escapes a property name for a JSON pointer (RFC 6901).
export function escape(s) {
  return s.replaceAll('~', '~0').replaceAll('/', '~1');
}

// errorString is "pointer: message", as the server writes it.
export function errorString(e) {
  return (e.pointer === '' ? '/' : e.pointer) + ': ' + e.message;
}

function schemaError(ptr, msg) {
  return new Error('schema: invalid schema: ' + (ptr === '' ? '/' : ptr) + ': ' + msg);
}

// quote is Go's %q for the strings compile errors name.
const quote = (s) => JSON.stringify(s);

export function compile(schema) {
  const c = { root: {}, defs: new Map() };
  if (isObject(schema) && has(schema, '$defs')) {
    const dm = schema.$defs;
    if (!isObject(dm)) throw schemaError('/$defs', 'must be an object');
    for (const name of sortedKeys(dm)) c.defs.set(name, {});
    for (const name of sortedKeys(dm)) Object.assign(c.defs.get(name), compileNode(c, dm[name], '/$defs/' + escape(name)));
  }
  Object.assign(c.root, compileNode(c, schema, ''));
  checkCycles(c.root);
  const root = c.root;
  return {
    validate(value) {
      const errs = [];
      validate(root, value, '', errs);
      return dedupe(errs);
    },
  };
}

function dedupe(errs) {
  const seen = new Set();
  return errs.filter((e) => {
    const k = e.pointer + '\u0000' + e.message;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function compileNode(c, v, ptr) {
  if (typeof v === 'boolean') return { never: !v };
  if (!isObject(v)) throw schemaError(ptr, 'a schema must be an object, true or false');
  const n = {};
  for (const k of sortedKeys(v)) keyword(c, n, k, v[k], ptr);
  return n;
}

function keyword(c, n, k, v, ptr) {
  const at = ptr + '/' + escape(k);
  switch (k) {
    case 'title': if (typeof v === 'string') n.title = v; break;
    case '$defs': if (ptr !== '') throw schemaError(at, '$defs is allowed at the root only'); break;
    case '$ref': n.ref = refTarget(c, v, at); break;
    case 'type': n.types = compileTypes(v, at); break;
    case 'enum':
      if (!Array.isArray(v) || v.length === 0) throw schemaError(at, 'must be a non-empty array');
      n.enum = v;
      break;
    case 'const': n.hasConst = true; n.const = v; break;
    case 'minimum': case 'maximum': case 'exclusiveMinimum': case 'exclusiveMaximum':
      n[k] = number(v, at);
      break;
    case 'multipleOf':
      n.multipleOf = number(v, at);
      if (n.multipleOf <= 0) throw schemaError(at, 'must be greater than 0');
      break;
    case 'minLength': case 'maxLength': case 'minItems': case 'maxItems': case 'minProperties': case 'maxProperties':
      n[k] = count(v, at);
      break;
    case 'uniqueItems':
      if (typeof v !== 'boolean') throw schemaError(at, 'must be true or false');
      n.uniqueItems = v;
      break;
    case 'pattern': n.pattern = compilePattern(v, at); n.patternSource = v; break;
    case 'required': n.required = stringList(v, at); break;
    case 'properties': n.properties = schemaMap(c, v, at); break;
    case 'patternProperties': n.patternProperties = patternProperties(c, v, at); break;
    case 'additionalProperties': case 'propertyNames': case 'items': case 'not': case 'if': case 'then': case 'else':
      n[k] = compileNode(c, v, at);
      break;
    case 'allOf': case 'anyOf': case 'oneOf': n[k] = schemaList(c, v, at); break;
    default:
      if (!ANNOTATIONS.has(k) && !k.startsWith('x-')) throw schemaError(at, `keyword ${quote(k)} is not supported`);
  }
}

function refTarget(c, v, at) {
  if (typeof v !== 'string') throw schemaError(at, 'must be a string');
  if (v === '#') return c.root;
  if (!v.startsWith('#/$defs/')) throw schemaError(at, `only "#" and "#/$defs/<name>" are supported, not ${quote(v)}`);
  const name = v.slice('#/$defs/'.length).replaceAll('~1', '/').replaceAll('~0', '~');
  if (!c.defs.has(name)) throw schemaError(at, `no $defs entry ${quote(name)}`);
  return c.defs.get(name);
}

function compileTypes(v, at) {
  let list;
  if (typeof v === 'string') list = [v];
  else if (Array.isArray(v)) {
    list = [];
    for (const x of v) {
      if (typeof x !== 'string') throw schemaError(at, 'must be a type name or a list of them');
      if (list.includes(x)) throw schemaError(at, `names ${quote(x)} twice`);
      list.push(x);
    }
    if (list.length === 0) throw schemaError(at, 'must not be empty');
  } else throw schemaError(at, 'must be a type name or a list of them');
  for (const s of list) if (!TYPE_NAMES.includes(s)) throw schemaError(at, `unknown type ${quote(s)}`);
  return list;
}

function number(v, at) {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw schemaError(at, 'must be a number');
  return v;
}

function count(v, at) {
  if (typeof v !== 'number' || v < 0 || !Number.isInteger(v) || v > MAX_INT32) throw schemaError(at, 'must be a whole number, 0 or more');
  return v;
}

function stringList(v, at) {
  if (!Array.isArray(v)) throw schemaError(at, 'must be an array of strings');
  const out = [];
  for (const x of v) {
    if (typeof x !== 'string') throw schemaError(at, 'must be an array of strings');
    if (out.includes(x)) throw schemaError(at, `names ${quote(x)} twice`);
    out.push(x);
  }
  return out;
}

function schemaMap(c, v, at) {
  if (!isObject(v)) throw schemaError(at, 'must be an object');
  const out = new Map();
  for (const k of sortedKeys(v)) out.set(k, compileNode(c, v[k], at + '/' + escape(k)));
  return out;
}

function patternProperties(c, v, at) {
  if (!isObject(v)) throw schemaError(at, 'must be an object');
  return sortedKeys(v).map((k) => ({ re: compilePattern(k, at + '/' + escape(k)), schema: compileNode(c, v[k], at + '/' + escape(k)) }));
}

function schemaList(c, v, at) {
  if (!Array.isArray(v) || v.length === 0) throw schemaError(at, 'must be a non-empty array of schemas');
  return v.map((s, i) => compileNode(c, s, at + '/' + i));
}

function compilePattern(v, at) {
  if (typeof v !== 'string') throw schemaError(at, 'must be a string');
  const bad = notPortable(v);
  if (bad) throw schemaError(at, `pattern ${quote(v)} uses ${bad}, which JavaScript reads differently`);
  try {
    return new RegExp(v, 'u');
  } catch (e) {
    throw schemaError(at, `bad pattern ${quote(v)}: ${e.message}`);
  }
}

// notPortable is internal/schema's check of the same name: the first piece
// of RE2-only syntax in p, or ''.
function notPortable(p) {
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    const rest = p.slice(i + 1);
    if (c === '\\' && i + 1 < p.length) {
      i++;
      const [skip, bad] = badEscape(p.slice(i), inClass);
      if (bad) return bad;
      i += skip;
    } else if (c === '[' && !inClass) {
      inClass = true;
      if (rest.startsWith('^')) i++;
      if (p.slice(i + 1).startsWith(']')) return "a class starting with ']'";
    } else if (c === '[' && inClass && rest.startsWith(':')) {
      return 'a POSIX class';
    } else if (c === ']' && inClass) {
      inClass = false;
    } else if ((c === ']' || c === '}') && !inClass) {
      return 'a literal ' + c + ' (escape it)';
    } else if (c === '{' && !inClass) {
      const m = /^\{[0-9]+(?:,[0-9]*)?\}/.exec(p.slice(i));
      if (!m) return 'a literal { (escape it)';
      i += m[0].length - 1;
    } else if (c === '(' && !inClass && rest.startsWith('?') && !rest.startsWith('?:')) {
      return 'a flag or named group';
    }
  }
  return '';
}

// badEscape checks the escape whose letter starts rest: [how many more
// characters it takes, what is wrong ('' when nothing)].
function badEscape(rest, inClass) {
  const c = rest[0];
  if ('dDsSwWtnrfv^$\\.*+?()[]{}|/'.includes(c)) return [0, ''];
  if ((c === 'b' || c === 'B') && !inClass) return [0, ''];
  if (c === '-' && inClass) return [0, ''];
  if ((c === 'p' || c === 'P') && rest[1] === '{' && rest.indexOf('}') > 0) return [rest.indexOf('}'), ''];
  if (c === 'x' && /^x[0-9a-fA-F]{2}/.test(rest)) return [2, ''];
  return [0, 'the escape \\' + String.fromCodePoint(rest.codePointAt(0))];
}

const inPlace = (n) => [n.ref, n.not, n.if, n.then, n.else, ...(n.allOf || []), ...(n.anyOf || []), ...(n.oneOf || [])].filter(Boolean);
const children = (n) => [n.items, n.additionalProperties, n.propertyNames,
  ...(n.properties ? [...n.properties.values()] : []), ...(n.patternProperties || []).map((p) => p.schema)].filter(Boolean);

function checkCycles(root) {
  const all = [];
  const seen = new Set();
  const collect = (n) => {
    if (seen.has(n)) return;
    seen.add(n);
    all.push(n);
    for (const m of [...inPlace(n), ...children(n)]) collect(m);
  };
  collect(root);
  const state = new Map();
  const visit = (n) => {
    if (state.get(n) === 1) return false;
    if (state.get(n) === 2) return true;
    state.set(n, 1);
    for (const m of inPlace(n)) if (!visit(m)) return false;
    state.set(n, 2);
    return true;
  };
  for (const n of all) if (!visit(n)) throw schemaError('', 'a $ref refers back to itself without going into the value');
}

function kindOf(v) {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'boolean': return 'boolean';
    case 'number': return Number.isFinite(v) ? 'number' : '';
    case 'string': return 'string';
  }
  if (Array.isArray(v)) return 'array';
  if (isObject(v)) return 'object';
  return '';
}

function typeMatches(types, kind, v) {
  return types.some((t) => t === kind || (t === 'integer' && kind === 'number' && Number.isInteger(v)));
}

function orList(items) {
  if (items.length === 1) return items[0];
  return items.slice(0, -1).join(', ') + ' or ' + items[items.length - 1];
}

const typeMessage = (types) => 'must be ' + orList(types.map((t) => TYPE_NOUN[t]));

// formatNumber is how messages write numbers (the server writes them so too).
const formatNumber = (f) => String(f);

// literal writes a JSON value for a message: sorted keys; a string alone is unquoted.
function literal(v, top) {
  if (typeof v === 'number') return formatNumber(v);
  if (typeof v === 'string') return top ? v : JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map((x) => literal(x, false)).join(',') + ']';
  if (isObject(v)) return '{' + sortedKeys(v).map((k) => JSON.stringify(k) + ':' + literal(v[k], false)).join(',') + '}';
  if (typeof v === 'boolean') return String(v);
  return 'null';
}

function enumMessage(e) {
  if (e.length === 1) return 'must be ' + literal(e[0], true);
  return 'must be one of: ' + e.map((x) => literal(x, true)).join(', ');
}

const plural = (n, one, many) => (n === 1 ? '1 ' + one : n + ' ' + many);

function equal(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => has(b, k) && equal(a[k], b[k]));
  }
  return false;
}

function validate(n, v, ptr, errs) {
  const add = (message) => errs.push({ pointer: ptr, message });
  if (n.never) return add('is not allowed here');
  const kind = kindOf(v);
  if (kind === '') return add(`is not a JSON value (${typeof v})`);
  if (n.types && !typeMatches(n.types, kind, v)) return add(typeMessage(n.types));
  if (n.enum && !n.enum.some((e) => equal(e, v))) return add(enumMessage(n.enum));
  if (n.hasConst && !equal(n.const, v)) return add('must be ' + literal(n.const, true));
  if (kind === 'number') validateNumber(n, v, add);
  else if (kind === 'string') validateString(n, v, add);
  else if (kind === 'array') validateArray(n, v, ptr, errs);
  else if (kind === 'object') validateObject(n, v, ptr, errs);
  validateApplicators(n, v, ptr, errs);
}

function validateNumber(n, f, add) {
  if (n.minimum !== undefined && f < n.minimum) add('must be at least ' + formatNumber(n.minimum));
  if (n.maximum !== undefined && f > n.maximum) add('must be at most ' + formatNumber(n.maximum));
  if (n.exclusiveMinimum !== undefined && f <= n.exclusiveMinimum) add('must be greater than ' + formatNumber(n.exclusiveMinimum));
  if (n.exclusiveMaximum !== undefined && f >= n.exclusiveMaximum) add('must be less than ' + formatNumber(n.exclusiveMaximum));
  if (n.multipleOf !== undefined && !Number.isInteger(f / n.multipleOf)) add('must be a multiple of ' + formatNumber(n.multipleOf));
}

function validateString(n, s, add) {
  if (n.minLength !== undefined || n.maxLength !== undefined) {
    const l = [...s].length;
    if (n.minLength !== undefined && l < n.minLength) {
      add(n.minLength === 1 ? 'must not be empty' : `must be at least ${plural(n.minLength, 'character', 'characters')} long`);
    }
    if (n.maxLength !== undefined && l > n.maxLength) add(`must be at most ${plural(n.maxLength, 'character', 'characters')} long`);
  }
  if (n.pattern && !n.pattern.test(s)) add('must match ' + n.patternSource);
}

function validateArray(n, a, ptr, errs) {
  const add = (message) => errs.push({ pointer: ptr, message });
  if (n.minItems !== undefined && a.length < n.minItems) add('must have at least ' + plural(n.minItems, 'item', 'items'));
  if (n.maxItems !== undefined && a.length > n.maxItems) add('must have at most ' + plural(n.maxItems, 'item', 'items'));
  if (n.uniqueItems) {
    // literal is the same text for equal values, so a map finds repeats in one pass.
    const first = new Map();
    a.forEach((x, j) => {
      const key = literal(x, false);
      if (first.has(key)) errs.push({ pointer: ptr + '/' + j, message: `is the same as item ${first.get(key)}; items must be unique` });
      else first.set(key, j);
    });
  }
  if (n.items) a.forEach((x, i) => validate(n.items, x, ptr + '/' + i, errs));
}

function validateObject(n, o, ptr, errs) {
  const add = (message) => errs.push({ pointer: ptr, message });
  const keys = sortedKeys(o);
  if (n.minProperties !== undefined && keys.length < n.minProperties) add('must have at least ' + plural(n.minProperties, 'property', 'properties'));
  if (n.maxProperties !== undefined && keys.length > n.maxProperties) add('must have at most ' + plural(n.maxProperties, 'property', 'properties'));
  for (const r of n.required || []) if (!has(o, r)) errs.push({ pointer: ptr + '/' + escape(r), message: 'is required' });
  for (const k of keys) {
    const at = ptr + '/' + escape(k);
    if (n.propertyNames) {
      const nameErrs = [];
      validate(n.propertyNames, k, at, nameErrs);
      for (const e of nameErrs) errs.push({ pointer: at, message: 'the name ' + e.message });
    }
    let matched = false;
    if (n.properties && n.properties.has(k)) {
      matched = true;
      validate(n.properties.get(k), o[k], at, errs);
    }
    for (const p of n.patternProperties || []) {
      if (p.re.test(k)) {
        matched = true;
        validate(p.schema, o[k], at, errs);
      }
    }
    if (!matched && n.additionalProperties) validate(n.additionalProperties, o[k], at, errs);
  }
}

function validateApplicators(n, v, ptr, errs) {
  if (n.ref) validate(n.ref, v, ptr, errs);
  for (const s of n.allOf || []) validate(s, v, ptr, errs);
  if (n.anyOf) {
    const [branches, matched] = tryAll(n.anyOf, v, ptr);
    if (matched.length === 0) errs.push(...noMatch(n.anyOf, branches, v, ptr));
  }
  if (n.oneOf) {
    const [branches, matched] = tryAll(n.oneOf, v, ptr);
    if (matched.length === 0) errs.push(...noMatch(n.oneOf, branches, v, ptr));
    else if (matched.length > 1) {
      let msg = `must match exactly one of the allowed shapes, but matches ${matched.length}`;
      const names = titles(n.oneOf, matched);
      if (names) msg += ' (' + names + ')';
      errs.push({ pointer: ptr, message: msg });
    }
  }
  if (n.not && valid(n.not, v)) {
    const t = titleOf(n.not);
    errs.push({ pointer: ptr, message: t ? 'must not be ' + t : 'must not match the excluded shape' });
  }
  if (n.if) {
    if (valid(n.if, v)) {
      if (n.then) validate(n.then, v, ptr, errs);
    } else if (n.else) validate(n.else, v, ptr, errs);
  }
}

function valid(n, v) {
  const errs = [];
  validate(n, v, '', errs);
  return errs.length === 0;
}

function tryAll(branches, v, ptr) {
  const out = branches.map((b) => {
    const errs = [];
    validate(b, v, ptr, errs);
    return errs;
  });
  const matched = [];
  out.forEach((e, i) => { if (e.length === 0) matched.push(i); });
  return [out, matched];
}

// noMatch is internal/schema's noMatch: why v matched no branch.
function noMatch(branches, errs, v, ptr) {
  const types = [];
  const candidates = [];
  branches.forEach((b, i) => {
    const t = typesOf(b);
    if (!t || typeMatches(t, kindOf(v), v)) {
      candidates.push(i);
      return;
    }
    for (const x of t) if (!types.includes(x)) types.push(x);
  });
  if (candidates.length === 0) return [{ pointer: ptr, message: typeMessage(types) }];
  if (candidates.length === 1) return errs[candidates[0]];
  let best = -1;
  let bestDepth = 0;
  let tie = false;
  for (const i of candidates) {
    let d = 0;
    for (const x of errs[i]) d = Math.max(d, depth(x.pointer));
    if (best < 0 || d > bestDepth || (d === bestDepth && errs[i].length < errs[best].length)) {
      best = i;
      bestDepth = d;
      tie = false;
    } else if (d === bestDepth && errs[i].length === errs[best].length) tie = true;
  }
  if (!tie) return errs[best];
  const names = titles(branches, candidates);
  return [{ pointer: ptr, message: names ? 'must be one of: ' + names : 'must match one of the allowed shapes' }];
}

const depth = (ptr) => ptr.split('/').length - 1;

function titles(branches, idx) {
  const names = idx.map((i) => titleOf(branches[i]));
  return names.every(Boolean) ? names.join(', ') : '';
}

function titleOf(n) {
  for (; n; n = n.ref) if (n.title) return n.title;
  return '';
}

function typesOf(n) {
  for (; n; n = n.ref) {
    if (n.never) return null;
    if (n.types) return n.types;
  }
  return null;
}
