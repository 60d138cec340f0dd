// The GraphQL editor: a query editor with highlighting, variables and
// headers, a result pane, a schema explorer built from introspection, and
// subscriptions over WebSocket (the graphql-transport-ws protocol).
// Plain browser JavaScript, no dependencies; it talks only to the URL the
// page was served from.
'use strict';

(() => {
  const endpoint = location.pathname;
  const $ = (id) => document.getElementById(id);

  // h builds an element: h('li', {className: 'x', onclick: f}, 'text', child).
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k in el) el[k] = v;
      else el.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c !== null && c !== undefined && c !== false) el.append(c);
    }
    return el;
  }

  const escapeHTML = (s) => s.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);

  // ---- Tokenizers ---------------------------------------------------------

  // One alternative per token kind; the sticky flag makes exec continue at
  // lastIndex, so the whole input is consumed and nothing is skipped.
  const GRAPHQL_TOKEN = new RegExp([
    '(#[^\\n\\r]*)', // 1 comment
    '("""(?:\\\\"""|[^])*?(?:"""|$))', // 2 block string
    '("(?:\\\\.|[^"\\\\\\n\\r])*"?)', // 3 string
    '(-?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)', // 4 number
    '(\\$[_A-Za-z][_0-9A-Za-z]*)', // 5 variable
    '(@[_A-Za-z][_0-9A-Za-z]*)', // 6 directive
    '([_A-Za-z][_0-9A-Za-z]*)', // 7 name
    '(\\.\\.\\.|[{}()\\[\\]:=!|&$@])', // 8 punctuation
    '([\\s,\\uFEFF]+)', // 9 ignored
    '([^])', // 10 anything else
  ].join('|'), 'yu');

  const GRAPHQL_KINDS = ['', 'comment', 'string', 'string', 'number', 'variable', 'directive', 'name', 'punct', 'space', 'invalid'];
  const OPERATION_KEYWORDS = new Set(['query', 'mutation', 'subscription', 'fragment']);

  // tokenizeGraphQL splits src into {kind, text, start} tokens. Names are
  // classified by a little context: what came before and what follows.
  function tokenizeGraphQL(src) {
    const raw = [];
    GRAPHQL_TOKEN.lastIndex = 0;
    let m;
    while (GRAPHQL_TOKEN.lastIndex < src.length && (m = GRAPHQL_TOKEN.exec(src))) {
      let i = 1;
      while (m[i] === undefined) i++;
      raw.push({ kind: GRAPHQL_KINDS[i], text: m[0], start: m.index });
    }
    let depth = 0, parens = 0, prev = null, typeNext = false;
    for (let i = 0; i < raw.length; i++) {
      const t = raw[i];
      if (t.kind === 'punct') {
        if (t.text === '{') depth++;
        else if (t.text === '}') depth = Math.max(0, depth - 1);
        else if (t.text === '(') parens++;
        else if (t.text === ')') parens = Math.max(0, parens - 1);
        // In variable definitions ($v: Type) a colon precedes a type.
        typeNext = t.text === ':' && depth === 0 && parens > 0 ? true : typeNext && /[[!]/.test(t.text);
      } else if (t.kind === 'name') {
        let next = i + 1;
        while (next < raw.length && (raw[next].kind === 'space' || raw[next].kind === 'comment')) next++;
        const before = prev ? prev.text : '';
        if (typeNext || before === 'on') t.kind = 'type';
        else if (depth === 0 && parens === 0 && OPERATION_KEYWORDS.has(t.text)) t.kind = 'keyword';
        else if (depth === 0 && parens === 0 && OPERATION_KEYWORDS.has(before)) t.kind = 'def';
        else if (t.text === 'on' && prev && prev.kind === 'def') t.kind = 'keyword';
        else if (before === '...' && t.text === 'on') t.kind = 'keyword';
        else if (before === '...') t.kind = 'def';
        else if (/^(true|false|null)$/.test(t.text) && (before === ':' || before === '[' || before === '=')) t.kind = 'atom';
        else if (raw[next] && raw[next].text === ':') t.kind = 'attr';
        typeNext = false;
      }
      if (t.kind !== 'space' && t.kind !== 'comment') prev = t;
    }
    return raw;
  }

  const JSON_TOKEN = /("(?:\\.|[^"\\\n\r])*"?)(?=(\s*:)?)|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null)(?![\w$])|([{}[\],:])|(\s+)|([^])/yu;

  function tokenizeJSON(src) {
    const out = [];
    JSON_TOKEN.lastIndex = 0;
    let m;
    while (JSON_TOKEN.lastIndex < src.length && (m = JSON_TOKEN.exec(src))) {
      let kind = 'invalid';
      if (m[1] !== undefined) kind = m[2] ? 'key' : 'string';
      else if (m[3] !== undefined) kind = 'number';
      else if (m[4] !== undefined) kind = 'atom';
      else if (m[5] !== undefined) kind = 'punct';
      else if (m[6] !== undefined) kind = 'space';
      out.push({ kind, text: m[0], start: m.index });
    }
    return out;
  }

  function highlight(tokens) {
    let html = '';
    for (const t of tokens) {
      html += t.kind === 'space' || t.kind === 'name' ? escapeHTML(t.text) : `<span class="t-${t.kind}">${escapeHTML(t.text)}</span>`;
    }
    return html;
  }

  // operations lists the operations of a GraphQL document with their kind,
  // name and extent (up to the next definition), the way a server would
  // see them.
  function operations(src) {
    const defs = [];
    let depth = 0, parens = 0, current = null;
    for (const t of tokenizeGraphQL(src)) {
      if (t.kind === 'space' || t.kind === 'comment') continue;
      // At the top level a definition starts with a keyword, or with "{"
      // for the query shorthand.
      if (depth === 0 && parens === 0 && !current && (t.kind === 'keyword' || t.text === '{')) {
        current = { kind: t.kind === 'keyword' ? t.text : 'query', name: '', start: t.start };
        defs.push(current);
      }
      if (t.text === '(') parens++;
      else if (t.text === ')') parens = Math.max(0, parens - 1);
      else if (t.text === '{') {
        if (depth === 0 && parens === 0) current = null;
        depth++;
      } else if (t.text === '}') depth = Math.max(0, depth - 1);
      else if (t.kind === 'def' && current && !current.name) current.name = t.text;
    }
    defs.forEach((d, i) => { d.end = i + 1 < defs.length ? defs[i + 1].start : src.length; });
    return defs.filter((d) => d.kind !== 'fragment');
  }

  // ---- Code editors -------------------------------------------------------

  // CodeEditor keeps a highlighted <pre> in step with the transparent
  // textarea laid over it, and adds the keys a code editor needs.
  class CodeEditor {
    constructor(textarea, tokenize) {
      this.ta = textarea;
      this.code = textarea.parentElement.querySelector('pre code');
      this.tokenize = tokenize;
      this.tabLeaves = false;
      textarea.addEventListener('input', () => this.render());
      textarea.addEventListener('scroll', () => this.sync());
      textarea.addEventListener('keydown', (e) => this.keydown(e));
      this.render();
    }

    get value() { return this.ta.value; }
    set value(v) { this.ta.value = v; this.render(); }

    render() {
      // The trailing newline keeps the pre as tall as the textarea when the
      // text ends in an empty line.
      this.code.innerHTML = highlight(this.tokenize(this.ta.value)) + '\n';
      this.sync();
    }

    sync() {
      this.code.style.transform = `translate(${-this.ta.scrollLeft}px, ${-this.ta.scrollTop}px)`;
    }

    // insert replaces the selection with text in a way the browser's undo
    // stack remembers.
    insert(text) {
      this.ta.focus();
      if (!document.execCommand || !document.execCommand(text ? 'insertText' : 'delete', false, text)) {
        this.ta.setRangeText(text, this.ta.selectionStart, this.ta.selectionEnd, 'end');
        this.ta.dispatchEvent(new Event('input'));
      }
    }

    keydown(e) {
      const ta = this.ta;
      if (e.key === 'Escape') { this.tabLeaves = true; return; }
      const tabLeaves = this.tabLeaves;
      this.tabLeaves = false;
      if (e.key === 'Tab' && !tabLeaves && !e.ctrlKey && !e.altKey && !e.metaKey) {
        e.preventDefault();
        const lineStart = ta.value.lastIndexOf('\n', ta.selectionStart - 1) + 1;
        if (e.shiftKey) {
          const spaces = /^ {0,2}/.exec(ta.value.slice(lineStart))[0].length;
          if (spaces) {
            const caret = Math.max(lineStart, ta.selectionStart - spaces);
            ta.setSelectionRange(lineStart, lineStart + spaces);
            this.insert('');
            ta.setSelectionRange(caret, caret);
          }
        } else {
          this.insert((ta.selectionStart - lineStart) % 2 ? ' ' : '  ');
        }
      } else if (e.key === 'Enter' && !e.ctrlKey && !e.metaKey && !e.shiftKey && !e.altKey) {
        e.preventDefault();
        const lineStart = ta.value.lastIndexOf('\n', ta.selectionStart - 1) + 1;
        const line = ta.value.slice(lineStart, ta.selectionStart);
        let indent = /^[ \t]*/.exec(line)[0];
        if (/[{([]\s*$/.test(line)) indent += '  ';
        this.insert('\n' + indent);
      } else if (e.key.length === 1 && '}])'.includes(e.key) && ta.selectionStart === ta.selectionEnd) {
        // A closing bracket typed on a blank line goes one level out.
        const lineStart = ta.value.lastIndexOf('\n', ta.selectionStart - 1) + 1;
        if (/^ {2,}$/.test(ta.value.slice(lineStart, ta.selectionStart))) {
          e.preventDefault();
          ta.setSelectionRange(ta.selectionStart - 2, ta.selectionStart);
          this.insert(e.key);
        }
      }
    }
  }

  const queryEditor = new CodeEditor($('query'), tokenizeGraphQL);
  const variablesEditor = new CodeEditor($('variables'), tokenizeJSON);
  const headersEditor = new CodeEditor($('headers'), tokenizeJSON);

  // The query and variables outlive a reload; headers may hold secrets and
  // last only as long as the tab. Storage may be switched off: then nothing
  // is kept.
  const storage = (name) => {
    try {
      const s = window[name];
      s.getItem('');
      return s;
    } catch {
      return { getItem: () => null, setItem: () => {} };
    }
  };
  const saved = [
    [queryEditor, storage('localStorage'), 'graphql-editor.query'],
    [variablesEditor, storage('localStorage'), 'graphql-editor.variables'],
    [headersEditor, storage('sessionStorage'), 'graphql-editor.headers'],
  ];
  let firstVisit = true;
  for (const [editor, store, key] of saved) {
    const v = store.getItem(key);
    if (v !== null) editor.value = v;
    if (editor === queryEditor) firstVisit = v === null;
    editor.ta.addEventListener('input', () => store.setItem(key, editor.value));
  }
  if (firstVisit) {
    queryEditor.value = [
      '# Write a query, a mutation or a subscription, then press',
      '# Ctrl+Enter (\u2318+Enter on a Mac) or the Run button.',
      'query Users {',
      '  users {',
      '    id',
      '    name',
      '    email',
      '  }',
      '}',
      '',
    ].join('\n');
  }

  // ---- Tabs: variables and headers ----------------------------------------

  const tabs = [...document.querySelectorAll('[role="tab"]')];
  function selectTab(tab) {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute('aria-controls')).hidden = !on;
    }
  }
  tabs.forEach((tab, i) => {
    tab.addEventListener('click', () => selectTab(tab));
    tab.addEventListener('keydown', (e) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (!step) return;
      const next = tabs[(i + step + tabs.length) % tabs.length];
      selectTab(next);
      next.focus();
    });
  });

  // ---- Operation picker ---------------------------------------------------

  const picker = $('operation');
  let ops = [];

  function refreshOperations() {
    const chosen = picker.value;
    ops = operations(queryEditor.value);
    const named = ops.filter((op) => op.name);
    $('operation-picker').hidden = ops.length < 2;
    picker.replaceChildren(...named.map((op) => h('option', { value: op.name }, `${op.kind} ${op.name}`)));
    if (named.some((op) => op.name === chosen)) picker.value = chosen;
  }
  queryEditor.ta.addEventListener('input', refreshOperations);
  refreshOperations();

  // operationAt finds the operation whose extent holds the caret. An extent
  // ends where the next definition starts, so the end is exclusive: a caret
  // at column 0 of an operation's first line belongs to that operation, not
  // to the one before it. The operation that reaches the end of the text
  // also owns the caret there.
  function operationAt(list, caret, textLength) {
    return list.find((op) => op.start <= caret && (caret < op.end || caret === textLength && op.end === textLength));
  }

  // operationToRun picks the operation under the cursor when the editor has
  // focus, else the one in the picker.
  function operationToRun(fromKeyboard) {
    if (ops.length < 2) return ops[0] || null;
    if (fromKeyboard) {
      const here = operationAt(ops, queryEditor.ta.selectionStart, queryEditor.value.length);
      if (here && here.name) picker.value = here.name;
    }
    return ops.find((op) => op.name === picker.value) || ops[0];
  }

  // ---- Running operations -------------------------------------------------

  const statusLine = $('status');
  const resultPane = $('result');
  const errorList = $('errors');
  const eventList = $('events');

  const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

  function setStatus(text, tone) {
    statusLine.textContent = text;
    statusLine.className = 'status' + (tone ? ' ' + tone : '');
  }

  // readObject parses an editor's JSON, which must be an object or empty.
  function readObject(editor, what) {
    const text = editor.value.trim();
    if (!text) return {};
    let v;
    try {
      v = JSON.parse(text);
    } catch (err) {
      throw new Error(`${what} are not valid JSON: ${err.message}`);
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${what} must be a JSON object.`);
    return v;
  }

  function readHeaders() {
    const headers = readObject(headersEditor, 'Headers');
    for (const [k, v] of Object.entries(headers)) {
      if (typeof v !== 'string') throw new Error(`Header ${JSON.stringify(k)} must be a string.`);
    }
    return headers;
  }

  function showJSON(target, value) {
    target.innerHTML = highlight(tokenizeJSON(JSON.stringify(value, null, 2)));
  }

  // showErrors lists GraphQL errors above the result; a location is a
  // button that puts the cursor there.
  function showErrors(errors) {
    errorList.replaceChildren(...(errors || []).map((err) => h('li', {},
      String(err && err.message !== undefined ? err.message : JSON.stringify(err)),
      ...((err && err.locations) || []).map((loc) => h('button', {
        type: 'button',
        title: 'Show in the query',
        onclick: () => goTo(loc.line, loc.column),
      }, `${loc.line}:${loc.column}`)))));
    errorList.hidden = !errorList.children.length;
  }

  function goTo(line, column) {
    const lines = queryEditor.value.split('\n');
    let pos = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) pos += lines[i].length + 1;
    pos += Math.max(0, column - 1);
    queryEditor.ta.focus();
    queryEditor.ta.setSelectionRange(pos, pos);
  }

  function clearOutput() {
    showErrors([]);
    resultPane.textContent = '';
    resultPane.hidden = false;
    eventList.hidden = true;
    eventList.replaceChildren();
  }

  async function run(fromKeyboard) {
    stopSubscription('Stopped.');
    clearOutput();
    let variables, headers;
    try {
      variables = readObject(variablesEditor, 'Variables');
      headers = readHeaders();
    } catch (err) {
      setStatus(err.message, 'fail');
      return;
    }
    const op = operationToRun(fromKeyboard);
    const request = { query: queryEditor.value, variables };
    if (op && op.name && ops.length > 1) request.operationName = op.name;
    if (op && op.kind === 'subscription') {
      subscribe(request, headers);
      return;
    }
    setStatus('Running\u2026');
    const started = performance.now();
    let response, text;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json;q=0.9' },
        body: JSON.stringify(request),
      });
      text = await response.text();
    } catch (err) {
      setStatus(`The request failed: ${err.message}`, 'fail');
      return;
    }
    const ms = Math.round(performance.now() - started);
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      resultPane.textContent = text;
    }
    if (body !== undefined) {
      showJSON(resultPane, body);
      showErrors(body && body.errors);
    }
    const parts = [`${response.status} ${response.statusText}`.trim()];
    if (body && Array.isArray(body.errors)) parts.push(plural(body.errors.length, 'error'));
    parts.push(`${ms} ms`);
    setStatus(parts.join(' \u00b7 '), !response.ok || (body && body.errors) ? 'fail' : 'ok');
  }

  // ---- Subscriptions over graphql-transport-ws ----------------------------

  let subscription = null; // {socket, id, stopped}
  let nextID = 1;

  function socketURL() {
    const url = new URL(endpoint, location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    url.search = '';
    url.hash = '';
    return url.href;
  }

  function addEvent(payload, isError) {
    const n = eventList.children.length + 1;
    const body = h('pre', {});
    showJSON(body, payload);
    const time = new Date();
    eventList.prepend(h('li', { className: isError ? 'event-error' : '' },
      h('div', { className: 'meta' },
        h('span', {}, `#${n}`),
        h('time', { dateTime: time.toISOString() }, time.toLocaleTimeString([], { hour12: false }) + '.' + String(time.getMilliseconds()).padStart(3, '0'))),
      body));
  }

  function subscribe(request, headers) {
    resultPane.hidden = true;
    eventList.hidden = false;
    $('stop').hidden = false;
    const id = String(nextID++);
    const socket = new WebSocket(socketURL(), 'graphql-transport-ws');
    const sub = { socket, id, stopped: false, count: 0, pinged: false };
    subscription = sub;
    setStatus('Connecting\u2026');
    const send = (msg) => socket.send(JSON.stringify(msg));
    const finish = (text, tone) => {
      if (sub.stopped) return;
      sub.stopped = true;
      setStatus(text, tone);
      if (subscription === sub) { subscription = null; $('stop').hidden = true; }
      if (socket.readyState <= WebSocket.OPEN) socket.close(1000, 'done');
    };
    socket.addEventListener('open', () => {
      setStatus('Connected; waiting for connection_ack\u2026');
      send({ type: 'connection_init', payload: headers });
    });
    socket.addEventListener('message', (e) => {
      if (sub.stopped) return;
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        finish('The server sent a message that is not JSON.', 'fail');
        return;
      }
      switch (msg.type) {
        case 'connection_ack':
          send({ id, type: 'subscribe', payload: request });
          // The pong answers only after the server has read the subscribe
          // message before it, so the status then means "listening".
          send({ type: 'ping' });
          sub.pinged = true;
          setStatus('Subscribing\u2026');
          break;
        case 'ping':
          send({ type: 'pong' });
          break;
        case 'pong':
          if (sub.pinged && !sub.count) setStatus('Listening for events\u2026', 'ok');
          sub.pinged = false;
          break;
        case 'next':
          if (msg.id !== id) break;
          sub.count++;
          addEvent(msg.payload, msg.payload && msg.payload.errors);
          setStatus(`Listening \u00b7 ${plural(sub.count, 'event')}`, 'ok');
          break;
        case 'error':
          if (msg.id !== id) break;
          showErrors(Array.isArray(msg.payload) ? msg.payload : [msg.payload]);
          addEvent(msg.payload, true);
          finish('The subscription failed.', 'fail');
          break;
        case 'complete':
          if (msg.id === id) finish(`The server completed the subscription after ${plural(sub.count, 'event')}.`);
          break;
      }
    });
    socket.addEventListener('close', (e) => {
      const why = e.code === 1000 ? 'normally' : `with code ${e.code}${e.reason ? ': ' + e.reason : ''}`;
      finish(`The connection closed ${why}.`, e.code === 1000 ? '' : 'fail');
    });
  }

  function stopSubscription(text) {
    const sub = subscription;
    if (!sub) return;
    if (sub.socket.readyState === WebSocket.OPEN) sub.socket.send(JSON.stringify({ id: sub.id, type: 'complete' }));
    sub.stopped = true;
    sub.socket.close(1000, 'stopped');
    subscription = null;
    $('stop').hidden = true;
    setStatus(`${text} ${plural(sub.count, 'event')} received.`);
  }

  $('run').addEventListener('click', () => run(false));
  $('stop').addEventListener('click', () => { stopSubscription('Stopped.'); $('run').focus(); });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run(document.activeElement === queryEditor.ta);
    }
  });

  // ---- Schema explorer ----------------------------------------------------

  const INTROSPECTION_QUERY = `query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
  }
}
fragment FullType on __Type {
  kind name description specifiedByURL
  fields(includeDeprecated: true) {
    name description
    args { ...InputValue }
    type { ...TypeRef }
    isDeprecated deprecationReason
  }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } }
}`;

  const explorer = {
    schema: null, // {roots: [[label, name]], types: Map}
    trail: [], // names of the types visited, the current one last
    loading: null,
  };
  const explorerBody = $('explorer-body');
  const searchBox = $('explorer-search');

  async function loadSchema() {
    explorerBody.replaceChildren(h('p', { className: 'note' }, 'Loading the schema\u2026'));
    let body;
    try {
      let headers = {};
      try { headers = readHeaders(); } catch { /* introspection works without them */ }
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ query: INTROSPECTION_QUERY, operationName: 'IntrospectionQuery' }),
      });
      body = await res.json();
    } catch (err) {
      body = { errors: [{ message: err.message }] };
    }
    const s = body && body.data && body.data.__schema;
    if (!s) {
      const why = body && body.errors ? body.errors.map((e) => e.message).join('; ') : 'no schema in the response';
      explorer.schema = null;
      explorerBody.replaceChildren(h('p', { className: 'note fail' }, `Could not load the schema: ${why}`));
      return;
    }
    const roots = [['query', s.queryType], ['mutation', s.mutationType], ['subscription', s.subscriptionType]]
      .filter(([, t]) => t).map(([label, t]) => [label, t.name]);
    explorer.schema = { roots, types: new Map(s.types.map((t) => [t.name, t])) };
    renderExplorer();
  }

  function toggleExplorer(open) {
    const toggle = $('explorer-toggle');
    $('explorer').hidden = !open;
    $('layout').classList.toggle('with-explorer', open);
    toggle.setAttribute('aria-expanded', String(open));
    if (open && !explorer.schema && !explorer.loading) {
      explorer.loading = loadSchema().finally(() => { explorer.loading = null; });
    }
    if (open) searchBox.focus();
  }

  function openType(name, field) {
    // Coming back to a type already on the trail cuts the trail there.
    const seen = explorer.trail.indexOf(name);
    if (seen >= 0) explorer.trail = explorer.trail.slice(0, seen + 1);
    else explorer.trail.push(name);
    searchBox.value = '';
    renderExplorer(field);
    explorerBody.scrollTop = 0;
    const target = explorerBody.querySelector('.target');
    if (target) target.scrollIntoView({ block: 'center' });
    explorerBody.focus({ preventScroll: true });
  }

  // typeRef renders [User!]! as one element whose named type is a link.
  // The wrappers nest to any depth, so they are gathered into one flat list:
  // h flattens only one level, and a nested array would show as its
  // toString ("[,[object HTMLButtonElement],!,]!").
  function typeRef(t) {
    const parts = [];
    const walk = (ref) => {
      if (ref.kind === 'NON_NULL') { walk(ref.ofType); parts.push('!'); }
      else if (ref.kind === 'LIST') { parts.push('['); walk(ref.ofType); parts.push(']'); }
      else parts.push(h('button', { type: 'button', className: 'type-link', onclick: () => openType(ref.name) }, ref.name));
    };
    walk(t);
    return h('span', { className: 'type-ref' }, parts);
  }

  const kindName = (kind) => kind.toLowerCase().replace('_', ' ');
  const description = (d) => d ? h('p', { className: 'desc' }, d) : null;
  const deprecation = (x) => x.isDeprecated ? h('p', { className: 'deprecated' }, 'Deprecated' + (x.deprecationReason ? `: ${x.deprecationReason}` : '')) : null;

  function inputValue(a) {
    return h('span', { className: 'args' },
      h('span', { className: 'arg' }, a.name), h('span', { className: 'punct' }, ': '), typeRef(a.type),
      a.defaultValue !== null && a.defaultValue !== undefined ? h('span', { className: 'punct' }, ` = ${a.defaultValue}`) : null);
  }

  function fieldItem(f, target) {
    const args = f.args && f.args.length ? ['(', f.args.map(inputValue), ')'] : [];
    return h('li', { className: f.name === target ? 'target' : '', id: 'field-' + f.name },
      h('div', { className: 'sig' }, h('span', { className: 'field' }, f.name), ...args, h('span', { className: 'punct' }, ': '), typeRef(f.type)),
      description(f.description), deprecation(f));
  }

  function typeList(names) {
    return h('ul', {}, names.map((name) => {
      const t = explorer.schema.types.get(name);
      return h('li', {},
        h('div', { className: 'sig' }, typeRef({ kind: t.kind, name }), h('span', { className: 'kind' }, kindName(t.kind))),
        description(t.description && t.description.split('\n')[0]));
    }));
  }

  function renderCrumbs() {
    const nav = $('explorer-nav');
    const home = h('button', { type: 'button', onclick: () => { explorer.trail = []; renderExplorer(); } }, 'Schema');
    const parts = [home];
    explorer.trail.forEach((name, i) => {
      parts.push(h('span', { 'aria-hidden': 'true' }, '\u203a'));
      if (i === explorer.trail.length - 1) parts.push(h('span', { 'aria-current': 'page' }, name));
      else parts.push(h('button', { type: 'button', onclick: () => { explorer.trail = explorer.trail.slice(0, i + 1); renderExplorer(); } }, name));
    });
    nav.replaceChildren(...parts);
  }

  function renderExplorer(targetField) {
    const s = explorer.schema;
    if (!s) return;
    renderCrumbs();
    const query = searchBox.value.trim().toLowerCase();
    if (query) return renderSearch(query);
    const current = explorer.trail[explorer.trail.length - 1];
    const t = current && s.types.get(current);
    if (!t) {
      const rootNames = new Set(s.roots.map(([, n]) => n));
      const others = [...s.types.keys()].filter((n) => !n.startsWith('__') && !rootNames.has(n)).sort();
      explorerBody.replaceChildren(
        h('h4', {}, 'Root types'),
        h('ul', {}, s.roots.map(([label, name]) => h('li', {},
          h('div', { className: 'sig' }, h('span', { className: 'field' }, label), h('span', { className: 'punct' }, ': '), typeRef({ kind: 'OBJECT', name }))))),
        h('h4', {}, 'All types'), typeList(others));
      return;
    }
    const parts = [h('h3', {}, t.name, h('span', { className: 'kind' }, kindName(t.kind))), description(t.description)];
    if (t.specifiedByURL) parts.push(h('p', { className: 'desc' }, `Specified by ${t.specifiedByURL}`));
    if (t.interfaces && t.interfaces.length) parts.push(h('h4', {}, 'Implements'), h('ul', {}, t.interfaces.map((i) => h('li', { className: 'sig' }, typeRef(i)))));
    if (t.fields && t.fields.length) parts.push(h('h4', {}, 'Fields'), h('ul', {}, t.fields.map((f) => fieldItem(f, targetField))));
    if (t.inputFields && t.inputFields.length) parts.push(h('h4', {}, 'Input fields'), h('ul', {}, t.inputFields.map((f) => h('li', { className: 'sig' }, inputValue(f), description(f.description)))));
    if (t.enumValues && t.enumValues.length) parts.push(h('h4', {}, 'Values'), h('ul', {}, t.enumValues.map((v) => h('li', {}, h('div', { className: 'sig' }, v.name), description(v.description), deprecation(v)))));
    if (t.possibleTypes && t.possibleTypes.length) parts.push(h('h4', {}, 'Possible types'), h('ul', {}, t.possibleTypes.map((p) => h('li', { className: 'sig' }, typeRef(p)))));
    explorerBody.replaceChildren(...parts.filter(Boolean));
  }

  function renderSearch(query) {
    const types = [], fields = [];
    for (const t of explorer.schema.types.values()) {
      if (t.name.startsWith('__')) continue;
      if (t.name.toLowerCase().includes(query)) types.push(t.name);
      for (const f of t.fields || t.inputFields || []) {
        if (f.name.toLowerCase().includes(query)) fields.push([t.name, f]);
      }
    }
    const found = [];
    if (types.length) found.push(h('h4', {}, 'Types'), typeList(types.sort()));
    if (fields.length) {
      found.push(h('h4', {}, 'Fields'), h('ul', {}, fields.map(([owner, f]) => h('li', {},
        h('div', { className: 'sig' },
          h('button', { type: 'button', className: 'type-link', onclick: () => openType(owner, f.name) }, owner),
          h('span', { className: 'punct' }, '.'), h('span', { className: 'field' }, f.name),
          h('span', { className: 'punct' }, ': '), typeRef(f.type)),
        description(f.description)))));
    }
    if (!found.length) found.push(h('p', { className: 'note' }, `Nothing matches \u201c${searchBox.value.trim()}\u201d.`));
    explorerBody.replaceChildren(...found);
  }

  $('explorer-toggle').addEventListener('click', () => toggleExplorer($('explorer').hidden));
  $('explorer-reload').addEventListener('click', () => { explorer.schema = null; toggleExplorer(true); });
  searchBox.addEventListener('input', () => renderExplorer());
  searchBox.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && searchBox.value) { searchBox.value = ''; renderExplorer(); }
  });

  queryEditor.ta.focus();
})();
