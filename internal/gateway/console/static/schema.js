// JSON Schema validation in the browser, for the subset agentd's extension
// types are written in: every problem of a value, each with its JSON
// pointer, as the server reports them ("/spec/url: must be a string").
// The server validates again on save; this check is for the person typing.

// compile(schema) returns {validate(value) → [{pointer, message}]}: every
// problem of a value, each with its JSON pointer.
export function compile(schema) {
  return {
    validate(value) {
      const out = [];
      check(schema, value, '', out, 0, schema);
      return out;
    },
  };
}

const MAX_DEPTH = 64;

function typeOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function isType(v, t) {
  const got = typeOf(v);
  return got === t || (t === 'number' && got === 'integer');
}

function esc(k) { return String(k).replace(/~/g, '~0').replace(/\//g, '~1'); }

// resolve follows a $ref into the root's $defs ("#/$defs/name").
function resolve(sc, root) {
  for (let i = 0; sc && typeof sc.$ref === 'string' && i < 16; i++) {
    const m = /^#\/\$defs\/([^/]+)$/.exec(sc.$ref);
    const next = m && root && root.$defs ? root.$defs[m[1].replace(/~1/g, '/').replace(/~0/g, '~')] : null;
    if (!next) return null;
    sc = { ...next, ...Object.fromEntries(Object.entries(sc).filter(([k]) => k !== '$ref')) };
  }
  return sc;
}

function check(sc, v, p, out, depth, root) {
  sc = resolve(sc, root);
  if (!sc || typeof sc !== 'object' || depth > MAX_DEPTH) return;
  const sub = (schema, value, at = p) => { const o = []; check(schema, value, at, o, depth + 1, root); return o; };
  const add = (message, at = p) => out.push({ pointer: at, message });
  if (sc.type !== undefined) {
    const types = Array.isArray(sc.type) ? sc.type : [sc.type];
    if (!types.some((t) => isType(v, t))) {
      add('must be ' + types.map((t) => (/^[aeiou]/.test(t) ? 'an ' : 'a ') + t).join(' or '));
      return;
    }
  }
  if (sc.const !== undefined && JSON.stringify(sc.const) !== JSON.stringify(v)) add('must be ' + JSON.stringify(sc.const));
  if (Array.isArray(sc.enum) && !sc.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) add('must be one of ' + sc.enum.map((e) => JSON.stringify(e)).join(', '));
  if (typeof v === 'string') {
    const n = [...v].length;
    if (sc.minLength !== undefined && n < sc.minLength) add(sc.minLength === 1 ? 'must not be empty' : 'must be at least ' + sc.minLength + ' characters');
    if (sc.maxLength !== undefined && n > sc.maxLength) add('must be at most ' + sc.maxLength + ' characters');
    if (typeof sc.pattern === 'string') {
      let re = null;
      try { re = new RegExp(sc.pattern, 'u'); } catch { /* a pattern the browser does not read: the server checks */ }
      if (re && !re.test(v)) add('must match ' + sc.pattern);
    }
  }
  if (typeof v === 'number') {
    if (sc.minimum !== undefined && v < sc.minimum) add('must be at least ' + sc.minimum);
    if (sc.maximum !== undefined && v > sc.maximum) add('must be at most ' + sc.maximum);
    if (sc.exclusiveMinimum !== undefined && v <= sc.exclusiveMinimum) add('must be more than ' + sc.exclusiveMinimum);
    if (sc.exclusiveMaximum !== undefined && v >= sc.exclusiveMaximum) add('must be less than ' + sc.exclusiveMaximum);
  }
  if (Array.isArray(v)) {
    if (sc.minItems !== undefined && v.length < sc.minItems) add('must have at least ' + sc.minItems + ' items');
    if (sc.maxItems !== undefined && v.length > sc.maxItems) add('must have at most ' + sc.maxItems + ' items');
    if (sc.items && typeof sc.items === 'object') v.forEach((x, i) => check(sc.items, x, p + '/' + i, out, depth + 1, root));
    if (sc.uniqueItems === true) {
      const seen = new Set();
      v.forEach((x, i) => {
        const k = JSON.stringify(x);
        if (seen.has(k)) add('is a duplicate of an earlier item', p + '/' + i);
        seen.add(k);
      });
    }
  }
  if (typeOf(v) === 'object') {
    const props = sc.properties || {};
    for (const k of sc.required || []) if (!Object.hasOwn(v, k)) add('is required', p + '/' + esc(k));
    for (const [k, x] of Object.entries(v)) {
      if (Object.hasOwn(props, k)) check(props[k], x, p + '/' + esc(k), out, depth + 1, root);
      else if (sc.additionalProperties === false) add('is not a known field', p + '/' + esc(k));
      if (sc.propertyNames) for (const e of sub(sc.propertyNames, k, p + '/' + esc(k))) add('name ' + e.message, e.pointer);
      else if (sc.additionalProperties && typeof sc.additionalProperties === 'object') check(sc.additionalProperties, x, p + '/' + esc(k), out, depth + 1, root);
    }
  }
  for (const key of ['oneOf', 'anyOf']) {
    if (!Array.isArray(sc[key])) continue;
    const ok = sc[key].filter((alt) => sub(alt, v).length === 0).length;
    if (key === 'anyOf' ? ok === 0 : ok !== 1) add(ok === 0 ? 'matches none of the allowed forms' : 'matches more than one allowed form');
  }
  for (const alt of Array.isArray(sc.allOf) ? sc.allOf : []) check(alt, v, p, out, depth + 1, root);
  if (sc.if && typeof sc.if === 'object') {
    const branch = sub(sc.if, v).length === 0 ? sc.then : sc.else;
    if (branch) check(branch, v, p, out, depth + 1, root);
  }
  if (sc.not && typeof sc.not === 'object' && sub(sc.not, v).length === 0) add('must not match the form it names');
}
