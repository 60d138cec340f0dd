// A seeded sampler of JSON values from JSON Schema (2020-12, as OpenAPI 3.1
// uses it), for property-based tests of request bodies.
//
// It follows a schema's keywords rather than guessing at a service: objects
// get their required properties and some optional ones (readOnly ones never,
// as a client does not send what the server owns), strings a length near
// their bounds drawn from a pool of characters that break naive text
// handling, integers values at, inside and just past their bounds, enum and
// const their values, `format: email` local@domain shapes. Most values are
// meant to be valid and some are not (a hostile character, a length or an
// integer past a bound): which are is for a validator to say, not for the
// sampler, whose rates are tuned so that most bodies come out valid.
//
// invalidFrom breaks one leaf of a valid value on purpose, for the other half
// of the test: a body the schema refuses must be refused.

// createRandom is a seeded generator (sfc32, its state spread from the seed by
// splitmix32): the same seed gives the same values on every machine.
export function createRandom(seed) {
  let s = seed >>> 0;
  const splitmix = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix(), b = splitmix(), c = splitmix(), d = splitmix();
  const u32 = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 12; i++) u32();
  const float = () => (u32() * 2 ** 21 + (u32() >>> 11)) / 2 ** 53; // 53 random bits
  const r = {
    float,
    chance: (p) => float() < p,
    // int is an integer in [lo, hi] (both safe integers).
    int: (lo, hi) => lo + Math.floor(float() * (hi - lo + 1)),
    pick: (items) => items[Math.floor(float() * items.length)],
    // weighted picks from [[weight, value], ...].
    weighted: (pairs) => {
      let x = float() * pairs.reduce((n, [w]) => n + w, 0);
      for (const [w, v] of pairs) if ((x -= w) < 0) return v;
      return pairs[pairs.length - 1][1];
    },
  };
  return r;
}

// seedFor mixes a seed with a name (an operation, say) into a seed of its own,
// so that adding a case does not change what the others draw.
export function seedFor(seed, name) {
  let h = (seed ^ 0x811c9dc5) >>> 0;
  for (const ch of name) h = Math.imul(h ^ ch.codePointAt(0), 0x01000193) >>> 0;
  return h;
}

// The character pool. Each entry is one "atom": a character, or a sequence a
// reader sees as one (a ZWJ emoji, a flag's tag sequence, a base and its
// combining marks). The benign groups are text people write; the hostile ones
// are what a service should refuse (or at least survive) in a one-line name.
const cps = (s) => [...s];
export const POOL = {
  ascii: cps('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789').concat(cps(".,-_'!?@#&()+/:;=~*")),
  latin: cps('éèêëàâäçñøåæœßÿŁłŠšŽžİıĞğŐőǅǈǋÆØÅÉÑ'),
  cjk: cps('山田太郎漢字中文日本語かなカタカナ한국어사람'),
  rtl: cps('مرحباعالمسلامשלוםעולםאבג'),
  emoji: ['😀', '🎉', '👍🏽', '👩‍👩‍👧‍👦', '🧑🏿‍🚀', '🏳️‍🌈', '❤️', '🇯🇵', '🇫🇷'],
  // a black flag and tag characters: England, Scotland, Wales
  flagTags: ['🏴󠁧󠁢󠁥󠁮󠁧󠁿', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '🏴󠁧󠁢󠁷󠁬󠁳󠁿'],
  combining: ['é', 'ạ̈', 'n̈', 'क्षि', 'กิ่', 'ضَ', 'שׁ'],
  marks: ['\u0301', '\u0323', '\u05bc', '\u0e34'], // with nothing to combine with
  spaces: [' ', '\u00a0', '\u2003', '\u2009', '\u202f', '\u3000', '\u1680'],
  invisible: ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u034f', '\ufe0f', '\u3164'],
  bidiMarks: ['\u200e', '\u200f', '\u061c'],
  // hostile:
  bidiControls: ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'],
  controls: ['\u0000', '\u0007', '\u001b', '\u007f', '\u0085', '\u009b', '\t', '\n', '\r', '\u2028', '\u2029'],
  nonchars: ['\ufffe', '\uffff', '\ufdd0', '\ufdef', '\u{1fffe}', '\u{10ffff}'],
  surrogates: ['\ud800', '\udbff', '\udc00', '\udfff'],
  tags: ['\u{e0041}', '\u{e0001}', '\u{e007f}'],
};
const HOSTILE = ['bidiControls', 'controls', 'nonchars', 'surrogates', 'tags'];
// Groups most text is made of, and those that only season it.
const BODY = ['ascii', 'latin', 'cjk', 'rtl', 'emoji', 'combining'];
const SEASONING = ['spaces', 'invisible', 'bidiMarks', 'marks'];

