// The side-by-side page: one read sent to every style of the service that
// serves it (REST, GraphQL, OData, and gRPC as gRPC-Web from this page), one
// column each: the request, a command that repeats it, the answer, what it
// cost on the wire, and then whether the answers hold the same records.
// Plain browser JavaScript without dependencies, like the GraphQL editor; it
// talks only to the origin it was served from.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  // h builds an element: h('li', {className: 'x', onclick: f}, 'text', child).
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k in el) el[k] = v;
      else el.setAttribute(k, v);
    }
    for (const c of children.flat(Infinity)) {
      if (c !== null && c !== undefined && c !== false) el.append(c);
    }
    return el;
  }

  const STYLES = [['rest', 'REST'], ['graphql', 'GraphQL'], ['odata', 'OData'], ['grpc', 'gRPC-Web']];

  // ---- Records ------------------------------------------------------------

  // The fields each entity's records are compared on, in each style's JSON
  // names (gRPC's as grpcurl prints them); times are compared as instants.
  const FIELDS = {
    user: ['id', 'name', 'email', 'createdAt'],
    order: ['id', 'userId', 'productId', 'customerName', 'orderDate', 'quantity'],
    product: ['id', 'name', 'price', 'category', 'createdDate', 'isActive'],
  };
  const TIMES = new Set(['createdAt', 'orderDate', 'createdDate']);

  // instant reads RFC 3339 (the HTTP styles) and gRPC's "yyyy-MM-dd HH:mm:ss"
  // (UTC) alike; text that is neither stays as it is, and so differs.
  function instant(s) {
    if (typeof s !== 'string') return s;
    const t = Date.parse(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(s) ? `${s.replace(' ', 'T')}Z` : s);
    return Number.isNaN(t) ? s : new Date(t).toISOString().replace('.000Z', 'Z');
  }

  function record(entity, raw) {
    const out = {};
    for (const f of FIELDS[entity]) out[f] = TIMES.has(f) ? instant(raw?.[f]) : raw?.[f];
    return out;
  }

  // byCodePoint orders strings as Go's strings.Compare does.
  function byCodePoint(a, b) {
    const x = Array.from(a, (c) => c.codePointAt(0));
    const y = Array.from(b, (c) => c.codePointAt(0));
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
    return x.length - y.length;
  }

  // pageOf sorts users and cuts a page as REST's list does on the server: by
  // the lower-case name or e-mail, ties by id, or by id alone.
  function pageOf(users, { sortBy, page, pageSize }) {
    const key = (u) => (sortBy === 'id' ? '' : String(u[sortBy]).toLowerCase());
    const sorted = [...users].sort((a, b) => byCodePoint(key(a), key(b)) || a.id - b.id);
    return sorted.slice((page - 1) * pageSize, page * pageSize);
  }

  // ---- The reads ----------------------------------------------------------

  // Each read says, per style, how that style asks for it, or why it cannot
  // (the surfaces serve different parts of the data: README.md's table).
  const NO_USERS_ODATA = 'OData serves products and orders: users are not in its model.';
  const NO_ORDERS_GRAPHQL = 'GraphQL serves users, posts and comments: orders and products are not in its schema.';
  const NO_GRPC = 'gRPC serves users only (user.UserService): no method reads orders or products.';
  const odataQuery = (options) => Object.entries(options).filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
  const graphql = (query, variables, pick, mapping) => ({
    path: '/graphql', accept: 'application/graphql-response+json, application/json',
    body: JSON.stringify(variables ? { query, variables } : { query }), records: (b) => pick(b.data), mapping,
  });

  const READS = {
    user: ({ id }) => ({
      entity: 'user',
      rest: { path: `/api/users/${id}`, records: (b) => [b], mapping: 'the user object' },
      graphql: graphql('query User($id: Int!) { user(id: $id) { id name email createdAt } }', { id },
        (d) => (d.user ? [d.user] : []), 'data.user (null: no record)'),
      odata: NO_USERS_ODATA,
      grpc: { method: 'GetUser', message: { id }, records: (ms) => ms, mapping: 'the UserResponse, its created_at read as UTC' },
    }),
    users: (v) => {
      const here = `Sorted by ${v.sortBy} and cut to page ${v.page} (${v.pageSize} a page) by this page, as REST does on the server.`;
      return {
        entity: 'user',
        rest: {
          path: `/api/users?sortBy=${v.sortBy}&page=${v.page}&pageSize=${v.pageSize}`, records: (b) => b.items,
          mapping: 'the PagedResult\'s items',
        },
        graphql: {
          ...graphql('{ users { id name email createdAt } }', null, (d) => pageOf(d.users, v),
            'data.users: every user, as GraphQL\'s users field takes no sort or page arguments'), here,
        },
        odata: NO_USERS_ODATA,
        grpc: {
          method: 'GetAllUsers', message: {}, records: (ms) => pageOf(ms, v), here,
          mapping: 'every UserResponse streamed, as GetAllUsers takes no sort or page; created_at read as UTC',
        },
      };
    },
    orders: ({ userId }) => ({
      entity: 'order',
      rest: { path: `/api/users/${userId}/orders`, records: (b) => b, mapping: 'the array (404: no user, no records)' },
      graphql: NO_ORDERS_GRAPHQL,
      odata: {
        path: `/api/orders?${odataQuery({ $filter: `userId eq ${userId}`, $orderby: 'id' })}`,
        records: (b) => b.value, mapping: 'the collection\'s value',
      },
      grpc: NO_GRPC,
    }),
    products: (v) => ({
      entity: 'product',
      rest: 'REST serves users and their orders: products are served by OData.',
      graphql: NO_ORDERS_GRAPHQL,
      odata: {
        path: `/api/products?${odataQuery({ $filter: v.filter, $orderby: v.orderby, $top: v.top, $skip: v.skip, $count: 'true' })}`,
        records: (b) => b.value, mapping: 'the collection\'s value',
      },
      grpc: NO_GRPC,
    }),
  };

  // formValues reads the chosen read's inputs; the form's own validation has
  // held numbers to integers in their ranges.
  function formValues(read) {
    const num = (id) => $(id).valueAsNumber;
    return {
      user: () => ({ id: num('user-id') }),
      users: () => ({ sortBy: $('users-sort').value, page: num('users-page'), pageSize: num('users-size') }),
      orders: () => ({ userId: num('orders-user') }),
      products: () => ({
        filter: $('products-filter').value.trim(), orderby: $('products-orderby').value.trim(),
        top: String(num('products-top')), skip: String(num('products-skip')),
      }),
    }[read]();
  }

  // ---- Protocol Buffers and gRPC-Web frames --------------------------------

  // Just what userpb/user.proto's GetUserRequest, Empty and UserResponse need:
  // varints (an int32 as a 64-bit two's complement, as protobuf writes it)
  // and length-delimited UTF-8 strings; other fields are skipped.
  function varint(n) {
    let v = BigInt.asUintN(64, BigInt(n));
    const out = [];
    do {
      const low = Number(v & 0x7fn);
      v >>= 7n;
      out.push(v ? low | 0x80 : low);
    } while (v);
    return out;
  }

  const encodeMessage = ({ id }) => (id ? [0x08, ...varint(id)] : []); // GetUserRequest; {} is Empty

  function decodeUser(bytes) {
    const user = { id: 0, name: '', email: '', createdAt: '' };
    const strings = { 2: 'name', 3: 'email', 4: 'createdAt' };
    let i = 0;
    const read = () => {
      let n = 0n;
      for (let shift = 0n; shift < 70n; shift += 7n) {
        if (i >= bytes.length) break;
        const b = bytes[i++];
        n |= BigInt(b & 0x7f) << shift;
        if (b < 0x80) return n;
      }
      throw new Error('a varint is cut short or too long');
    };
    while (i < bytes.length) {
      const key = read();
      const field = Number(key >> 3n);
      const wire = Number(key & 7n);
      if (wire === 0) {
        const v = read();
        if (field === 1) user.id = Number(BigInt.asIntN(32, v));
      } else if (wire === 2) {
        const n = Number(read());
        if (i + n > bytes.length) throw new Error('a field is longer than its message');
        if (strings[field]) user[strings[field]] = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(i, i + n));
        i += n;
      } else if (wire === 1 || wire === 5) {
        i += wire === 1 ? 8 : 4;
      } else {
        throw new Error(`wire type ${wire} is not one UserResponse uses`);
      }
    }
    if (i > bytes.length) throw new Error('a field is longer than its message');
    return user;
  }

  function frame(payload, flag = 0) {
    const out = new Uint8Array(5 + payload.length);
    out[0] = flag;
    new DataView(out.buffer).setUint32(1, payload.length);
    out.set(payload, 5);
    return out;
  }

  // frames splits an answer's body into gRPC-Web frames, each with the offset
  // where it ends.
  function frames(body) {
    const out = [];
    for (let i = 0; i < body.length;) {
      if (body.length - i < 5) throw new Error('the body ends inside a frame header');
      const n = new DataView(body.buffer, body.byteOffset + i + 1, 4).getUint32(0);
      if (i + 5 + n > body.length) throw new Error('a frame is longer than the rest of the body');
      out.push({ flag: body[i], data: body.subarray(i + 5, i + 5 + n), end: i + 5 + n });
      i += 5 + n;
    }
    return out;
  }

  const GRPC_CODES = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS',
    'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL',
    'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED'];

  // trailer reads a trailer frame's "name: value" lines (CRLF-ended).
  function trailer(data) {
    const out = {};
    for (const line of new TextDecoder().decode(data).split('\r\n')) {
      const at = line.indexOf(':');
      if (at > 0) out[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
    }
    return out;
  }

  function percentDecoded(s) {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  }

  // ---- Sending ------------------------------------------------------------

  // exchange sends one request and reads its answer as a stream, keeping when
  // each chunk arrived, then finds the browser's Resource Timing entry for it.
  async function exchange(url, init) {
    const t0 = performance.now();
    const res = await fetch(url, { ...init, cache: 'no-store' });
    const chunks = [];
    let size = 0;
    const reader = res.body ? res.body.getReader() : null;
    while (reader) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      chunks.push({ value, end: size, at: performance.now() - t0 });
    }
    const body = new Uint8Array(size);
    for (const c of chunks) body.set(c.value, c.end - c.value.length);
    return { res, body, chunks, timing: await timingOf(url.href, t0), took: performance.now() - t0 };
  }

  // timingOf waits up to a second for the entry the browser adds once an
  // answer has been read to its end.
  function timingOf(href, since) {
    const find = () => performance.getEntriesByName(href).find((e) => e.startTime >= since);
    return new Promise((resolve) => {
      if (find()) return resolve(find());
      const observer = new PerformanceObserver(() => {
        if (find()) {
          clearTimeout(timer);
          observer.disconnect();
          resolve(find());
        }
      });
      const timer = setTimeout(() => {
        observer.disconnect();
        resolve(null);
      }, 1000);
      observer.observe({ type: 'resource' });
    });
  }

  const authHeader = (token) => (token ? { authorization: `Bearer ${token}` } : {});

  async function sendHTTP(style, plan, token) {
    const url = new URL(plan.path, location.origin);
    const headers = { accept: plan.accept || 'application/json', ...(plan.body ? { 'content-type': 'application/json' } : {}), ...authHeader(token) };
    const method = plan.body ? 'POST' : 'GET';
    const got = await exchange(url, { method, headers, body: plan.body });
    const text = new TextDecoder().decode(got.body);
    const type = got.res.headers.get('content-type') || '';
    let json = null;
    try {
      json = /json/.test(type) ? JSON.parse(text) : null;
    } catch { /* shown as text */ }
    return {
      sent: { method, url, headers, body: plan.body, bodyBytes: plan.body ? new TextEncoder().encode(plan.body).length : 0 },
      status: `${got.res.status} ${got.res.statusText}`.trim(), type, shown: json ? JSON.stringify(json, null, 2) : text,
      got, ...httpOutcome(style, plan, got.res.status, json),
    };
  }

  // httpOutcome turns an answer into records, or an error: a 404 is no
  // record (REST's and OData's way of saying so), which is what GraphQL's
  // null and gRPC's NOT_FOUND say too.
  function httpOutcome(style, plan, status, json) {
    if (status === 404 && style !== 'graphql') return { records: [], note: 'not found: no records' };
    if (style === 'graphql' && json?.errors?.length) return { error: `${status}: ${json.errors[0].message}` };
    if (status < 200 || status > 299 || !json) return { error: `${status}: ${json?.detail || json?.error?.message || 'no JSON answer'}` };
    return { records: plan.records(json) };
  }

  async function sendGRPC(plan, token) {
    const url = new URL(`/user.UserService/${plan.method}`, location.origin);
    const headers = { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1', ...authHeader(token) };
    const body = frame(encodeMessage(plan.message));
    const got = await exchange(url, { method: 'POST', headers, body });
    const sent = { method: 'POST', url, headers, message: plan.message, frame: body, bodyBytes: body.length };
    const type = got.res.headers.get('content-type') || '';
    if (!type.startsWith('application/grpc-web')) { // not served as gRPC-Web: a proxy's answer, say
      return { sent, status: `HTTP ${got.res.status}`, type, shown: new TextDecoder().decode(got.body), got, error: `HTTP ${got.res.status}: the answer is not gRPC-Web` };
    }
    const all = frames(got.body);
    const at = (end) => got.chunks.find((c) => c.end >= end).at;
    const messages = all.filter((f) => !(f.flag & 0x80)).map((f) => ({ user: decodeUser(f.data), at: at(f.end) }));
    const ending = all.find((f) => f.flag & 0x80);
    const status = ending ? trailer(ending.data) : {
      'grpc-status': got.res.headers.get('grpc-status'), 'grpc-message': got.res.headers.get('grpc-message') || '',
    };
    const code = Number(status['grpc-status']);
    const name = GRPC_CODES[code] || `code ${status['grpc-status']}`;
    const message = percentDecoded(status['grpc-message'] || '');
    const users = messages.map((m) => m.user);
    const shown = [
      ...messages.map((m) => `// message at ${ms(m.at)}\n${JSON.stringify(m.user, null, 2)}`),
      `// ${ending ? 'trailer frame' : 'trailers-only: status in the headers'}\ngrpc-status: ${status['grpc-status']}${message ? `\ngrpc-message: ${message}` : ''}`,
    ].join('\n');
    const outcome = code === 0 ? { records: plan.records(users) }
      : code === 5 ? { records: [], note: 'NOT_FOUND: no records' } : { error: `${name}: ${message}` };
    return { sent, status: `HTTP ${got.res.status}, grpc-status ${status['grpc-status']} ${name}`, type, shown, got, messages: messages.length, ...outcome };
  }

  // ---- Commands that repeat a request -----------------------------------

  const quote = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;
  // The token goes in as $TOKEN: a command copied is safe to paste or share.
  const headerArgs = (headers) => Object.entries(headers).map(([k, v]) => (k === 'authorization' ? ` -H "authorization: Bearer $TOKEN"` : ` -H ${quote(`${k}: ${v}`)}`)).join('');

  function curlCommand(sent) {
    const data = sent.body ? ` --data-raw ${quote(sent.body)}` : '';
    return `curl -s ${quote(sent.url.href)}${headerArgs(sent.headers)}${data}`;
  }

  // The gRPC server listens on an address of its own, which the page gets in
  // its <meta name="grpc-address">; a listener on every interface is named by
  // the host this page was loaded from, as the editor does.
  function grpcTarget(listen) {
    const m = /^(.*):(\d+)$/.exec(listen);
    if (!m) return listen || null;
    const host = m[1].replace(/^\[(.*)\]$/, '$1');
    if (host === '' || host === '0.0.0.0' || (host.includes(':') && /^[0:]+$/.test(host))) return `${location.hostname}:${m[2]}`;
    return host.includes(':') ? `[${host}]:${m[2]}` : `${host}:${m[2]}`;
  }
  const GRPC_TARGET = grpcTarget(document.querySelector('meta[name="grpc-address"]').content);

  function grpcCommands(sent, method) {
    const auth = sent.headers.authorization ? ' -H "authorization: Bearer $TOKEN"' : '';
    const data = Object.keys(sent.message).length ? ` -d ${quote(JSON.stringify(sent.message))}` : '';
    const octal = Array.from(sent.frame, (b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
    return [
      GRPC_TARGET ? `grpcurl -plaintext${auth}${data} ${GRPC_TARGET} user.UserService/${method}`
        : 'The page was not told the gRPC address: no grpcurl command.',
      `printf '${octal}' | curl -s --data-binary @- ${quote(sent.url.href)}${headerArgs(sent.headers)} | od -c`,
    ];
  }

  // ---- Drawing ------------------------------------------------------------

  const ms = (x) => `${x.toFixed(1)} ms`;
  const bytes = (n) => `${n.toLocaleString('en')} B`;
  const SHOWN_MAX = 100000; // characters of an answer drawn: a large store's list would stall the page

  function requestText(r, style) {
    const lines = [`${r.sent.method} ${r.sent.url.pathname}${r.sent.url.search}`];
    for (const [k, v] of Object.entries(r.sent.headers)) {
      lines.push(k === 'authorization' ? `${k}: Bearer \u2026 (${v.length - 7} characters, not shown)` : `${k}: ${v}`);
    }
    if (style === 'grpc') {
      const hex = Array.from(r.sent.frame, (b) => b.toString(16).padStart(2, '0')).join(' ');
      lines.push('', `message (as JSON): ${JSON.stringify(r.sent.message)}`, `frame: ${hex}`);
    } else if (r.sent.body) {
      lines.push('', JSON.stringify(JSON.parse(r.sent.body), null, 2));
    }
    return lines.join('\n');
  }

  function wireFacts(r) {
    const t = r.got.timing;
    const head = `${r.sent.method} ${r.sent.url.pathname}${r.sent.url.search} HTTP/1.1\r\n`;
    const sentHeaders = Object.entries(r.sent.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, head.length);
    const first = t ? t.responseStart - t.startTime : r.got.chunks[0]?.at ?? r.got.took;
    const end = t ? t.responseEnd - t.startTime : r.got.took;
    const fresh = t && t.connectEnd > t.connectStart;
    return [
      ['sent', `\u2265 ${bytes(sentHeaders + r.sent.bodyBytes)}: body ${bytes(r.sent.bodyBytes)}, plus the headers the browser adds`],
      ['received', t ? `${bytes(t.transferSize)}: body ${bytes(t.encodedBodySize)}${t.decodedBodySize !== t.encodedBodySize ? `, ${bytes(t.decodedBodySize)} decoded` : ''}` : `body ${bytes(r.got.body.length)}`],
      ['first byte', ms(first)],
      ['end', ms(end)],
      ['round trips', fresh ? '2: a new connection, then the request' : '1: the request, on a connection already open'],
      ...(r.messages !== undefined ? [['messages', String(r.messages)]] : []),
    ];
  }

  function copyButton(text) {
    return h('button', {
      type: 'button', className: 'quiet', title: 'Copy this command',
      onclick: async (e) => {
        try {
          await navigator.clipboard.writeText(text);
          e.target.textContent = 'Copied';
        } catch {
          e.target.textContent = 'Select it to copy';
        }
      },
    }, 'Copy');
  }

  function column(style, title, content, state) {
    return h('section', { className: 'column', 'data-style': style, 'data-state': state, 'aria-label': title }, h('h2', {}, title), content);
  }

  function drawResult(style, title, plan, r) {
    const commands = style === 'grpc' ? grpcCommands(r.sent, plan.method) : [curlCommand(r.sent)];
    const shown = r.shown.length > SHOWN_MAX ? `${r.shown.slice(0, SHOWN_MAX)}\n\u2026 ${(r.shown.length - SHOWN_MAX).toLocaleString('en')} more characters` : r.shown;
    return column(style, title, [
      h('p', { className: r.error ? 'badge bad' : 'badge good' }, r.error ? 'error' : `${r.records.length} record${r.records.length === 1 ? '' : 's'}`),
      plan.here && h('p', { className: 'note here' }, plan.here),
      h('h3', {}, 'Request'), h('pre', { className: 'request' }, requestText(r, style)),
      h('h3', {}, 'Repeat it'),
      commands.map((c) => h('div', { className: 'command' }, h('code', {}, c), copyButton(c))),
      h('h3', {}, 'Answer'),
      h('p', { className: 'status' }, `${r.status} \u00b7 ${r.type || 'no content type'}`),
      h('pre', { className: 'answer', tabIndex: 0 }, shown),
      h('h3', {}, 'On the wire'),
      h('dl', { className: 'wire' }, wireFacts(r).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      r.error ? h('p', { className: 'note bad' }, r.error) : r.note ? h('p', { className: 'note' }, r.note) : null,
    ], r.error ? 'error' : 'answered');
  }

  // ---- Comparing ----------------------------------------------------------

  function differences(baseName, base, name, other) {
    const out = [];
    const ids = (rs) => rs.map((r) => r.id).join(', ');
    const theirs = new Map(other.map((r) => [r.id, r]));
    for (const r of base) {
      const o = theirs.get(r.id);
      if (!o) {
        out.push(`${name} lacks record ${r.id}`);
        continue;
      }
      for (const f of Object.keys(r)) {
        if (r[f] !== o[f]) out.push(`record ${r.id}, ${f}: ${baseName} ${JSON.stringify(r[f])}, ${name} ${JSON.stringify(o[f])}`);
      }
    }
    for (const o of other) if (!base.some((r) => r.id === o.id)) out.push(`${name} has record ${o.id}, which ${baseName} has not`);
    if (!out.length && ids(base) !== ids(other)) out.push(`${name} orders the records ${ids(other)}; ${baseName} ${ids(base)}`);
    return out;
  }

  function verdict(served) {
    const answered = served.filter((r) => !r.result.error);
    const failed = served.filter((r) => r.result.error).map((r) => `${r.title} answered an error: ${r.result.error}`);
    const mapped = h('ul', { className: 'mapping' }, served.map((r) => h('li', {}, h('strong', {}, r.title), `: ${r.plan.mapping}.${r.plan.here ? ` ${r.plan.here}` : ''}`)));
    if (served.length === 1) {
      return ['single', `Only ${served[0].title} serves this read: there is nothing to compare its answer with.`, [], mapped];
    }
    if (failed.length) return ['failed', 'Not every style answered with records, so the answers cannot all be compared:', failed, mapped];
    const [base, ...others] = answered;
    const problems = others.flatMap((o) => differences(base.title, base.result.records, o.title, o.result.records));
    const names = served.map((r) => r.title).join(', ').replace(/, ([^,]*)$/, ' and $1');
    if (problems.length) return ['differ', `${names} do not hold the same records:`, problems, mapped];
    const n = base.result.records.length;
    if (!n) return ['same', `${names} agree: no record answers this read.`, [], mapped];
    const ids = base.result.records.map((r) => r.id).join(', ');
    return ['same', `${names} hold the same ${n} record${n === 1 ? '' : 's'} (id ${ids}), field by field, after mapping names and time formats.`, [], mapped];
  }

  // ---- Running ------------------------------------------------------------

  async function run(read, values, token) {
    const plan = READS[read](values);
    performance.clearResourceTimings();
    performance.setResourceTimingBufferSize(1000);
    $('verdict').dataset.state = 'running';
    $('verdict').replaceChildren(h('p', {}, 'Sending\u2026'));
    const results = STYLES.map(([style, title]) => ({ style, title, plan: plan[style] }));
    const draw = () => $('columns').replaceChildren(...results.map(({ style, title, plan: p, result: r }) => {
      if (typeof p === 'string') return column(style, title, h('p', { className: 'note' }, `Not served here. ${p}`), 'not-served');
      if (!r) return column(style, title, h('p', { className: 'note' }, 'Sending\u2026'), 'sending');
      return r.sent ? drawResult(style, title, p, r) : column(style, title, h('p', { className: 'note bad' }, r.error), 'error');
    }));
    draw();
    const served = results.filter((r) => typeof r.plan !== 'string');
    // One style at a time, so that none shares the connection or the
    // service's attention with another while it is timed.
    for (const r of served) {
      try {
        r.result = r.style === 'grpc' ? await sendGRPC(r.plan, token) : await sendHTTP(r.style, r.plan, token);
        if (r.result.records) r.result.records = r.result.records.map((x) => record(plan.entity, x));
      } catch (err) {
        r.result = { error: `The request or its answer failed: ${err.message}` };
      }
      draw();
    }
    const [state, text, problems, mapped] = verdict(served);
    $('verdict').dataset.state = state;
    $('verdict').replaceChildren(...[h('p', { className: 'summary' }, text),
      problems.length && h('ul', { className: 'problems' }, problems.map((p) => h('li', {}, p))),
      h('details', {}, h('summary', {}, 'How each answer was read'), mapped)].filter(Boolean));
  }

  const form = $('form');
  const showInputs = () => {
    for (const set of form.querySelectorAll('fieldset[data-read]')) {
      set.hidden = set.dataset.read !== $('read').value;
      set.disabled = set.hidden; // a hidden input is not held to its rules
    }
  };
  $('read').addEventListener('change', showInputs);
  showInputs();
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    $('run').disabled = true;
    try {
      await run($('read').value, formValues($('read').value), $('token').value.trim().replace(/^bearer\s+/i, ''));
    } finally {
      $('run').disabled = false;
    }
  });
})();
