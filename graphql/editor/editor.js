// The GraphQL editor: a query editor with highlighting, brackets and
// quotes that close themselves, variables and headers, several tabs, a
// result pane, a schema explorer built from introspection whose fields a
// click inserts, subscriptions over WebSocket (the graphql-transport-ws
// protocol), autocompletion from the introspected schema, Prettify, a
// history of the operations run, lint as you type, documentation on hover,
// copy as curl, and the same data through REST, OData and gRPC.
// Plain browser JavaScript, no dependencies; it talks only to the URL the
// page was served from.
//
// One file of about 2,500 lines, on purpose: the page is served as one
// embedded asset without a build step or a module loader, and its parts
// (lexer, parser, lint, completion, explorer, tabs) share the editor's
// state. It is cut into commented sections instead, one per feature.
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

  // ---- Tokenizers --------------------------------------------------------

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

  // lexGraphQL splits src from offset from into {kind, raw, text, start}
  // tokens, up to the end or until stop(offset) says the tokens already
  // known from there on still hold. The lexer has no state between tokens,
  // so a token that starts where an old one started is the old one.
  function lexGraphQL(src, from, out, stop) {
    GRAPHQL_TOKEN.lastIndex = from;
    let m;
    while (GRAPHQL_TOKEN.lastIndex < src.length) {
      if (stop && stop(GRAPHQL_TOKEN.lastIndex)) return true;
      m = GRAPHQL_TOKEN.exec(src);
      let i = 1;
      while (m[i] === undefined) i++;
      out.push({ kind: GRAPHQL_KINDS[i], raw: GRAPHQL_KINDS[i], text: m[0], start: m.index });
    }
    return false;
  }

  // classify names the kind of each name token by a little context: what
  // came before and what follows. It runs over every token, but allocates
  // nothing.
  function classify(raw) {
    let depth = 0, parens = 0, prev = null, typeNext = false;
    for (let i = 0; i < raw.length; i++) {
      const t = raw[i];
      if (t.raw === 'punct') {
        if (t.text === '{') depth++;
        else if (t.text === '}') depth = Math.max(0, depth - 1);
        else if (t.text === '(') parens++;
        else if (t.text === ')') parens = Math.max(0, parens - 1);
        // In variable definitions ($v: Type) a colon precedes a type.
        typeNext = t.text === ':' && depth === 0 && parens > 0 ? true : typeNext && /[[!]/.test(t.text);
      } else if (t.raw === 'name') {
        let next = i + 1;
        while (next < raw.length && (raw[next].raw === 'space' || raw[next].raw === 'comment')) next++;
        const before = prev ? prev.text : '';
        t.kind = 'name';
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
      if (t.raw !== 'space' && t.raw !== 'comment') prev = t;
    }
    return raw;
  }

  // tokenizeGraphQL splits src into {kind, text, start} tokens, names
  // classified.
  function tokenizeGraphQL(src) {
    const raw = [];
    lexGraphQL(src, 0, raw, null);
    return classify(raw);
  }

  // textEdit is where two texts stop agreeing from either end: the edit that
  // made now of before replaced before[p, oldEnd) and moved what follows by delta.
  function textEdit(before, now) {
    const max = Math.min(before.length, now.length);
    let p = 0;
    while (p < max && before.charCodeAt(p) === now.charCodeAt(p)) p++;
    let s = 0;
    while (s < max - p && before.charCodeAt(before.length - 1 - s) === now.charCodeAt(now.length - 1 - s)) s++;
    return { p, oldEnd: before.length - s, delta: now.length - before.length };
  }

  // retokenize is tokenizeGraphQL(src) for src made by one edit of old,
  // whose tokens are oldTokens: it lexes again only from the token before
  // the edit (which the edit may extend) to the first old token after it
  // that the new lexing lands on, and moves the rest by the edit's length.
  // On a long document a keystroke thus lexes a few tokens, not thousands.
  function retokenize(old, oldTokens, src) {
    if (old === null || !oldTokens.length) return tokenizeGraphQL(src);
    const { p, oldEnd, delta } = textEdit(old, src);
    // first: the last token starting at or before p - 1; after: the first
    // starting at or after oldEnd.
    const search = (pos) => {
      let lo = 0, hi = oldTokens.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (oldTokens[mid].start < pos) lo = mid + 1; else hi = mid; }
      return lo;
    };
    let first = search(Math.max(0, p - 1) + 1) - 1;
    if (first < 0) first = 0;
    let after = search(oldEnd);
    const out = oldTokens.slice(0, first);
    const resynced = lexGraphQL(src, oldTokens[first].start, out, (at) => {
      while (after < oldTokens.length && oldTokens[after].start + delta < at) after++;
      return after < oldTokens.length && oldTokens[after].start + delta === at;
    });
    // The old tokens are moved in place: only the memo in tokensOf holds them.
    if (resynced) {
      for (let i = after; i < oldTokens.length; i++) {
        const t = oldTokens[i];
        t.start += delta;
        if (t.lint) for (const l of t.lint) { l.start += delta; l.end += delta; }
        out.push(t);
      }
    }
    return classify(out);
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

  // highlight gives each token its colour; a token that starts a lint
  // problem (marked, a set of offsets) is underlined as well.
  function highlight(tokens, marked) {
    let html = '';
    for (const t of tokens) {
      const cls = (t.kind === 'space' || t.kind === 'name' ? '' : `t-${t.kind}`) + (marked && marked.has(t.start) && t.kind !== 'space' ? ' lint-error' : '');
      html += cls ? `<span class="${cls.trim()}">${escapeHTML(t.text)}</span>` : escapeHTML(t.text);
    }
    return html;
  }

  // highlightLines is highlight cut into lines, one string each, so that an
  // edit redraws only the lines it changed (CodeEditor.patch). A token that
  // spans lines (a block string) is cut with it, each piece keeping its colour.
  function highlightLines(tokens, marked) {
    const lines = [];
    let line = '';
    const add = (cls, text) => { if (text) line += cls ? `<span class="${cls}">${escapeHTML(text)}</span>` : escapeHTML(text); };
    const classOf = (t, mark) => ((t.kind === 'space' || t.kind === 'name' ? '' : `t-${t.kind}`) + (mark ? ' lint-error' : '')).trim();
    for (const t of tokens) {
      const mark = !!marked && t.kind !== 'space' && marked.has(t.start);
      // A token keeps its HTML while its kind and mark stay the same.
      if (t.htmlKind !== t.kind || t.htmlMark !== mark) {
        t.htmlKind = t.kind;
        t.htmlMark = mark;
        t.multiline = t.text.includes('\n');
        const cls = classOf(t, mark);
        t.html = t.multiline ? '' : cls ? `<span class="${cls}">${escapeHTML(t.text)}</span>` : escapeHTML(t.text);
      }
      if (!t.multiline) { line += t.html; continue; }
      const cls = classOf(t, mark);
      t.text.split('\n').forEach((piece, i) => {
        if (i) { lines.push(line); line = ''; }
        add(cls, piece);
      });
    }
    lines.push(line);
    return lines;
  }

  // tokensOf is tokenizeGraphQL for the query being edited, computed once per
  // text: the highlighter, the lint, the operation picker, the tab title and
  // the same-data panel all read the same text on a keystroke.
  let tokenMemo = { src: null, tokens: [] };
  function tokensOf(src) {
    if (tokenMemo.src !== src) tokenMemo = { src, tokens: retokenize(tokenMemo.src, tokenMemo.tokens, src) };
    return tokenMemo.tokens;
  }

  // operations lists the operations of a GraphQL document with their kind,
  // name and extent (up to the next definition), the way a server would
  // see them.
  let operationsMemo = { src: null, list: [] };
  function operations(src) {
    if (operationsMemo.src === src) return operationsMemo.list;
    const list = findOperations(src);
    operationsMemo = { src, list };
    return list;
  }

  function findOperations(src) {
    const defs = [];
    let depth = 0, parens = 0, current = null;
    for (const t of tokensOf(src)) {
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

  // ---- Code editors ------------------------------------------------------

  // CodeEditor keeps a highlighted <pre> in step with the transparent
  // textarea laid over it, and adds the keys a code editor needs.
  //
  // The highlighted text is one block element per line: an edit rewrites
  // only the lines whose highlighting changed, and the browser lays out only
  // those, so a keystroke on a long document stays quick.
  //
  // Brackets and quotes close themselves: "{", "(", "[" and '"' put in their
  // closer; typing a closer the editor put in steps over it (offsets in
  // closers, kept in step with every edit by track); Backspace between an
  // empty pair removes both; a third '"' after '""' opens a block string
  // and puts in its closing '"""'.
  const PAIRS = { '{': '}', '(': ')', '[': ']', '"': '"' };

  class CodeEditor {
    constructor(textarea, tokenize) {
      this.ta = textarea;
      this.code = textarea.parentElement.querySelector('pre code');
      this.tokenize = tokenize;
      this.blockStrings = tokenize === tokensOf;
      this.tabLeaves = false;
      // keyHook sees a key first and returns true when it has handled it
      // (the autocompletion list uses it for arrows, Enter, Tab and Esc).
      this.keyHook = null;
      // marker, when set, returns the offsets of the tokens to underline.
      this.marker = null;
      this.lines = []; // the HTML of each line as drawn
      this.closers = []; // offsets of the closers the editor put in itself
      this.last = textarea.value; // the text before the latest edit
      textarea.addEventListener('input', () => { this.track(); this.render(); });
      textarea.addEventListener('scroll', () => this.sync());
      textarea.addEventListener('keydown', (e) => this.keydown(e));
      this.render();
    }

    get value() { return this.ta.value; }
    set value(v) {
      this.ta.value = v;
      this.last = v;
      this.closers = [];
      this.render();
      this.sync();
    }

    render() {
      const text = this.ta.value;
      const tokens = this.tokenize(text);
      this.patch(highlightLines(tokens, this.marker && this.marker(text, tokens)));
      // No sync here: reading the scroll offsets would lay the page out now,
      // and again in the next frame. Typing that scrolls fires scroll.
    }

    // patch redraws the lines between the unchanged head and tail. Every
    // line ends in a newline, so the text of the pre is the textarea's plus
    // one newline, and an empty last line keeps its height.
    patch(lines) {
      const old = this.lines, kids = this.code.children;
      let head = 0;
      while (head < old.length && head < lines.length && old[head] === lines[head]) head++;
      let tail = 0;
      while (tail < old.length - head && tail < lines.length - head && old[old.length - 1 - tail] === lines[lines.length - 1 - tail]) tail++;
      const removed = old.length - head - tail, added = lines.length - head - tail;
      const kept = Math.min(removed, added);
      for (let i = 0; i < kept; i++) kids[head + i].innerHTML = lines[head + i] + '\n';
      for (let i = removed - 1; i >= kept; i--) kids[head + i].remove();
      if (added > kept) {
        const fresh = document.createDocumentFragment();
        for (let i = kept; i < added; i++) fresh.append(h('span', { className: 'ln', innerHTML: lines[head + i] + '\n' }));
        this.code.insertBefore(fresh, kids[head + kept] || null);
      }
      this.lines = lines;
    }

    sync() {
      this.code.style.transform = `translate(${-this.ta.scrollLeft}px, ${-this.ta.scrollTop}px)`;
    }

    // track moves the closers after an edit by what the edit inserted or
    // removed before them, and forgets those it replaced. The edit is where
    // the old and the new text stop agreeing from either end.
    track() {
      const before = this.last, now = this.ta.value;
      this.last = now;
      if (!this.closers.length) return;
      const { p, oldEnd, delta } = textEdit(before, now);
      this.closers = this.closers.filter((o) => o < p || o >= oldEnd).map((o) => (o >= oldEnd ? o + delta : o));
    }

    // inside says whether pos is in a string or a comment, where brackets
    // and quotes are text and close nothing.
    inside(pos) {
      const toks = this.tokenize === tokensOf ? tokenizeGraphQL(this.ta.value.slice(0, pos)) : this.tokenize(this.ta.value.slice(0, pos));
      const t = toks[toks.length - 1];
      if (!t || t.start + t.text.length !== pos) return '';
      if (t.kind === 'comment') return 'comment';
      if (t.kind !== 'string' && t.kind !== 'key') return '';
      const closed = t.text.startsWith('"""') ? t.text.length >= 6 && t.text.endsWith('"""') : t.text.length >= 2 && t.text.endsWith('"');
      return closed ? '' : 'string';
    }

    // put inserts text at the caret (replacing the selection), then selects
    // from..to, offsets into the text inserted.
    put(text, from, to = from) {
      const at = this.ta.selectionStart;
      this.insert(text);
      this.ta.setSelectionRange(at + from, at + to);
    }

    // autoClose handles a key that opens, closes or deletes a pair; it
    // returns true when it did.
    autoClose(e) {
      const ta = this.ta, v = ta.value, start = ta.selectionStart, end = ta.selectionEnd, k = e.key;
      if (k === 'Backspace') {
        if (start !== end || !PAIRS[v[start - 1]] || PAIRS[v[start - 1]] !== v[start] || this.inside(start - 1) === 'comment') return false;
        ta.setSelectionRange(start - 1, start + 1);
        this.insert('');
        return true;
      }
      if (k.length !== 1) return false;
      if (start === end && v[start] === k && (k === '"' || '})]'.includes(k)) && this.closers.includes(start)) {
        this.closers = this.closers.filter((o) => o !== start);
        ta.setSelectionRange(start + 1, start + 1);
        return true;
      }
      if (!PAIRS[k]) return false;
      if (start !== end) {
        // A selection is wrapped in the pair.
        this.put(k + v.slice(start, end) + PAIRS[k], 1, 1 + end - start);
        return true;
      }
      const where = this.inside(start);
      if (where === 'comment' || (where === 'string' && k !== '"')) return false;
      if (k === '"') {
        if (where === 'string' || /[\\\w]/.test(v[start - 1] || '')) return false; // it closes a string, or is escaped
        if (this.blockStrings && v.slice(start - 2, start) === '""' && v[start - 3] !== '"') {
          this.put('""""', 1);
          this.closers.push(start + 1, start + 2, start + 3);
          return true;
        }
      }
      // Before a word, an opener is just itself: it will wrap what follows.
      if (v[start] !== undefined && !/[\s,)\]}]/.test(v[start])) return false;
      this.put(k + PAIRS[k], 1);
      this.closers.push(start + 1);
      return true;
    }

    // insert replaces the selection with text in a way the browser's undo
    // stack remembers.
    insert(text) {
      this.ta.focus();
      // A hidden textarea takes no focus, and execCommand would then edit
      // whatever has it.
      const focused = document.activeElement === this.ta;
      if (!focused || !document.execCommand || !document.execCommand(text ? 'insertText' : 'delete', false, text)) {
        this.ta.setRangeText(text, this.ta.selectionStart, this.ta.selectionEnd, 'end');
        this.ta.dispatchEvent(new Event('input'));
      }
    }

    // replaceAll puts in new text as one edit that Ctrl+Z takes back, and
    // tells the listeners (storage, operation picker) as typing would.
    replaceAll(text) {
      if (text === this.value) return;
      this.ta.focus();
      this.ta.setSelectionRange(0, this.value.length);
      this.insert(text);
      this.ta.setSelectionRange(0, 0);
      this.ta.scrollTop = 0;
      this.sync();
    }

    keydown(e) {
      if (this.keyHook && this.keyHook(e)) return;
      const ta = this.ta;
      if (e.key === 'Escape') { this.tabLeaves = true; return; }
      const tabLeaves = this.tabLeaves;
      this.tabLeaves = false;
      if (!e.ctrlKey && !e.metaKey && !e.altKey && !e.isComposing && this.autoClose(e)) {
        e.preventDefault();
        return;
      }
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
        const at = ta.selectionStart;
        const lineStart = ta.value.lastIndexOf('\n', at - 1) + 1;
        const line = ta.value.slice(lineStart, at);
        const base = /^[ \t]*/.exec(line)[0];
        const open = ta.value[at - 1];
        if (ta.selectionEnd === at && '{(['.includes(open) && PAIRS[open] === ta.value[at]) {
          // Between a pair the closer goes a line further down.
          this.put(`\n${base}  \n${base}`, base.length + 3);
          return;
        }
        this.insert('\n' + base + (/[{([]\s*$/.test(line) ? '  ' : ''));
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

  const queryEditor = new CodeEditor($('query'), tokensOf);
  const variablesEditor = new CodeEditor($('variables'), tokenizeJSON);
  const headersEditor = new CodeEditor($('headers'), tokenizeJSON);

  // Storage may be switched off: then nothing is kept.
  const storage = (name) => {
    try {
      const s = window[name];
      s.getItem('');
      return s;
    } catch {
      return { getItem: () => null, setItem: () => {}, removeItem: () => {} };
    }
  };

  // ---- Document tabs -----------------------------------------------------

  // Each tab has its own document, variables, headers and result. The
  // documents and variables of every tab outlive a reload (localStorage);
  // headers may hold secrets and, with the result, last only as long as the
  // browser tab (sessionStorage). A tab is named after its first named
  // operation. Saving waits for a pause in typing, so that a keystroke on a
  // long document does not write every tab out; leaving the page saves.
  const TABS_KEY = 'graphql-editor.tabs';
  const local = storage('localStorage'), session = storage('sessionStorage');
  const tabList = $('doc-tablist');
  const WELCOME = [
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

  const docs = { tabs: [], active: null, timer: 0, next: 1 };
  const newTab = (query, variables) => ({ id: `t${Date.now().toString(36)}${docs.next++}`, query, variables, headers: '', output: null });

  function readJSON(store, key) {
    try { return JSON.parse(store.getItem(key)); } catch { return null; }
  }

  function loadTabs() {
    const saved = readJSON(local, TABS_KEY);
    if (saved && Array.isArray(saved.tabs) && saved.tabs.length) {
      docs.tabs = saved.tabs.filter((t) => t && typeof t.id === 'string').map((t) => ({
        id: t.id,
        query: String(t.query || ''),
        variables: String(t.variables || ''),
        headers: session.getItem(`graphql-editor.headers.${t.id}`) || '',
        output: readJSON(session, `graphql-editor.output.${t.id}`),
      }));
    }
    if (!docs.tabs.length) {
      // The editor before tabs kept one document under these keys.
      const query = local.getItem('graphql-editor.query');
      const tab = newTab(query === null ? WELCOME : query, local.getItem('graphql-editor.variables') || '');
      tab.headers = session.getItem('graphql-editor.headers') || '';
      docs.tabs = [tab];
    }
    docs.active = docs.tabs.find((t) => saved && t.id === saved.active) || docs.tabs[0];
  }

  function saveTabs() {
    clearTimeout(docs.timer);
    docs.timer = 0;
    local.setItem(TABS_KEY, JSON.stringify({ active: docs.active.id, tabs: docs.tabs.map(({ id, query, variables }) => ({ id, query, variables })) }));
    for (const t of docs.tabs) session.setItem(`graphql-editor.headers.${t.id}`, t.headers);
  }
  const saveSoon = () => { if (!docs.timer) docs.timer = setTimeout(saveTabs, 400); };
  addEventListener('pagehide', () => { if (docs.active) { snapshotOutput(); saveTabs(); } });

  // tabTitle is the name of the document's first named operation.
  function tabTitle(src) {
    const named = operations(src).find((op) => op.name);
    return named ? named.name : 'Untitled';
  }

  function renderTabs() {
    tabList.replaceChildren(...docs.tabs.map((t, i) => {
      const on = t === docs.active;
      const title = tabTitle(t.query);
      return h('span', { className: 'doc-tab', role: 'presentation' },
        h('button', {
          type: 'button', role: 'tab', id: `doc-tab-${t.id}`, className: 'doc-tab-title',
          'aria-selected': String(on), 'aria-controls': 'doc-panel', tabIndex: on ? 0 : -1,
          onclick: () => switchTab(t),
          onkeydown: (e) => {
            const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
            if (!step) return;
            switchTab(docs.tabs[(i + step + docs.tabs.length) % docs.tabs.length]);
            $(`doc-tab-${docs.active.id}`).focus();
          },
        }, title),
        docs.tabs.length > 1 ? h('button', { type: 'button', className: 'doc-tab-close quiet', 'aria-label': `Close ${title}`, title: `Close ${title}`, onclick: () => closeTab(t) }, '\u00d7') : null);
    }));
    $('doc-panel').setAttribute('aria-labelledby', `doc-tab-${docs.active.id}`);
  }

  // retitle renames the active tab as its document changes, touching the
  // page only when the name does.
  function retitle() {
    const button = $(`doc-tab-${docs.active.id}`);
    const title = tabTitle(docs.active.query);
    if (button && button.textContent !== title) renderTabs();
  }

  // snapshotOutput keeps what the result pane shows in the active tab, and
  // in the session's storage unless it is too large for it.
  function snapshotOutput() {
    const t = docs.active;
    t.output = {
      status: statusLine.textContent,
      tone: statusLine.className.replace(/^status\s*/, ''),
      result: resultPane.hidden ? '' : resultPane.textContent,
      errors: shownErrors,
    };
    const output = JSON.stringify(t.output);
    try { session.setItem(`graphql-editor.output.${t.id}`, output.length < 1 << 20 ? output : 'null'); } catch { /* full */ }
  }

  function showOutput(output) {
    clearOutput();
    $('curl-box').hidden = true; // it was the other tab's command
    setStatus(output ? output.status : '', output ? output.tone : '');
    if (!output) return;
    let body;
    try { body = JSON.parse(output.result); } catch { /* shown as it came */ }
    if (body !== undefined) showJSON(resultPane, body);
    else resultPane.textContent = output.result;
    showErrors(output.errors);
  }

  // showTab puts a tab's document, variables, headers and result in the
  // page, as if they had been typed.
  function showTab(t) {
    docs.active = t;
    queryEditor.value = t.query;
    variablesEditor.value = t.variables;
    headersEditor.value = t.headers;
    renderTabs();
  }

  function switchTab(t) {
    if (t === docs.active) return;
    stopSubscription('Stopped.');
    snapshotOutput();
    showTab(t);
    showOutput(t.output);
    closeCompletions();
    hoverTip.hidden = true;
    refreshOperations();
    renderElsewhere();
    saveTabs();
  }

  function addTab() {
    const t = newTab('', '');
    docs.tabs.push(t);
    switchTab(t);
    queryEditor.ta.focus();
  }

  function closeTab(t) {
    const i = docs.tabs.indexOf(t);
    if (docs.tabs.length < 2 || i < 0) return;
    if (t === docs.active) switchTab(docs.tabs[i + 1] || docs.tabs[i - 1]);
    docs.tabs.splice(i, 1);
    session.removeItem(`graphql-editor.headers.${t.id}`);
    session.removeItem(`graphql-editor.output.${t.id}`);
    renderTabs();
    saveTabs();
    $(`doc-tab-${docs.active.id}`).focus();
  }

  loadTabs();
  showTab(docs.active);
  for (const [editor, field] of [[queryEditor, 'query'], [variablesEditor, 'variables'], [headersEditor, 'headers']]) {
    editor.ta.addEventListener('input', () => {
      docs.active[field] = editor.value;
      saveSoon();
    });
  }
  queryEditor.ta.addEventListener('input', retitle);
  $('doc-tab-new').addEventListener('click', addTab);

  // ---- Request options: variables, headers and history -------------------

  const tabs = [...document.querySelectorAll('.tabs [role="tab"]')];
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

  // ---- History of run operations -----------------------------------------

  // Every operation run is kept in localStorage, newest first, so that it
  // outlives a reload: its text, its variables, which operation and when.
  // Running one again moves it to the top rather than adding a copy.
  const HISTORY_KEY = 'graphql-editor.history';
  const HISTORY_SIZE = 30;
  const historyStore = storage('localStorage');
  const historyList = $('history-list');

  function readHistory() {
    try {
      const v = JSON.parse(historyStore.getItem(HISTORY_KEY) || '[]');
      return Array.isArray(v) ? v.filter((e) => e && typeof e.query === 'string') : [];
    } catch {
      return []; // a damaged entry is not worth an error
    }
  }

  function remember(op) {
    const entry = {
      query: queryEditor.value,
      variables: variablesEditor.value,
      operation: op ? `${op.kind}${op.name ? ' ' + op.name : ''}` : '',
      at: new Date().toISOString(),
    };
    const same = (e) => e.query === entry.query && e.variables === entry.variables && e.operation === entry.operation;
    const list = [entry, ...readHistory().filter((e) => !same(e))].slice(0, HISTORY_SIZE);
    historyStore.setItem(HISTORY_KEY, JSON.stringify(list));
    renderHistory();
  }

  function renderHistory() {
    const list = readHistory();
    historyList.replaceChildren(...list.map((e) => {
      const text = e.query.replace(/#[^\n]*/g, '').replace(/\s+/g, ' ').trim();
      const when = new Date(e.at);
      return h('li', {},
        h('button', {
          type: 'button',
          className: 'history-entry',
          title: 'Put this operation and its variables back in the editor',
          onclick: () => {
            variablesEditor.replaceAll(e.variables || '');
            queryEditor.replaceAll(e.query);
            queryEditor.ta.focus();
          },
        },
        h('span', { className: 'history-op' }, e.operation || 'query'),
        h('time', { dateTime: e.at }, isNaN(when) ? '' : when.toLocaleString([], { hour12: false })),
        h('span', { className: 'history-text' }, text.length > 120 ? text.slice(0, 119) + '\u2026' : text)));
    }));
    $('history-empty').hidden = list.length > 0;
    $('history-clear').hidden = list.length === 0;
  }

  $('history-clear').addEventListener('click', () => {
    historyStore.setItem(HISTORY_KEY, '[]');
    renderHistory();
  });
  renderHistory();

  // ---- Operation picker --------------------------------------------------

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

  // ---- Running operations ------------------------------------------------

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
  let shownErrors = []; // the errors listed, for the tab's output
  function showErrors(errors) {
    shownErrors = errors || [];
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
    remember(op);
    if (op && op.kind === 'subscription') {
      eventList.setAttribute('aria-label', 'Subscription events');
      ($('transport').value === 'sse' ? subscribeSSE : subscribe)(request, headers);
      return;
    }
    setStatus('Running\u2026');
    const started = performance.now();
    let response, text;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', Accept: 'multipart/mixed;deferSpec=20220824, application/graphql-response+json, application/json;q=0.9' },
        body: JSON.stringify(request),
      });
      if (/^multipart\/mixed/.test(response.headers.get('Content-Type'))) {
        await showParts(response, started);
        return;
      }
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

  // ---- @defer and @stream: the parts of a multipart/mixed answer ---------

  // showParts shows each part of an incremental answer as it arrives, in the
  // event list, and the result merged so far in the result pane.
  async function showParts(response, started) {
    const boundary = /boundary="?([^";]+)"?/.exec(response.headers.get('Content-Type'))[1];
    const delimiter = `\r\n--${boundary}`;
    eventList.setAttribute('aria-label', 'Parts');
    eventList.hidden = false;
    let merged = null;
    let count = 0;
    let failed = false;
    let buffer = '';
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      for (let i; (i = buffer.indexOf(delimiter)) >= 0;) {
        const part = buffer.slice(0, i);
        buffer = buffer.slice(i + delimiter.length);
        const body = part.indexOf('\r\n\r\n');
        if (body < 0) continue; // the preamble
        const payload = JSON.parse(part.slice(body + 4));
        const errors = [...(payload.errors || []), ...(payload.incremental || []).flatMap((x) => x.errors || [])];
        failed ||= errors.length > 0;
        merged = mergePart(merged, payload);
        count++;
        addEvent(payload, errors.length > 0);
        showJSON(resultPane, merged);
        showErrors(merged.errors);
        setStatus(`${response.status} \u00b7 ${plural(count, 'part')}${payload.hasNext ? ' \u00b7 more to come\u2026' : ''}`, failed ? 'fail' : 'ok');
      }
    }
    const ms = Math.round(performance.now() - started);
    setStatus(`${response.status} \u00b7 ${plural(count, 'part')} \u00b7 ${ms} ms`, failed ? 'fail' : 'ok');
  }

  // mergePart adds a part of the 2022-08-24 incremental format to the result
  // so far: a deferred fragment's data into the object at its path, streamed
  // items onto the list at its path.
  function mergePart(merged, part) {
    if (!merged) {
      const { hasNext, ...initial } = part;
      return initial;
    }
    for (const inc of part.incremental || []) {
      if (inc.errors) merged.errors = [...(merged.errors || []), ...inc.errors];
      if (inc.items) {
        const list = inc.path.slice(0, -1).reduce((v, k) => v[k], merged.data);
        list.push(...inc.items);
      } else if (inc.data) {
        deepMerge(inc.path.reduce((v, k) => v[k], merged.data), inc.data);
      }
    }
    return merged;
  }

  function deepMerge(into, from) {
    for (const [k, v] of Object.entries(from)) {
      if (v && typeof v === 'object' && into[k] && typeof into[k] === 'object') deepMerge(into[k], v);
      else into[k] = v;
    }
  }

  // ---- Subscriptions over graphql-transport-ws ---------------------------

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

  // startSubscription shows sub as the running subscription and returns its
  // finish, which says how it ended and closes its transport with close.
  function startSubscription(sub, close) {
    resultPane.hidden = true;
    eventList.hidden = false;
    $('stop').hidden = false;
    subscription = sub;
    setStatus('Connecting\u2026');
    return (text, tone) => {
      if (sub.stopped) return;
      sub.stopped = true;
      setStatus(text, tone);
      if (subscription === sub) { subscription = null; $('stop').hidden = true; }
      close();
    };
  }

  function subscribe(request, headers) {
    const id = String(nextID++);
    const socket = new WebSocket(socketURL(), 'graphql-transport-ws');
    const sub = { socket, id, stopped: false, count: 0, pinged: false };
    const finish = startSubscription(sub, () => {
      if (socket.readyState <= WebSocket.OPEN) socket.close(1000, 'done');
    });
    const send = (msg) => socket.send(JSON.stringify(msg));
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

  // subscribeSSE runs a subscription over GraphQL over SSE (the graphql-sse
  // protocol's distinct connections mode): one streamed answer, a next event
  // per result, then complete.
  function subscribeSSE(request, headers) {
    const controller = new AbortController();
    const sub = { controller, stopped: false, count: 0 };
    const finish = startSubscription(sub, () => controller.abort());
    const onEvent = (block) => {
      let type = 'message';
      let json = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) json += line.slice(5).trim();
      }
      if (type === 'next') {
        const payload = JSON.parse(json);
        sub.count++;
        addEvent(payload, payload.errors);
        if (payload.errors) showErrors(payload.errors);
        setStatus(`Listening \u00b7 ${plural(sub.count, 'event')}`, 'ok');
      } else if (type === 'complete') {
        finish(`The server completed the subscription after ${plural(sub.count, 'event')}.`);
      }
    };
    (async () => {
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify(request),
        signal: controller.signal,
      });
      if (!res.ok || !/^text\/event-stream/.test(res.headers.get('Content-Type'))) {
        finish(`${res.status} ${res.statusText}: ${(await res.text()).slice(0, 200)}`, 'fail');
        return;
      }
      // The answer starts once the subscription has: from now on, events come.
      setStatus('Listening for events\u2026', 'ok');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        for (let i; (i = buffer.indexOf('\n\n')) >= 0;) {
          onEvent(buffer.slice(0, i));
          buffer = buffer.slice(i + 2);
        }
      }
      finish(`The stream ended after ${plural(sub.count, 'event')}.`);
    })().catch((err) => finish(`The stream failed: ${err.message}`, 'fail'));
  }

  function stopSubscription(text) {
    const sub = subscription;
    if (!sub) return;
    sub.stopped = true;
    if (sub.controller) {
      sub.controller.abort();
    } else {
      if (sub.socket.readyState === WebSocket.OPEN) sub.socket.send(JSON.stringify({ id: sub.id, type: 'complete' }));
      sub.socket.close(1000, 'stopped');
    }
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

  // ---- Schema explorer ---------------------------------------------------

  const INTROSPECTION_QUERY = `query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
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
    explorer.schema = {
      roots,
      types: new Map(s.types.map((t) => [t.name, t])),
      directives: s.directives || [],
      queryType: s.queryType && s.queryType.name,
      mutationType: s.mutationType && s.mutationType.name,
      subscriptionType: s.subscriptionType && s.subscriptionType.name,
    };
    renderExplorer();
  }

  function toggleExplorer(open) {
    const toggle = $('explorer-toggle');
    $('explorer').hidden = !open;
    $('layout').classList.toggle('with-explorer', open);
    toggle.setAttribute('aria-expanded', String(open));
    if (open) ensureSchema();
    if (open) searchBox.focus();
  }

  // ensureSchema loads the schema once, for the explorer and for
  // autocompletion alike; it resolves to null when the schema could not be
  // loaded.
  function ensureSchema() {
    if (explorer.schema) return Promise.resolve(explorer.schema);
    if (!explorer.loading) explorer.loading = loadSchema().finally(() => { explorer.loading = null; });
    return explorer.loading.then(() => explorer.schema);
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

  // fieldItem shows a field of owner; a field of an object or interface is
  // a button that puts it into the query (insertField).
  function fieldItem(owner, f, target) {
    const args = f.args && f.args.length ? ['(', f.args.map(inputValue), ')'] : [];
    const name = owner.kind === 'OBJECT' || owner.kind === 'INTERFACE'
      ? h('button', { type: 'button', className: 'field insert', title: `Insert ${f.name} into the query`, onclick: () => insertField(owner.name, f) }, f.name)
      : h('span', { className: 'field' }, f.name);
    return h('li', { className: f.name === target ? 'target' : '', id: 'field-' + f.name },
      h('div', { className: 'sig' }, name, ...args, h('span', { className: 'punct' }, ': '), typeRef(f.type)),
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
    if (t.fields && t.fields.length) parts.push(h('h4', {}, 'Fields'), h('ul', {}, t.fields.map((f) => fieldItem(t, f, targetField))));
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

  // ---- Click-to-insert from the explorer ---------------------------------

  // insertField puts a field of type owner into the query where it belongs:
  // at the end of a selection set of that type, the innermost one around the
  // caret or else the first in the document; for a root type with no such
  // set, in a new operation at the end. Required arguments come with a
  // placeholder of their type, selected so that typing replaces it; a field
  // of an object type comes with a selection (its id, or else its first
  // field without required arguments) so that the document stays valid.
  function insertField(owner, f) {
    const schema = explorer.schema;
    const ta = queryEditor.ta, doc = queryEditor.value;
    let definitions = [];
    if (doc.replace(/#[^\n]*/g, '').trim()) {
      try {
        definitions = parsed(doc);
      } catch (err) {
        setStatus(`${f.name} was not inserted: the query does not parse (${err.message}).`, 'fail');
        return;
      }
    }
    const caret = ta.selectionStart;
    const sets = selectionSetsOf(definitions, schema).filter((set) => set.type === owner);
    const set = sets.filter((x) => x.open < caret && caret <= x.close).pop() || sets[0];
    if (!set) {
      const root = [['query', schema.queryType], ['mutation', schema.mutationType], ['subscription', schema.subscriptionType]].find(([, n]) => n === owner);
      if (!root) {
        setStatus(`${f.name} was not inserted: no selection in the query is of type ${owner}.`, 'fail');
        return;
      }
      const sep = !doc ? '' : doc.endsWith('\n\n') ? '' : doc.endsWith('\n') ? '\n' : '\n\n';
      const head = sep + (root[0] === 'query' ? '{' : `${root[0]} {`) + '\n  ';
      const field = fieldText(schema, f, '  ');
      ta.setSelectionRange(doc.length, doc.length);
      return placeField(head + field.text + '\n}\n', head.length, field);
    }
    const already = set.selections.find((x) => x.kind === 'Field' && x.name.value === f.name);
    if (already) {
      ta.focus();
      ta.setSelectionRange(already.name.start, already.name.end);
      setStatus(`${f.name} is already selected there.`);
      return;
    }
    const lineStart = doc.lastIndexOf('\n', set.close - 1) + 1;
    if (!doc.slice(lineStart, set.close).trim()) {
      // The "}" on a line of its own: a line before it, a level further in.
      const indent = doc.slice(lineStart, set.close) + '  ';
      const field = fieldText(schema, f, indent);
      ta.setSelectionRange(lineStart, lineStart);
      return placeField(indent + field.text + '\n', indent.length, field);
    }
    // A set on one line, "{ id }": the field goes after the last one.
    let at = set.close;
    while (/\s/.test(doc[at - 1])) at--;
    const field = fieldText(schema, f, null);
    ta.setSelectionRange(at, at);
    placeField(' ' + field.text, 1, field);
  }

  // placeField inserts text at the caret as one edit, then selects the
  // field's first placeholder, or puts the caret after the field.
  function placeField(text, fieldAt, field) {
    const at = queryEditor.ta.selectionStart + fieldAt;
    queryEditor.insert(text);
    const [from, to] = field.placeholder || [field.text.length, field.text.length];
    queryEditor.ta.setSelectionRange(at + from, at + to);
    queryEditor.ta.focus();
    setStatus(`Inserted ${field.name}.`);
  }

  // fieldText is the text of a field: its required arguments with
  // placeholders, and a selection when its type has fields; on several
  // lines indented from indent, or on one line when indent is null.
  function fieldText(schema, f, indent) {
    const required = (f.args || []).filter((a) => a.type.kind === 'NON_NULL' && a.defaultValue == null);
    let text = f.name, placeholder = null;
    if (required.length) {
      text += '(';
      required.forEach((a, i) => {
        const value = placeholderFor(schema, a.type);
        text += `${i ? ', ' : ''}${a.name}: `;
        if (!placeholder) placeholder = [text.length, text.length + value.length];
        text += value;
      });
      text += ')';
    }
    const inner = schema.types.get(namedType(f.type));
    if (inner && /^(OBJECT|INTERFACE|UNION)$/.test(inner.kind)) {
      const leaf = (inner.fields || []).find((x) => x.name === 'id') ||
        (inner.fields || []).find((x) => !(x.args || []).some((a) => a.type.kind === 'NON_NULL') && /^(SCALAR|ENUM)$/.test((schema.types.get(namedType(x.type)) || {}).kind));
      const sub = leaf ? leaf.name : '__typename';
      text += indent === null ? ` { ${sub} }` : ` {\n${indent}  ${sub}\n${indent}}`;
    }
    return { name: f.name, text, placeholder };
  }

  // placeholderFor is a literal of the type ref, the simplest one.
  function placeholderFor(schema, ref) {
    const t = nullable(ref);
    if (t.kind === 'LIST') return '[]';
    const named = schema.types.get(t.name);
    if (named && named.kind === 'ENUM' && named.enumValues && named.enumValues.length) return named.enumValues[0].name;
    if (named && named.kind === 'INPUT_OBJECT') return '{}';
    return { Int: '0', Float: '0', Boolean: 'false' }[t.name] || '""';
  }

  // selectionSetsOf lists the selection sets of a parsed document with the
  // type each selects from and the offsets of its braces.
  function selectionSetsOf(definitions, schema) {
    const out = [];
    const walk = (set, type) => {
      out.push({ type, open: set.token.start, close: set.end.start, selections: set.selections });
      for (const x of set.selections) {
        if (x.kind === 'Inline') walk(x.selectionSet, x.on ? x.on.value : type);
        else if (x.kind === 'Field' && x.selectionSet) {
          const def = fieldsOf(schema, type).find((d) => d.name === x.name.value);
          walk(x.selectionSet, def ? namedType(def.type) : '');
        }
      }
    };
    for (const d of definitions) walk(d.selectionSet, d.kind === 'fragment' ? d.on.value : schema[`${d.kind}Type`]);
    return out;
  }

  // ---- Prettify ----------------------------------------------------------

  // The server has no document printer; its one printer is for literals
  // (printLiteral in graphql/introspection.go, the form of a default value:
  // [1, 2], {a: 1}). prettify prints values that way and the rest the way
  // graphql-js's print does: two-space indent, one selection a line, a blank
  // line between definitions, an anonymous query as "{". Unlike print it
  // keeps comments, each on a line of its own before what it preceded; and
  // strings stay as typed. A document that does not parse is left alone.
  function prettify(src) {
    const toks = tokenizeGraphQL(src).filter((t) => t.kind !== 'space');
    const lines = [];
    let i = 0, comments = [];
    const fail = (what) => {
      const t = toks[i];
      const at = t ? t.start : src.length;
      const line = src.slice(0, at).split('\n').length;
      const why = t ? `${what}, found "${t.text}"` : 'the document ends too soon';
      throw new SyntaxError(`Cannot prettify: ${why} at ${line}:${at - src.lastIndexOf('\n', at - 1)}.`);
    };
    const peek = () => {
      while (toks[i] && toks[i].kind === 'comment') comments.push(toks[i++].text);
      return toks[i];
    };
    const at = (text) => { const t = peek(); return !!t && t.text === text; };
    const next = () => { const t = peek(); if (!t) fail('more'); i++; return t.text; };
    const expect = (text) => { if (!at(text)) fail(`expected "${text}"`); return next(); };
    const name = () => { const t = peek(); if (!t || !/^[_A-Za-z]/.test(t.text)) fail('expected a name'); return next(); };
    const emit = (depth, text) => {
      for (const c of comments) lines.push('  '.repeat(depth) + c);
      comments = [];
      lines.push('  '.repeat(depth) + text);
    };

    function value() {
      if (at('[')) {
        next();
        const items = [];
        while (!at(']')) items.push(value());
        next();
        return `[${items.join(', ')}]`;
      }
      if (at('{')) {
        next();
        const fields = [];
        while (!at('}')) fields.push(`${name()}: ${(expect(':'), value())}`);
        next();
        return `{${fields.join(', ')}}`;
      }
      const t = peek();
      if (!t || !/^(variable|number|string|name|atom|attr|type|keyword|def)$/.test(t.kind)) fail('expected a value');
      return next();
    }
    const args = () => {
      if (!at('(')) return '';
      next();
      const list = [];
      while (!at(')')) list.push(`${name()}: ${(expect(':'), value())}`);
      next();
      return `(${list.join(', ')})`;
    };
    const directives = () => {
      let out = '';
      while (peek() && peek().kind === 'directive') out += ` ${next()}${args()}`;
      return out;
    };
    function type() {
      let out;
      if (at('[')) { next(); out = `[${type()}]`; expect(']'); } else out = name();
      if (at('!')) out += next();
      return out;
    }
    const variables = () => {
      if (!at('(')) return '';
      next();
      const list = [];
      while (!at(')')) {
        const t = peek();
        if (!t || t.kind !== 'variable') fail('expected a variable');
        let v = `${next()}: ${(expect(':'), type())}`;
        if (at('=')) { next(); v += ` = ${value()}`; }
        list.push(v + directives());
      }
      next();
      return `(${list.join(', ')})`;
    };
    // selectionSet prints "head {", the selections a level in, then "}".
    function selectionSet(depth, head) {
      expect('{');
      emit(depth, head + '{');
      while (!at('}')) selection(depth + 1);
      next();
      emit(depth, '}');
    }
    function selection(depth) {
      if (at('...')) {
        next();
        if (at('on')) { next(); const on = name(); return selectionSet(depth, `... on ${on}${directives()} `); }
        if (at('{') || (peek() && peek().kind === 'directive')) return selectionSet(depth, `...${directives()} `);
        return emit(depth, `...${name()}${directives()}`);
      }
      let field = name();
      if (at(':')) { next(); field += `: ${name()}`; }
      field += args() + directives();
      if (at('{')) selectionSet(depth, field + ' ');
      else emit(depth, field);
    }
    function definition() {
      if (at('{')) return selectionSet(0, '');
      const kind = next();
      if (kind === 'fragment') {
        const fragment = name();
        expect('on');
        return selectionSet(0, `fragment ${fragment} on ${name()}${directives()} `);
      }
      if (!/^(query|mutation|subscription)$/.test(kind)) { i--; fail('expected a definition'); }
      const t = peek();
      const opName = t && /^[_A-Za-z]/.test(t.text) ? next() : '';
      // As graphql-js: "query Q($id: Int)" but "query ($id: Int)".
      const vars = variables();
      const head = kind + (opName || vars ? ' ' : '') + opName + vars + directives();
      selectionSet(0, head === 'query' ? '' : head + ' ');
    }

    while (peek()) {
      if (lines.length) lines.push('');
      definition();
    }
    for (const c of comments) lines.push(c);
    return lines.join('\n') + '\n';
  }

  function prettifyQuery() {
    let pretty;
    try {
      pretty = prettify(queryEditor.value);
    } catch (err) {
      setStatus(err.message, 'fail');
      return;
    }
    queryEditor.replaceAll(pretty);
  }

  $('prettify').addEventListener('click', prettifyQuery);
  document.addEventListener('keydown', (e) => {
    if ((e.ctrlKey || e.metaKey) && e.shiftKey && e.key.toLowerCase() === 'p') {
      e.preventDefault();
      prettifyQuery();
    }
  });

  // ---- Autocompletion: what may come at the caret ------------------------

  // Which suggestions belong where follows graphql-language-service (the
  // engine of GraphiQL): fields of the parent type in a selection set,
  // arguments inside "(", enum values and input fields in values, directives
  // after "@", the operation's variables after "$", fragment names after
  // "...", types after "on" and in variable definitions.

  const META_STRING = { kind: 'NON_NULL', ofType: { kind: 'SCALAR', name: 'String' } };
  const TYPENAME_FIELD = { name: '__typename', description: 'The name of the object type.', args: [], type: META_STRING };
  const ROOT_META_FIELDS = [
    { name: '__schema', description: 'The schema, by introspection.', args: [], type: { kind: 'NON_NULL', ofType: { kind: 'OBJECT', name: '__Schema' } } },
    { name: '__type', description: 'A type, by introspection.', args: [{ name: 'name', type: META_STRING }], type: { kind: 'OBJECT', name: '__Type' } },
  ];

  const namedType = (ref) => (ref && ref.ofType ? namedType(ref.ofType) : ref && ref.name);
  const typeString = (ref) => ref.kind === 'NON_NULL' ? typeString(ref.ofType) + '!' : ref.kind === 'LIST' ? `[${typeString(ref.ofType)}]` : ref.name;
  const nullable = (ref) => (ref && ref.kind === 'NON_NULL' ? ref.ofType : ref);
  const firstLine = (d) => (d || '').split('\n')[0];

  // fieldsOf lists the fields one may select on a type, the meta fields
  // included.
  function fieldsOf(schema, typeName) {
    const t = schema.types.get(typeName);
    if (!t) return [];
    const own = t.kind === 'UNION' ? [] : t.fields || [];
    return [...own, TYPENAME_FIELD, ...(typeName === schema.queryType ? ROOT_META_FIELDS : [])];
  }

  // objectTypes is the set of object types a composite type may be; two
  // types overlap, for a fragment spread, when their sets meet.
  function objectTypes(schema, typeName) {
    const t = schema.types.get(typeName);
    if (!t) return new Set();
    if (t.kind === 'OBJECT') return new Set([t.name]);
    return new Set((t.possibleTypes || []).map((p) => p.name));
  }

  // fragmentsIn lists the fragment definitions of a document: name and type
  // condition.
  function fragmentsIn(src) {
    const toks = tokensOf(src).filter((t) => t.kind !== 'space' && t.kind !== 'comment');
    const out = [];
    toks.forEach((t, i) => {
      if (t.kind === 'keyword' && t.text === 'fragment' && toks[i + 1] && toks[i + 3] && toks[i + 2].text === 'on') {
        out.push({ name: toks[i + 1].text, on: toks[i + 3].text });
      }
    });
    return out;
  }

  // completionContext reads the document up to the caret and says what is
  // being typed there: {from, word, want, ...}, or null where nothing can be
  // suggested (in a comment or a string). It keeps a stack of the open
  // selection sets, argument lists, input objects and lists, each knowing
  // its type from the schema.
  function completionContext(src, caret, schema) {
    const before = src.slice(0, caret);
    const word = /[$@]?[_A-Za-z0-9]*$/.exec(before)[0];
    const from = caret - word.length;
    const all = tokenizeGraphQL(before);
    const lastTok = all[all.length - 1];
    if (lastTok && (lastTok.kind === 'comment' || lastTok.kind === 'string') && lastTok.start + lastTok.text.length === caret) return null;
    const toks = all.filter((t) => t.start < from && t.kind !== 'space' && t.kind !== 'comment');

    const stack = [];
    const top = () => stack[stack.length - 1];
    let op = null; // {kind, vars: Map name -> type text}
    let definition = null; // 'operation' or 'fragment' while at the top level
    let pendingType = null; // the type the next "{" opens
    let field = null; // the field just named in a selection set
    let directive = null; // the directive just named
    let location = null; // where a directive would go
    let variable = null; // the variable being defined, {name, type}
    const argsOf = (defs, close) => ({ kind: 'args', defs: defs || [], close, expect: 'name', current: null, given: new Set() });
    // valueDone: a value ended, so an argument list or object expects a name.
    const valueDone = () => { const f = top(); if (f && f.kind === 'args') f.expect = 'name'; };

    for (let i = 0; i < toks.length; i++) {
      const t = toks[i], text = t.text, prev = toks[i - 1], next = toks[i + 1];
      const f = top();
      if (!f) {
        // The top level: definitions and their headers.
        if (t.kind === 'keyword' && text !== 'fragment' && text !== 'on') {
          op = { kind: text, vars: new Map() };
          definition = 'operation';
          pendingType = schema[text + 'Type'];
          location = text.toUpperCase();
        } else if (text === 'fragment') {
          op = null;
          definition = 'fragment';
          pendingType = null;
          location = 'FRAGMENT_DEFINITION';
        } else if (prev && prev.text === 'on' && definition === 'fragment') {
          pendingType = text;
        } else if (text === '(' && definition === 'operation') {
          stack.push({ kind: 'variables', expect: 'name' });
        } else if (text === '{') {
          if (!definition) {
            op = { kind: 'query', vars: new Map() };
            pendingType = schema.queryType;
          }
          stack.push({ kind: 'selection', type: pendingType });
          field = null;
        }
        continue;
      }
      if (f.kind === 'variables') {
        if (t.kind === 'variable') {
          variable = { name: text, type: '' };
          f.expect = 'colon';
        } else if (text === ':' && variable) f.expect = 'type';
        else if (f.expect === 'type' && (t.kind === 'type' || t.kind === 'name' || /^[[\]!]$/.test(text))) {
          variable.type += text;
          op.vars.set(variable.name, variable.type);
        } else if (text === '=') f.expect = 'value';
        else if (text === ')') stack.pop();
        continue;
      }
      if (f.kind === 'selection') {
        if (text === '}') {
          stack.pop();
          if (!stack.length) definition = null;
          field = null;
        } else if (text === '{') {
          const type = field ? namedType(field.type) : pendingType;
          stack.push({ kind: 'selection', type });
          field = null;
        } else if (text === '(') {
          const owner = prev && prev.kind === 'directive' ? directive : field;
          stack.push(argsOf(owner && owner.args, ')'));
        } else if (t.kind === 'directive') {
          directive = schema.directives.find((d) => '@' + d.name === text) || null;
        } else if (text === '...') {
          // An inline fragment without "on" is of the parent type.
          field = null;
          pendingType = f.type;
        } else if (prev && prev.text === 'on' && toks[i - 2] && toks[i - 2].text === '...') {
          pendingType = text;
          location = 'INLINE_FRAGMENT';
        } else if (prev && prev.text === '...' && text !== 'on') {
          location = 'FRAGMENT_SPREAD';
        } else if ((t.kind === 'name' || t.kind === 'attr' || t.kind === 'keyword' || t.kind === 'def' || t.kind === 'type') && text !== 'on' && !(next && next.text === ':')) {
          field = fieldsOf(schema, f.type).find((x) => x.name === text) || null;
          location = 'FIELD';
        }
        continue;
      }
      // Argument lists, input objects and lists: values.
      if (text === f.close) {
        stack.pop();
        valueDone();
        continue;
      }
      if (f.kind === 'args' && f.expect === 'name') {
        if (text === ':') f.expect = 'value';
        else {
          f.current = f.defs.find((d) => d.name === text) || null;
          f.given.add(text);
        }
        continue;
      }
      const valueType = f.kind === 'list' ? f.item : f.current && f.current.type;
      if (text === '[') {
        stack.push({ kind: 'list', close: ']', item: nullable(valueType) && nullable(valueType).ofType });
      } else if (text === '{') {
        const input = schema.types.get(namedType(valueType));
        stack.push(argsOf(input && input.inputFields, '}'));
      } else if (f.kind === 'args') {
        f.expect = 'name';
      }
    }

    const f = top();
    const prev = toks[toks.length - 1];
    const base = { from, word, caret };
    if (word.startsWith('@')) return { ...base, want: 'directives', location: f && f.kind === 'selection' ? location : !f ? location : 'VARIABLE_DEFINITION' };
    if (word.startsWith('$')) {
      return f && f.kind !== 'selection' && f.kind !== 'variables' ? { ...base, want: 'variables', vars: op ? op.vars : new Map() } : null;
    }
    if (!f) {
      if (prev && prev.text === 'on' && definition === 'fragment') return { ...base, want: 'types', filter: 'composite' };
      if (!prev || prev.text === '}') return { ...base, want: 'keywords' };
      return null;
    }
    if (f.kind === 'variables') return f.expect === 'type' ? { ...base, want: 'types', filter: 'input' } : null;
    if (f.kind === 'selection') {
      if (prev && prev.text === '...') return { ...base, want: 'spread', type: f.type, fragments: fragmentsIn(src) };
      if (prev && prev.text === 'on') return { ...base, want: 'types', filter: 'possible', type: f.type };
      return { ...base, want: 'fields', type: f.type };
    }
    if (f.kind === 'args' && f.expect === 'name') {
      return { ...base, want: f.close === ')' ? 'arguments' : 'inputFields', defs: f.defs.filter((d) => !f.given.has(d.name)) };
    }
    return { ...base, want: 'values', type: f.kind === 'list' ? f.item : f.current && f.current.type };
  }

  // suggestionsFor turns a context into items {label, detail, doc}, the
  // ones that start with the word typed first, then those that contain it.
  function suggestionsFor(ctx, schema) {
    const item = (label, detail, doc) => ({ label, detail: detail || '', doc: firstLine(doc) });
    const userTypes = () => [...schema.types.values()].filter((t) => !t.name.startsWith('__'));
    let items = [];
    switch (ctx.want) {
      case 'keywords':
        items = [['query', schema.queryType], ['mutation', schema.mutationType], ['subscription', schema.subscriptionType], ['fragment', true]]
          .filter(([, ok]) => ok).map(([k]) => item(k, 'keyword'));
        break;
      case 'fields':
        items = fieldsOf(schema, ctx.type).map((x) => item(x.name, typeString(x.type), x.description));
        break;
      case 'arguments':
      case 'inputFields':
        items = ctx.defs.map((d) => item(d.name, typeString(d.type), d.description));
        break;
      case 'values': {
        const t = schema.types.get(namedType(ctx.type));
        if (t && t.kind === 'ENUM') items = t.enumValues.map((v) => item(v.name, t.name, v.description));
        else if (t && t.name === 'Boolean') items = [item('true', 'Boolean'), item('false', 'Boolean')];
        break;
      }
      case 'variables':
        items = [...ctx.vars].map(([name, type]) => item(name, type));
        break;
      case 'directives':
        items = schema.directives.filter((d) => !ctx.location || d.locations.includes(ctx.location))
          .map((d) => item('@' + d.name, 'directive', d.description));
        break;
      case 'spread': {
        const mine = objectTypes(schema, ctx.type);
        items = ctx.fragments.filter((fr) => !ctx.type || [...objectTypes(schema, fr.on)].some((n) => mine.has(n)))
          .map((fr) => item(fr.name, `on ${fr.on}`, 'fragment'));
        items.push(item('on', 'inline fragment'));
        break;
      }
      case 'types': {
        let types = userTypes();
        if (ctx.filter === 'input') types = types.filter((t) => /^(SCALAR|ENUM|INPUT_OBJECT)$/.test(t.kind));
        else types = types.filter((t) => /^(OBJECT|INTERFACE|UNION)$/.test(t.kind));
        if (ctx.filter === 'possible' && schema.types.has(ctx.type)) {
          const mine = objectTypes(schema, ctx.type);
          types = types.filter((t) => t.name === ctx.type || [...objectTypes(schema, t.name)].some((n) => mine.has(n)));
        }
        items = types.map((t) => item(t.name, kindName(t.kind), t.description));
        break;
      }
    }
    const typed = ctx.word.replace(/^[$@]/, '').toLowerCase();
    const bare = (label) => label.replace(/^[$@]/, '').toLowerCase();
    const starts = items.filter((x) => bare(x.label).startsWith(typed));
    const contains = items.filter((x) => !bare(x.label).startsWith(typed) && bare(x.label).includes(typed));
    // The word typed in full comes first, so that a shorter name is never
    // swapped for a longer one by accident.
    starts.sort((a, b) => (bare(b.label) === typed) - (bare(a.label) === typed));
    return [...starts, ...contains];
  }

  // ---- Autocompletion: the list under the caret --------------------------

  const completionList = $('completions');
  const completion = { items: [], active: 0, ctx: null, accepting: false };

  function closeCompletions() {
    completion.items = [];
    completion.ctx = null;
    completionList.hidden = true;
    queryEditor.ta.removeAttribute('aria-activedescendant');
  }

  // caretPoint is where the caret is drawn, in viewport pixels: the editor
  // is monospaced, so a line and a column make a point.
  function caretPoint(pos) {
    const ta = queryEditor.ta;
    const cs = getComputedStyle(ta);
    const before = ta.value.slice(0, pos).split('\n');
    const measure = caretPoint.canvas || (caretPoint.canvas = document.createElement('canvas').getContext('2d'));
    measure.font = `${cs.fontSize} ${cs.fontFamily}`;
    const charWidth = measure.measureText('0000000000').width / 10;
    const lineHeight = parseFloat(cs.lineHeight);
    const box = ta.getBoundingClientRect();
    return {
      x: box.left + parseFloat(cs.paddingLeft) + before[before.length - 1].length * charWidth - ta.scrollLeft,
      y: box.top + parseFloat(cs.paddingTop) + before.length * lineHeight - ta.scrollTop,
    };
  }

  function renderCompletions() {
    completionList.replaceChildren(...completion.items.map((it, i) => h('li', {
      id: `completion-${i}`,
      role: 'option',
      className: 'completion',
      'aria-selected': String(i === completion.active),
      // mousedown, not click: the editor keeps its focus.
      onmousedown: (e) => { e.preventDefault(); completion.active = i; acceptCompletion(); },
    }, h('span', { className: 'c-label' }, it.label), h('span', { className: 'c-detail' }, it.detail), it.doc ? h('span', { className: 'c-doc' }, it.doc) : null)));
    const ta = queryEditor.ta;
    ta.setAttribute('aria-activedescendant', `completion-${completion.active}`);
    const at = caretPoint(completion.ctx.from);
    completionList.hidden = false;
    completionList.style.left = `${Math.max(0, Math.min(at.x, window.innerWidth - completionList.offsetWidth - 8))}px`;
    completionList.style.top = `${at.y}px`;
    const active = completionList.children[completion.active];
    if (active) active.scrollIntoView({ block: 'nearest' });
  }

  // updateCompletions shows what fits the caret, loading the schema first
  // when it is not there yet.
  async function updateCompletions() {
    const schema = explorer.schema || (await ensureSchema());
    const ta = queryEditor.ta;
    if (!schema || document.activeElement !== ta || ta.selectionStart !== ta.selectionEnd) return closeCompletions();
    const ctx = completionContext(ta.value, ta.selectionStart, schema);
    const items = ctx ? suggestionsFor(ctx, schema) : [];
    // A word typed in full with nothing else to offer needs no list.
    if (!items.length || (items.length === 1 && items[0].label === ctx.word)) return closeCompletions();
    completion.items = items.slice(0, 50);
    completion.active = 0;
    completion.ctx = ctx;
    renderCompletions();
  }

  function acceptCompletion() {
    const it = completion.items[completion.active];
    const ctx = completion.ctx;
    closeCompletions();
    if (!it) return;
    // The whole word under the caret is replaced, also its part after it.
    const ta = queryEditor.ta;
    const rest = /^[_A-Za-z0-9]*/.exec(ta.value.slice(ctx.caret))[0];
    ta.setSelectionRange(ctx.from, ctx.caret + rest.length);
    completion.accepting = true;
    try {
      queryEditor.insert(it.label);
    } finally {
      completion.accepting = false;
    }
  }

  // Typing a name, "$", "@", "...", "(" or ":" opens the list; Ctrl+Space
  // opens it anywhere. "{" does not: Enter after it is a new line.
  queryEditor.ta.addEventListener('input', (e) => {
    if (completion.accepting) return;
    const ta = queryEditor.ta;
    // "(" typed comes as "()" when it closes itself, the caret put between
    // the two once this event is over.
    if (e.inputType === 'insertText' && e.data === '()') return void queueMicrotask(updateCompletions);
    const opens = /[_A-Za-z0-9$@(:]$/.test(e.data || '') || (e.data === '.' && ta.value.slice(0, ta.selectionStart).endsWith('...'));
    if (e.inputType === 'insertText' && opens) updateCompletions();
    else if (completion.ctx && e.inputType && e.inputType.startsWith('delete')) updateCompletions();
    else closeCompletions();
  });
  queryEditor.ta.addEventListener('blur', closeCompletions);
  queryEditor.ta.addEventListener('mousedown', closeCompletions);
  // Typing near an edge scrolls the text: the list follows the caret.
  queryEditor.ta.addEventListener('scroll', () => { if (!completionList.hidden) renderCompletions(); });
  queryEditor.ta.setAttribute('aria-autocomplete', 'list');
  queryEditor.ta.setAttribute('aria-controls', 'completions');

  queryEditor.keyHook = (e) => {
    if (e.key === ' ' && e.ctrlKey) {
      e.preventDefault();
      updateCompletions();
      return true;
    }
    if (completionList.hidden) return false;
    // A closer typed may step over the one the editor put in, moving the
    // caret out of the word without an edit.
    if (/^[)\]}"]$/.test(e.key)) {
      closeCompletions();
      return false;
    }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      closeCompletions(); // and the operation runs
      return false;
    }
    const n = completion.items.length;
    const move = { ArrowDown: 1, ArrowUp: -1, PageDown: 8, PageUp: -8 }[e.key];
    if (move && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      completion.active = (completion.active + move % n + n) % n;
      renderCompletions();
      return true;
    }
    if ((e.key === 'Enter' || e.key === 'Tab') && !e.ctrlKey && !e.metaKey && !e.altKey && !e.shiftKey) {
      // Enter on the word already typed in full is a new line, as without
      // the list; Tab still accepts.
      if (e.key === 'Enter' && completion.items[completion.active].label === completion.ctx.word) {
        closeCompletions();
        return false;
      }
      e.preventDefault();
      acceptCompletion();
      return true;
    }
    if (e.key === 'Escape') {
      e.preventDefault();
      closeCompletions();
      return true;
    }
    // Any other key that moves the caret leaves the word.
    if (/^(ArrowLeft|ArrowRight|Home|End)$/.test(e.key)) closeCompletions();
    return false;
  };

  // ---- Lint --------------------------------------------------------------

  // The document is parsed and validated on every keystroke, the way the
  // server would, so that a mistake is underlined before it is sent. The
  // messages are the server's own words (graphql/parser.go, rules.go,
  // values.go): a reader who sees one here sees the same one in a response.
  // Only what a client can know from introspection is checked: syntax,
  // unknown types, fields and arguments, missing required arguments, literals
  // of the wrong type and undefined variables.

  // lintTokens turns the highlighter's tokens into the server lexer's:
  // "$name" and "@name" are two tokens there, and numbers are Int or Float.
  // Each highlighter token keeps its server tokens (t.lint), which
  // retokenize moves with it: a keystroke converts only the tokens it made.
  function lintTokens(tokens) {
    const out = [];
    for (const t of tokens) {
      if (t.raw === 'space' || t.raw === 'comment') continue;
      if (!t.lint) t.lint = serverTokens(t);
      for (const l of t.lint) {
        out.push(l);
        if (l.kind === 'error') return out;
      }
    }
    return out;
  }

  function serverTokens(t) {
    const out = [];
    const at = (kind, text, start, value) => out.push({ kind, text, start, end: start + text.length, value });
    switch (t.raw) {
      case 'variable': case 'directive':
        at(t.text[0], t.text[0], t.start);
        at('Name', t.text.slice(1), t.start + 1, t.text.slice(1));
        break;
      case 'number': at(/[.eE]/.test(t.text) ? 'Float' : 'Int', t.text, t.start, t.text); break;
      case 'string': {
        const block = t.text.startsWith('"""');
        if (block ? !/.{3}"""$/s.test(t.text) : !/^".*"$/s.test(t.text) || t.text.length < 2) {
          out.push({ kind: 'error', message: 'Unterminated string.', start: t.start + t.text.length, end: t.start + t.text.length });
          break;
        }
        let value = t.text.slice(block ? 3 : 1, block ? -3 : -1);
        if (!block) try { value = JSON.parse(t.text); } catch { /* shown as typed */ }
        at(block ? 'BlockString' : 'String', t.text, t.start, value);
        break;
      }
      case 'invalid':
        out.push({ kind: 'error', message: `Unexpected character ${JSON.stringify(t.text)}.`, start: t.start, end: t.start + 1 });
        break;
      case 'punct': at(t.text, t.text, t.start); break;
      default: at('Name', t.text, t.start, t.text); // names, keywords, atoms
    }
    return out;
  }

  // describeToken names a token as the server's syntax errors do.
  function describeToken(t) {
    if (!t) return '<EOF>';
    if (t.kind === 'Name' || t.kind === 'Int' || t.kind === 'Float') return `${t.kind} "${t.value}"`;
    if (t.kind === 'String' || t.kind === 'BlockString') return `${t.kind} ${JSON.stringify(t.value)}`;
    return `"${t.kind}"`;
  }

  class SyntaxProblem {
    constructor(message, start, end) { Object.assign(this, { message: `Syntax Error: ${message}`, start, end }); }
  }

  // parseDocument is a port of the executable part of graphql/parser.go: it
  // throws a SyntaxProblem at the first error, as the server stops there.
  function parseDocument(src, tokens) {
    const toks = lintTokens(tokens);
    const lexError = toks.length && toks[toks.length - 1].kind === 'error' ? toks.pop() : null;
    let i = 0;
    const peek = (kind) => i < toks.length && toks[i].kind === kind;
    const peekName = (name) => peek('Name') && toks[i].value === name;
    const fail = (msg) => {
      if (i >= toks.length && lexError) throw new SyntaxProblem(lexError.message, lexError.start, lexError.end);
      const t = toks[i];
      throw new SyntaxProblem(msg, t ? t.start : src.length, t ? t.end : src.length);
    };
    const unexpected = () => fail(i < toks.length ? `Unexpected ${describeToken(toks[i])}.` : 'Unexpected <EOF>.');
    const expect = (kind) => {
      if (!peek(kind)) fail(`Expected ${kind.length === 1 || kind === '...' ? `"${kind}"` : kind}, found ${describeToken(toks[i])}.`);
      return toks[i++];
    };
    const skip = (kind) => peek(kind) && ++i;
    const closes = (kind) => skip(kind) || (i >= toks.length && expect(kind));

    function typeRef() {
      if (skip('[')) {
        const t = { kind: 'LIST', ofType: typeRef() };
        expect(']');
        return skip('!') ? { kind: 'NON_NULL', ofType: t } : t;
      }
      const name = expect('Name');
      const t = { kind: 'NAMED', name: name.value, token: name };
      return skip('!') ? { kind: 'NON_NULL', ofType: t } : t;
    }
    function value(isConst) {
      const t = toks[i];
      if (!t) unexpected();
      if (skip('[')) {
        const list = [];
        while (!skip(']') && i < toks.length) list.push(value(isConst));
        if (i >= toks.length && toks[i - 1].kind !== ']') unexpected();
        return { kind: 'List', list, token: t };
      }
      if (skip('{')) {
        const fields = [];
        while (!skip('}') && i < toks.length) {
          const name = expect('Name');
          expect(':');
          fields.push({ name, value: value(isConst) });
        }
        if (i >= toks.length && toks[i - 1].kind !== '}') unexpected();
        return { kind: 'Object', fields, token: t };
      }
      if (t.kind === '$') {
        i++;
        if (isConst) {
          if (peek('Name')) throw new SyntaxProblem(`Unexpected variable "$${toks[i].value}" in constant value.`, t.start, toks[i].end);
          unexpected();
        }
        return { kind: 'Variable', name: expect('Name'), token: t };
      }
      i++;
      if (t.kind === 'Name') return { kind: t.value === 'true' || t.value === 'false' ? 'Boolean' : t.value === 'null' ? 'Null' : 'Enum', token: t };
      if (t.kind === 'Int' || t.kind === 'Float' || t.kind === 'String' || t.kind === 'BlockString') return { kind: t.kind === 'BlockString' ? 'String' : t.kind, token: t };
      i--;
      return unexpected();
    }
    function args(isConst) {
      const list = [];
      if (!skip('(')) return list;
      do {
        const name = expect('Name');
        expect(':');
        list.push({ name, value: value(isConst) });
      } while (!closes(')'));
      return list;
    }
    function directives(isConst) {
      const list = [];
      while (skip('@')) list.push({ name: expect('Name'), args: args(isConst) });
      return list;
    }
    function selectionSet() {
      const set = { token: expect('{'), selections: [] };
      do set.selections.push(selection()); while (!closes('}'));
      set.end = toks[i - 1];
      return set;
    }
    function selection() {
      if (peek('...')) {
        const start = toks[i++];
        if (peek('Name') && toks[i].value !== 'on') return { kind: 'Spread', name: expect('Name'), directives: directives(false), token: start };
        const f = { kind: 'Inline', token: start };
        if (peekName('on')) { i++; f.on = expect('Name'); }
        f.directives = directives(false);
        f.selectionSet = selectionSet();
        return f;
      }
      const f = { kind: 'Field', token: toks[i], name: expect('Name') };
      if (skip(':')) f.name = expect('Name');
      f.args = args(false);
      f.directives = directives(false);
      if (peek('{')) f.selectionSet = selectionSet();
      return f;
    }
    function operation() {
      const op = { kind: 'query', token: toks[i], variables: [] };
      if (!peek('{')) {
        op.kind = toks[i++].value;
        if (peek('Name')) op.name = expect('Name').value;
        if (skip('(')) {
          do {
            const token = expect('$');
            const v = { token, name: expect('Name') };
            expect(':');
            v.type = typeRef();
            if (skip('=')) v.defaultValue = value(true);
            v.directives = directives(true);
            op.variables.push(v);
          } while (!closes(')'));
        }
        op.directives = directives(false);
      }
      op.selectionSet = selectionSet();
      return op;
    }
    function fragment() {
      const f = { kind: 'fragment', token: toks[i++] };
      if (peekName('on')) unexpected();
      f.name = expect('Name');
      if (!peekName('on')) fail(`Expected "on", found ${describeToken(toks[i])}.`);
      i++;
      f.on = expect('Name');
      f.directives = directives(false);
      f.selectionSet = selectionSet();
      return f;
    }

    const definitions = [];
    if (!toks.length) unexpected();
    while (i < toks.length) {
      if (peek('{') || peekName('query') || peekName('mutation') || peekName('subscription')) definitions.push(operation());
      else if (peekName('fragment')) definitions.push(fragment());
      else unexpected();
    }
    if (lexError) throw new SyntaxProblem(lexError.message, lexError.start, lexError.end);
    return definitions;
  }

  // printLiteral prints a value as the server's messages quote it
  // (graphql/introspection.go printLiteral).
  function printLiteral(v) {
    switch (v.kind) {
      case 'String': return JSON.stringify(v.token.value);
      case 'List': return `[${v.list.map(printLiteral).join(', ')}]`;
      case 'Object': return `{${v.fields.map((f) => `${f.name.value}: ${printLiteral(f.value)}`).join(', ')}}`;
      case 'Variable': return `$${v.name.value}`;
      default: return v.token.value;
    }
  }

  // leafProblem is why the literal v does not fit the leaf type named t
  // (graphql/rules.go parseLiteral), or '' when it fits.
  function leafProblem(v, t) {
    const found = printLiteral(v);
    if (t.kind === 'ENUM') {
      if (v.kind !== 'Enum') return `Enum "${t.name}" cannot represent non-enum value: ${found}.`;
      if (!(t.enumValues || []).some((e) => e.name === v.token.value)) return `Value "${v.token.value}" does not exist in "${t.name}" enum.`;
      return '';
    }
    switch (t.name) {
      case 'Int':
        if (v.kind !== 'Int') return `Int cannot represent non-integer value: ${found}`;
        if (Math.abs(Number(v.token.value)) > 2147483647 || Number(v.token.value) === 2147483648) return `Int cannot represent non 32-bit signed integer value: ${v.token.value}`;
        return '';
      case 'Float': return v.kind === 'Int' || v.kind === 'Float' ? '' : `Float cannot represent non numeric value: ${found}`;
      case 'String': return v.kind === 'String' ? '' : `String cannot represent a non string value: ${found}`;
      case 'Boolean': return v.kind === 'Boolean' ? '' : `Boolean cannot represent a non boolean value: ${found}`;
      case 'ID': return v.kind === 'String' || v.kind === 'Int' ? '' : `ID cannot represent a non-string and non-integer value: ${found}`;
    }
    return ''; // a custom scalar decides for itself, on the server
  }

  // validateDocument lists the problems of a parsed document against the
  // introspected schema, each as {message, start, end}. On the way it puts
  // in docs what the hover tip shows for each field and argument name it
  // knows: {start, end, title, description}.
  function validateDocument(definitions, schema, docs) {
    const problems = [];
    const report = (message, token) => problems.push({ message, start: token.start, end: token.end });
    const directiveDefs = new Map((schema.directives || []).map((d) => [d.name, d]));
    let op = null; // the operation being walked; null inside a fragment
    // A 500-line document looks fields up thousands of times: by map.
    const fieldMaps = new Map();
    const fieldNamed = (typeName, name) => {
      if (!fieldMaps.has(typeName)) fieldMaps.set(typeName, new Map(fieldsOf(schema, typeName).map((f) => [f.name, f])));
      return fieldMaps.get(typeName).get(name);
    };

    function checkType(ref) {
      if (ref.kind !== 'NAMED') return checkType(ref.ofType);
      if (!schema.types.has(ref.name)) report(`Unknown type "${ref.name}".`, ref.token);
    }
    function checkValue(v, ref) {
      if (v.kind === 'Variable') {
        if (op && !op.variables.some((d) => d.name.value === v.name.value)) {
          report(op.name ? `Variable "$${v.name.value}" is not defined by operation "${op.name}".` : `Variable "$${v.name.value}" is not defined.`, v.token);
        }
        return;
      }
      if (!ref) return;
      if (ref.kind === 'NON_NULL') {
        if (v.kind === 'Null') return report(`Expected value of type "${typeString(ref)}", found null.`, v.token);
        return checkValue(v, ref.ofType);
      }
      if (v.kind === 'Null') return;
      if (ref.kind === 'LIST') {
        if (v.kind === 'List') v.list.forEach((item) => checkValue(item, ref.ofType));
        else checkValue(v, ref.ofType);
        return;
      }
      const t = schema.types.get(ref.name);
      if (!t) return;
      if (t.kind === 'INPUT_OBJECT') {
        if (v.kind !== 'Object') return report(`Expected value of type "${typeString(ref)}", found ${printLiteral(v)}.`, v.token);
        for (const f of v.fields) {
          const def = (t.inputFields || []).find((d) => d.name === f.name.value);
          if (!def) report(`Field "${f.name.value}" is not defined by type "${t.name}".`, f.name);
          else checkValue(f.value, def.type);
        }
        return;
      }
      if (v.kind === 'List' || v.kind === 'Object') return report(`Expected value of type "${typeString(ref)}", found ${printLiteral(v)}.`, v.token);
      const why = leafProblem(v, t);
      if (why) report(why, v.token);
    }
    // checkArguments checks the arguments given against those defined, for
    // a field (owner "Type.field") or a directive (owner "@name").
    function checkArguments(given, defs, owner, isDirective, at) {
      for (const a of given) {
        const def = defs.find((d) => d.name === a.name.value);
        if (!def) {
          report(`Unknown argument "${a.name.value}" on ${isDirective ? 'directive' : 'field'} "${owner}".`, a.name);
          continue;
        }
        docs.push({ start: a.name.start, end: a.name.end, title: `${owner}(${def.name}: ${typeString(def.type)})`, description: def.description });
        checkValue(a.value, def.type);
      }
      for (const d of defs) {
        if (d.type.kind === 'NON_NULL' && d.defaultValue == null && !given.some((a) => a.name.value === d.name)) {
          const what = isDirective ? `Directive "${owner}"` : `Field "${owner.split('.')[1]}"`;
          report(`${what} argument "${d.name}" of type "${typeString(d.type)}" is required, but it was not provided.`, at);
        }
      }
    }
    function checkDirectives(list) {
      for (const d of list || []) {
        const def = directiveDefs.get(d.name.value);
        if (def) checkArguments(d.args, def.args || [], `@${def.name}`, true, d.name);
      }
    }
    function checkSelections(set, typeName) {
      const known = schema.types.has(typeName);
      for (const s of set.selections) {
        checkDirectives(s.directives);
        if (s.kind === 'Spread') continue;
        if (s.kind === 'Inline') {
          if (s.on && !schema.types.has(s.on.value)) report(`Unknown type "${s.on.value}".`, s.on);
          checkSelections(s.selectionSet, s.on ? s.on.value : typeName);
          continue;
        }
        const def = known && fieldNamed(typeName, s.name.value);
        if (!def) {
          if (known) report(`Cannot query field "${s.name.value}" on type "${typeName}".`, s.name);
          s.args.forEach((a) => checkValue(a.value, null));
          if (s.selectionSet) checkSelections(s.selectionSet, '');
          continue;
        }
        docs.push({ start: s.name.start, end: s.name.end, title: `${typeName}.${def.name}: ${typeString(def.type)}`, description: def.description });
        checkArguments(s.args, def.args || [], `${typeName}.${def.name}`, false, s.name);
        const inner = schema.types.get(namedType(def.type));
        const leaf = inner && (inner.kind === 'SCALAR' || inner.kind === 'ENUM');
        if (leaf && s.selectionSet) report(`Field "${def.name}" must not have a selection since type "${typeString(def.type)}" has no subfields.`, s.selectionSet.token);
        else if (inner && !leaf && !s.selectionSet) report(`Field "${def.name}" of type "${typeString(def.type)}" must have a selection of subfields. Did you mean "${def.name} { ... }"?`, s.name);
        if (s.selectionSet) checkSelections(s.selectionSet, leaf ? '' : namedType(def.type));
      }
    }

    for (const d of definitions) {
      if (d.kind === 'fragment') {
        op = null;
        if (!schema.types.has(d.on.value)) report(`Unknown type "${d.on.value}".`, d.on);
        checkDirectives(d.directives);
        checkSelections(d.selectionSet, d.on.value);
        continue;
      }
      op = d;
      d.variables.forEach((v) => {
        checkType(v.type);
        if (v.defaultValue) checkValue(v.defaultValue, null);
      });
      checkDirectives(d.directives);
      const root = { query: schema.queryType, mutation: schema.mutationType, subscription: schema.subscriptionType }[d.kind];
      checkSelections(d.selectionSet, root || '');
    }
    return problems;
  }

  // lint is the list of problems of src, syntax first; without a schema
  // only the syntax is checked.
  // parsed is parseDocument of the query being edited, once per text: the
  // lint, the same-data panel and click-to-insert read the same document.
  // It is keyed by the token list, which every edit replaces, because the
  // syntax tree points at tokens that a later edit moves.
  let parseMemo = { tokens: null, definitions: null, error: null };
  function parsed(src) {
    const tokens = tokensOf(src);
    if (parseMemo.tokens !== tokens) {
      parseMemo = { tokens, definitions: null, error: null };
      try {
        parseMemo.definitions = parseDocument(src, tokens);
      } catch (err) {
        parseMemo.error = err;
      }
    }
    if (parseMemo.error) throw parseMemo.error;
    return parseMemo.definitions;
  }

  function lint(src) {
    lintDocs = [];
    if (!src.trim()) return [];
    let definitions;
    try {
      definitions = parsed(src);
    } catch (err) {
      if (err instanceof SyntaxProblem) return [err];
      throw err;
    }
    return explorer.schema ? validateDocument(definitions, explorer.schema, lintDocs) : [];
  }

  // The problems of the text as last drawn, and the documentation of its
  // fields and arguments; the hover tip reads them.
  let lintProblems = [], lintDocs = [];
  const lintSummary = $('lint-summary');

  queryEditor.marker = (src, tokens) => {
    const started = performance.now();
    lintProblems = lint(src);
    lintSummary.replaceChildren(...lintProblems.map((p) => {
      const before = src.slice(0, p.start).split('\n');
      return h('li', {}, `${before.length}:${before[before.length - 1].length + 1} ${p.message}`);
    }));
    lintSummary.hidden = !lintProblems.length;
    // Tests and timings wait for this: the underlines are in the page now.
    // The detail is how long the lint took, in milliseconds.
    const took = performance.now() - started;
    queueMicrotask(() => queryEditor.ta.dispatchEvent(new CustomEvent('linted', { detail: took })));
    // A problem is marked on the token it starts in, which the hover tip
    // answers for; one at the end of the text (a missing "}") on the last
    // token before it.
    const marked = new Set();
    for (const p of lintProblems) {
      const t = tokens.findLast((k) => k.start <= p.start && k.kind !== 'space' && k.kind !== 'comment');
      if (!t) continue;
      marked.add(t.start);
      p.mark = { start: t.start, end: t.start + t.text.length };
    }
    return marked;
  };
  // The schema arrives after the first drawing; validation starts then.
  ensureSchema().then(() => queryEditor.render());

  // ---- Hover tip ---------------------------------------------------------

  // Under the mouse: a problem's message, or else a field's or an
  // argument's type and description (gathered by validateDocument).
  // The textarea lies over the highlighted text and takes the mouse, so
  // what is under the pointer is found from the point: the editor is
  // monospaced (see caretPoint), so a point makes a line and a column.
  const hoverTip = $('hover-tip');

  function offsetAt(x, y) {
    const ta = queryEditor.ta;
    const cs = getComputedStyle(ta);
    const zero = caretPoint(0);
    const charWidth = caretPoint.canvas.measureText('0000000000').width / 10;
    const lineHeight = parseFloat(cs.lineHeight);
    const line = Math.floor((y - (zero.y - lineHeight)) / lineHeight);
    const column = Math.floor((x - zero.x) / charWidth);
    const lines = ta.value.split('\n');
    if (line < 0 || line >= lines.length || column < 0 || column >= lines[line].length) return -1;
    let off = column;
    for (let n = 0; n < line; n++) off += lines[n].length + 1;
    return off;
  }

  function showTip(x, y, ...content) {
    hoverTip.replaceChildren(...content);
    hoverTip.hidden = false;
    hoverTip.style.left = `${Math.min(x, innerWidth - hoverTip.offsetWidth - 8)}px`;
    hoverTip.style.top = `${y + 16}px`;
  }

  queryEditor.ta.addEventListener('mousemove', (e) => {
    const off = offsetAt(e.clientX, e.clientY);
    const problem = off < 0 ? null : lintProblems.find((p) => p.mark && p.mark.start <= off && off < p.mark.end);
    const doc = off < 0 || problem ? null : lintDocs.find((d) => d.start <= off && off < d.end);
    if (problem) showTip(e.clientX, e.clientY, h('p', { className: 'tip-error' }, problem.message));
    else if (doc) showTip(e.clientX, e.clientY, h('p', { className: 'tip-type' }, doc.title), doc.description ? h('p', {}, doc.description) : null);
    else hoverTip.hidden = true;
  });
  queryEditor.ta.addEventListener('mouseleave', () => { hoverTip.hidden = true; });
  queryEditor.ta.addEventListener('input', () => { hoverTip.hidden = true; });

  // ---- Copy as curl ------------------------------------------------------

  // The operation to run, its variables and headers as one curl command a
  // shell runs as it stands: every part in single quotes, a quote inside
  // written '\''. The command is put on the clipboard and shown, read-only,
  // above the result, for a browser that keeps the clipboard to itself.
  const shellQuote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

  function curlCommand() {
    const variables = readObject(variablesEditor, 'Variables');
    const headers = readHeaders();
    const op = operationToRun(false);
    const request = { query: queryEditor.value, variables };
    if (op && op.name && ops.length > 1) request.operationName = op.name;
    const parts = ['curl', '-sS', shellQuote(new URL(endpoint, location.href).href),
      '-H', shellQuote('Content-Type: application/json')];
    for (const [name, value] of Object.entries(headers)) parts.push('-H', shellQuote(`${name}: ${value}`));
    parts.push('--data-raw', shellQuote(JSON.stringify(request)));
    return parts.join(' ');
  }

  $('copy-curl').addEventListener('click', async () => {
    let command;
    try {
      command = curlCommand();
    } catch (err) {
      setStatus(err.message, 'fail');
      return;
    }
    $('curl-command').value = command;
    $('curl-box').hidden = false;
    try {
      await navigator.clipboard.writeText(command);
      setStatus('A curl command for this operation is on the clipboard.');
    } catch {
      setStatus('The clipboard is not available here: copy the curl command from above the result.');
    }
  });

  // ---- Same data elsewhere -----------------------------------------------

  // The service serves one store four ways. For each top-level field of the
  // operation to run, this panel shows the REST or OData request and the
  // grpcurl command that read the same data, and runs the HTTP one on a
  // click to show its raw answer beside GraphQL's. Where no other style
  // serves a field, it says so.
  //
  // The gRPC server listens on an address of its own, which the service
  // puts in the page's <meta name="grpc-address"> as host:port. grpcurl
  // runs outside the server, so a listener on every interface (":50051",
  // "0.0.0.0:50051", "[::]:50051") is named by the host this page was
  // loaded from, with the listener's port; any other address as it is.
  // With no address given, the panel shows no grpcurl command.
  function grpcTarget(listen) {
    const m = /^(.*):(\d+)$/.exec(listen);
    if (!m) return listen || null;
    const host = m[1].replace(/^\[(.*)\]$/, '$1');
    const port = m[2];
    if (host === '' || host === '0.0.0.0' || (host.includes(':') && /^[0:]+$/.test(host))) return `${location.hostname}:${port}`;
    return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  }
  const GRPC_TARGET = grpcTarget(document.querySelector('meta[name="grpc-address"]').content);
  const ELSEWHERE = {
    users: () => ({ http: '/api/users', grpc: (target) => `grpcurl -plaintext ${target} user.UserService/GetAllUsers` }),
    user: (id) => id === undefined ? null : {
      http: `/api/users/${encodeURIComponent(id)}`,
      grpc: (target) => `grpcurl -plaintext -d '${JSON.stringify({ id: Number(id) })}' ${target} user.UserService/GetUser`,
    },
    orders: () => ({ http: '/api/Orders' }),
    products: () => ({ http: '/api/Products' }),
  };

  // rootFields lists the top-level fields of the operation to run, each
  // with its "id" argument when that is a literal or a variable with a value.
  function rootFields(src) {
    let definitions;
    try {
      definitions = parsed(src);
    } catch {
      return null;
    }
    const op = operationToRun(false);
    const def = definitions.find((d) => d.kind !== 'fragment' && (!op || !op.name || d.name === op.name));
    if (!def || def.kind !== 'query') return [];
    let variables = {};
    try { variables = readObject(variablesEditor, 'Variables'); } catch { /* no id from them */ }
    return def.selectionSet.selections.filter((s) => s.kind === 'Field').map((f) => {
      const id = f.args.find((a) => a.name.value === 'id');
      let value;
      if (id && (id.value.kind === 'Int' || id.value.kind === 'String')) value = id.value.token.value;
      if (id && id.value.kind === 'Variable') value = variables[id.value.name.value];
      return { name: f.name.value, id: value };
    });
  }

  // sameOrigin is the URL of path on the page's own host; the page talks to
  // no other.
  function sameOrigin(path) {
    const url = new URL(path, location.origin);
    if (url.origin !== location.origin) throw new Error(`${path} is not on this host.`);
    return url;
  }

  // The panel is drawn again only when what it shows changes: most edits
  // are below the top-level fields. It shows the first ELSEWHERE_MAX fields.
  const ELSEWHERE_MAX = 12;
  let elsewhereShown = null;
  function renderElsewhere() {
    const list = $('elsewhere-list');
    const empty = !queryEditor.value.trim();
    const fields = empty ? null : rootFields(queryEditor.value);
    const key = empty ? 'empty' : JSON.stringify(fields && fields.slice(0, ELSEWHERE_MAX + 1));
    if (key === elsewhereShown) return;
    elsewhereShown = key;
    if (empty) return list.replaceChildren(h('li', { className: 'note' }, 'Type a query to see where else the same data is served.'));
    if (!fields) return list.replaceChildren(h('li', { className: 'note' }, 'The document does not parse.'));
    if (!fields.length) return list.replaceChildren(h('li', { className: 'note' }, 'Only a query has equivalents elsewhere.'));
    const more = fields.length > ELSEWHERE_MAX ? [h('li', { className: 'note' }, `\u2026 and ${plural(fields.length - ELSEWHERE_MAX, 'more field')}.`)] : [];
    list.replaceChildren(...fields.slice(0, ELSEWHERE_MAX).map(({ name, id }) => {
      const same = ELSEWHERE[name] && ELSEWHERE[name](id);
      if (!same) return h('li', {}, h('code', {}, name), ' \u2014 no REST, OData or gRPC equivalent.');
      const answer = h('pre', { className: 'raw', hidden: true, tabIndex: 0 });
      const run = async () => {
        answer.hidden = false;
        answer.textContent = 'Loading\u2026';
        try {
          const res = await fetch(sameOrigin(same.http), { headers: { ...readHeaders(), Accept: 'application/json' } });
          answer.textContent = `${res.status} ${res.statusText}\n${await res.text()}`;
        } catch (err) {
          answer.textContent = `The request failed: ${err.message}`;
        }
      };
      return h('li', {},
        h('code', {}, name), ' ',
        h('p', {}, h('code', { className: 'http' }, `GET ${same.http}`), ' ', h('button', { type: 'button', className: 'quiet', onclick: run }, `Run GET ${same.http}`)),
        !same.grpc ? h('p', { className: 'note' }, 'No gRPC method serves this.')
          : GRPC_TARGET ? h('p', {}, h('code', { className: 'grpc' }, same.grpc(GRPC_TARGET)))
            : h('p', { className: 'note' }, 'A gRPC method serves this too, but the page was not told the gRPC address.'),
        answer);
    }), ...more);
  }

  let elsewhereTimer = 0;
  const scheduleElsewhere = () => {
    clearTimeout(elsewhereTimer);
    elsewhereTimer = setTimeout(renderElsewhere, 150);
  };
  queryEditor.ta.addEventListener('input', scheduleElsewhere);
  variablesEditor.ta.addEventListener('input', scheduleElsewhere);
  picker.addEventListener('change', scheduleElsewhere);
  renderElsewhere();

  // The active tab's result, kept from before a reload.
  showOutput(docs.active.output);
  queryEditor.ta.focus();
})();