// length counts code points, as JSON Schema's minLength and maxLength do.
export const length = (s) => [...s].length;

// A sampler draws values for schemas of one document (root, for $ref).
export function createSampler(random, root = {}, { hostileRate = 0.05, pastBoundRate = 0.02 } = {}) {
  const at = (ref) => {
    if (!ref.startsWith('#')) throw new Error(`only local $refs are followed: ${ref}`);
    return ref.slice(2).split('/').filter((k) => k !== '').map((k) => decodeURIComponent(k).replaceAll('~1', '/').replaceAll('~0', '~')).reduce((o, k) => o?.[k], root);
  };

  // flatten follows $ref (keeping the keywords beside it) and merges allOf.
  function flatten(schema) {
    if (schema === true || schema === undefined) return {};
    if (schema === false) return { not: {} };
    let s = { ...schema };
    while (s.$ref) {
      const { $ref, ...rest } = s;
      s = merge(flatten(at($ref)), rest);
    }
    if (s.allOf) {
      const { allOf, ...rest } = s;
      s = allOf.map(flatten).reduce(merge, rest);
    }
    return s;
  }

  // merge is the conjunction of two flattened schemas, as far as sampling needs.
  function merge(a, b) {
    const out = { ...a, ...b };
    for (const k of ['minimum', 'exclusiveMinimum', 'minLength', 'minItems']) {
      if (k in a && k in b) out[k] = Math.max(a[k], b[k]);
    }
    for (const k of ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems']) {
      if (k in a && k in b) out[k] = Math.min(a[k], b[k]);
    }
    if (a.required || b.required) out.required = [...new Set([...(a.required ?? []), ...(b.required ?? [])])];
    if (a.properties && b.properties) {
      out.properties = { ...a.properties };
      for (const [name, p] of Object.entries(b.properties)) out.properties[name] = name in a.properties ? { allOf: [a.properties[name], p] } : p;
    }
    return out;
  }

  // typeOf is the JSON type to draw for a flattened schema.
  function typeOf(s) {
    if (Array.isArray(s.type)) return random.pick(s.type);
    if (s.type) return s.type;
    if (s.properties || s.required) return 'object';
    if (s.items || s.prefixItems) return 'array';
    if ('minLength' in s || 'maxLength' in s || s.pattern || s.format === 'email') return 'string';
    if ('minimum' in s || 'maximum' in s) return 'number';
    return random.pick(['string', 'integer', 'boolean', 'null', 'object']);
  }

  // sample draws one value for schema.
  function sample(schema, depth = 0) {
    let s = flatten(schema);
    const branches = s.oneOf ?? s.anyOf;
    if (branches) {
      const { oneOf, anyOf, ...rest } = s;
      s = merge(rest, flatten(random.pick(branches)));
    }
    if ('const' in s) return structuredClone(s.const);
    if (s.enum) return structuredClone(random.pick(s.enum));
    switch (typeOf(s)) {
      case 'object': return sampleObject(s, depth);
      case 'array': return sampleArray(s, depth);
      case 'string': return s.format === 'email' ? sampleEmail(s) : sampleString(s);
      case 'integer': return sampleInteger(s);
      case 'number': return sampleInteger(s) + random.pick([0, 0.5, 0.25]);
      case 'boolean': return random.chance(0.5);
      default: return null;
    }
  }

  function sampleObject(s, depth) {
    const out = {};
    const props = s.properties ?? {};
    const required = new Set(s.required ?? []);
    for (const [name, p] of Object.entries(props)) {
      if (flatten(p).readOnly) continue;
      if (required.has(name) || (depth < 4 && random.chance(0.5))) out[name] = sample(p, depth + 1);
    }
    // A key the schema does not name, where it lets one be: never one that matches a
    // named property in another letter case, which a case-insensitive reader takes
    // for that property.
    const open = s.additionalProperties !== false && s.unevaluatedProperties !== false && !s.patternProperties;
    if (open && depth < 4 && random.chance(0.15)) {
      const names = Object.keys(props).map((n) => n.toLowerCase());
      const name = random.pick(['note', 'x-client', 'extra', 'tag', '_meta', 'ünïcode']);
      if (!names.includes(name.toLowerCase())) out[name] = sample(s.additionalProperties ?? {}, depth + 4);
    }
    return out;
  }

  function sampleArray(s, depth) {
    const lo = s.minItems ?? 0;
    const hi = Math.min(s.maxItems ?? lo + 3, lo + 3);
    return Array.from({ length: depth < 4 ? random.int(lo, hi) : lo }, () => sample(s.items ?? {}, depth + 1));
  }

  // targetLength draws a length near lo and hi: at each, one inside each, anywhere
  // between, and now and then one past either.
  function targetLength(lo, hi) {
    return random.weighted([
      [3, lo], [3, hi], [2, Math.min(lo + 1, hi)], [2, Math.max(hi - 1, lo)], [6, random.int(lo, hi)],
      [pastBoundRate * 16, lo > 0 ? lo - 1 : hi + 1], [pastBoundRate * 16, hi + 1],
    ]);
  }

  function sampleString(s) {
    const lo = s.minLength ?? 0;
    const hi = s.maxLength ?? Math.max(lo, 40);
    return text(targetLength(lo, hi));
  }

  // text draws a string of n code points: mostly one or two groups of the pool that
  // text is made of, seasoned with spaces, invisible characters and stray marks,
  // now and then a flag's tag sequence or one hostile character, and rarely
  // nothing visible at all.
  function text(n) {
    if (n <= 0) return '';
    if (random.chance(0.03)) return fill(n, SEASONING);
    const groups = [random.pick(BODY)];
    if (random.chance(0.5)) groups.push(random.pick(BODY));
    const atoms = [];
    let left = n;
    let visible = false; // an atom from the body groups is in
    while (left > 0) {
      const group = random.chance(0.12) ? random.pick(SEASONING) : random.pick(groups);
      let atom = random.pick(POOL[group]);
      if (length(atom) > left) atom = random.pick(POOL.ascii); // seasoning is one code point: this is a body group's
      visible ||= !SEASONING.includes(group);
      atoms.push(atom);
      left -= length(atom);
    }
    // All seasoning, one code point each: one of them becomes a letter.
    if (!visible) atoms[random.int(0, atoms.length - 1)] = random.pick(POOL.ascii.slice(0, 62));
    const singles = () => atoms.flatMap((a, i) => (length(a) === 1 ? [i] : []));
    if (random.chance(0.04)) {
      const flag = random.pick(POOL.flagTags);
      const room = singles();
      if (room.length >= length(flag)) {
        for (const i of room.slice(0, length(flag))) atoms[i] = '';
        atoms[room[0]] = flag;
      }
    }
    if (random.chance(hostileRate)) {
      const room = singles(); // in place of a one-code-point atom, so that the length stays n
      if (room.length > 0) atoms[random.pick(room)] = random.pick(POOL[random.pick(HOSTILE)]);
    }
    return atoms.join('');
  }

  // fill is n code points from the given groups, one-code-point atoms only.
  function fill(n, groups) {
    const singles = groups.flatMap((g) => POOL[g]).filter((a) => length(a) === 1);
    return Array.from({ length: n }, () => random.pick(singles)).join('');
  }

  // sampleEmail draws local@domain: a dot-atom of the characters RFC 5322 allows
  // unquoted, a domain of letter-digit-hyphen labels; its length near the bounds.
  function sampleEmail(s) {
    const hi = s.maxLength ?? 254;
    const lo = Math.max(s.minLength ?? 0, 6);
    const n = random.weighted([[6, random.int(lo, 40)], [2, random.int(40, hi)], [2, hi], [pastBoundRate * 16, hi + 1]]);
    const alnum = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
    const atext = alnum + (random.chance(0.3) ? "!#$%&'*+/=?^_`{|}~-" : '+-_');
    const word = (len, chars) => Array.from({ length: len }, () => random.pick([...chars])).join('');
    const localLen = random.int(1, Math.min(64, n - 5));
    const local = [...word(localLen, atext)];
    if (localLen >= 3 && random.chance(0.3)) local[random.int(1, localLen - 2)] = '.';
    return local.join('') + '@' + domain(n - localLen - 1);
  }

  // domain is a domain name of n (at least 4) characters: labels of at most 63,
  // letters, digits and inner hyphens, the last starting with a letter.
  function domain(n) {
    const ldh = 'abcdefghijklmnopqrstuvwxyz0123456789';
    const k = Math.max(Math.ceil((n + 1) / 64), random.int(2, Math.min(4, Math.floor((n + 1) / 2))));
    const sizes = Array(k).fill(Math.floor((n - (k - 1)) / k));
    for (let i = 0; i < (n - (k - 1)) % k; i++) sizes[i]++;
    return sizes.map((len, i) => {
      const label = [...Array(len)].map(() => random.pick([...ldh]));
      if (i === k - 1) label[0] = random.pick([...'abcdefghijklmnopqrstuvwxyz']);
      if (len >= 3 && random.chance(0.2)) label[random.int(1, len - 2)] = '-';
      return label.join('');
    }).join('.');
  }

  // bounds are an integer schema's inclusive bounds, or those of its format.
  function bounds(s) {
    const byFormat = s.format === 'int32' ? [-(2 ** 31), 2 ** 31 - 1] : [-(2 ** 53 - 1), 2 ** 53 - 1];
    let lo = 'minimum' in s ? Math.ceil(s.minimum) : null;
    let hi = 'maximum' in s ? Math.floor(s.maximum) : null;
    if (typeof s.exclusiveMinimum === 'number') lo = Math.max(lo ?? -Infinity, Math.floor(s.exclusiveMinimum) + 1);
    if (typeof s.exclusiveMaximum === 'number') hi = Math.min(hi ?? Infinity, Math.ceil(s.exclusiveMaximum) - 1);
    return { lo, hi, byFormat };
  }

  // sampleInteger draws at, inside and (now and then) just past the bounds; with
  // no bound on a side, values people use there (0, small numbers, a 32-bit limit).
  function sampleInteger(s) {
    const { lo, hi, byFormat } = bounds(s);
    const low = lo ?? random.pick([0, 1, -1, -(2 ** 31), byFormat[0]]);
    const high = hi ?? random.pick([10, 1000, 2 ** 31 - 1, 2 ** 31, byFormat[1]]);
    const [a, b] = low <= high ? [low, high] : [high, low];
    return random.weighted([
      [3, a], [3, b], [2, Math.min(a + 1, b)], [2, Math.max(b - 1, a)],
      [3, random.int(a, Math.min(b, a + 20))], [4, random.int(a, b)],
      [lo === null ? 0 : pastBoundRate * 18, lo - 1], [hi === null ? 0 : pastBoundRate * 18, hi + 1],
    ]);
  }

  // invalidFrom breaks value (valid for schema) in one place: a required property
  // left out, a value of the wrong type, an integer or a length past its bound, a
  // control or bidirectional override character in a string, an e-mail without
  // its @, a value outside an enum, a key a closed object does not name. Which
  // break is drawn is returned too, for the failure message.
  function invalidFrom(schema, value) {
    const s = flatten(schema);
    const breaks = [];
    if ((s.type === 'object' || s.properties) && value && typeof value === 'object' && !Array.isArray(value)) {
      for (const name of s.required ?? []) breaks.push([`without ${name}`, () => { const v = { ...value }; delete v[name]; return v; }]);
      for (const [name, p] of Object.entries(s.properties ?? {})) {
        if (!(name in value)) continue;
        breaks.push([`${name}: `, () => {
          const [how, v] = invalidFrom(p, value[name]);
          return [how, { ...value, [name]: v }];
        }]);
      }
      if (s.additionalProperties === false) breaks.push(['an unnamed key', () => ({ ...value, zzUnknown: 1 })]);
      breaks.push(['not an object', () => [value]]);
    }
    if (s.type === 'string' || typeof value === 'string') {
      breaks.push(['a number for a string', () => 42]);
      if ('maxLength' in s) breaks.push([`${s.maxLength + 1} letters`, () => fill(s.maxLength + 1, ['ascii']).replace(/[^A-Za-z0-9]/g, 'x')]);
      if ((s.minLength ?? 0) > 0) breaks.push(['empty', () => '']);
      if (s.format === 'email') breaks.push(['no @', () => String(value).replace('@', '')]);
      if (s.pattern || s.format !== 'email') {
        for (const ch of ['\u0007', '\u202e', '\u2066', '\ufdd0', '\u{e0041}', '\n']) {
          // inside, where trimming cannot take it away
          breaks.push([`U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')} inside`, () => {
            const v = [...String(value)];
            if (v.length < 3) return 'x' + ch + 'x';
            v[random.int(1, v.length - 2)] = ch;
            return v.join('');
          }]);
        }
      }
    }
    if (s.type === 'integer') {
      const { lo, hi } = bounds(s);
      if (lo !== null) breaks.push([`${lo - 1}, below ${lo}`, () => lo - 1]);
      if (hi !== null) breaks.push([`${hi + 1}, above ${hi}`, () => hi + 1]);
      breaks.push(['a fraction', () => value + 0.5]);
      breaks.push(['a string for an integer', () => String(value)]);
    }
    if (s.enum) breaks.push(['outside the enum', () => s.enum.reduce((m, v) => (typeof v === 'number' ? Math.max(m, v) : m), 0) + 1000]);
    if (breaks.length === 0) return ['null', null];
    const [how, make] = random.pick(breaks);
    const made = make();
    if (how.endsWith(': ')) return [how + made[0], made[1]];
    return [how, made];
  }

  return { sample, invalidFrom, flatten, text };
}
