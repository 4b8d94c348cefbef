() => {
  // Provenance (issue 22): where each character came from, answered in the page. The prompt view
  // carries its pieces (app/provenance_view.py): each span data-p="i" is row i of the prompt text's
  // data-pieces table, [line, column, end line, end column, message (-1: none), kind, call chain (-1:
  // none)]; data-chains holds each call chain once, [chain it extends (-1: none), call site line];
  // data-fields maps a field's colour class and a segment kind to [line, column, end line, end column]
  // of the response template key that claims it.
  const KINDS = ['template text', 'string literal', 'expression', 'block'];
  const BY_MESSAGE = 'template-playground/by-message';
  const parsed = new WeakMap();

  function data(el, name) {
    // Parsed once per value: the page may keep the element and change only its attributes.
    const raw = el && el.dataset[name];
    if (!raw) return null;
    const cache = parsed.get(el) || {};
    if (!cache[name] || cache[name].raw !== raw) {
      let value = null;
      try { value = JSON.parse(raw); } catch (e) {}
      cache[name] = { raw, value };
      parsed.set(el, cache);
    }
    return cache[name].value;
  }
  const promptText = () => document.querySelector('#prompt-view .prompt-text');
  const editor = (id) => window.playgroundEditorView(document.getElementById(id));
  function lineOf(view, el) {
    try { return view.state.doc.lineAt(view.posAtDOM(el)).number; } catch (e) { return null; }
  }
  function span(from, to) {
    const out = [];
    for (let n = from; n <= to; n++) out.push(n);
    return out;
  }

  // ----- marks on an editor's lines (kept across CodeMirror's redraws) ---------------------------
  const marks = {};  // editor id -> {class -> Set of line numbers}
  function mark(id, cls, lines) {
    (marks[id] = marks[id] || {})[cls] = new Set(lines);
    paint(id);
  }
  const painted = {};  // editor id -> whether some of its lines carry a mark now
  function paint(id) {
    const root = document.getElementById(id);
    const view = editor(id);
    const any = !!marks[id] && Object.values(marks[id]).some((lines) => lines.size);
    if (!root || !view || !(any || painted[id])) return;  // nothing to mark, nothing to clear: no work
    painted[id] = any;
    for (const el of root.querySelectorAll('.cm-content > .cm-line')) {
      const n = lineOf(view, el);
      for (const [cls, lines] of Object.entries(marks[id])) el.classList.toggle(cls, lines.has(n));
    }
  }
  function reveal(id, line) {
    // Scroll the editor's own box (never the page) so that `line` is in view.
    const view = editor(id);
    if (!view || !line) return;
    try {
      const block = view.lineBlockAt(view.state.doc.line(Math.min(line, view.state.doc.lines)).from);
      const box = view.scrollDOM;
      if (block.top < box.scrollTop || block.bottom > box.scrollTop + box.clientHeight) {
        box.scrollTop = Math.max(0, block.top - box.clientHeight / 3);
      }
    } catch (e) {}
  }
  function select(id, from, to) {
    // The exact text in the editor, selected and scrolled to (without taking the focus).
    const view = editor(id);
    if (!view || !from) return;
    const doc = view.state.doc;
    const at = ([line, column]) => {
      const l = doc.line(Math.max(1, Math.min(line, doc.lines)));
      return Math.min(l.from + Math.max(column - 1, 0), l.to);
    };
    view.dispatch({ selection: { anchor: at(from), head: to ? Math.max(at(to), at(from)) : at(from) }, scrollIntoView: true });
  }

  // ----- messages in the case's JSON ------------------------------------------------------------
  function messageLines(index) {
    // The lines of messages[index] in the messages editor: its top-level array's elements, found by
    // scanning the JSON (strings and nesting respected), so it works on any formatting.
    const view = editor('messages-editor');
    if (!view || index < 0) return [];
    const text = view.state.doc.toString();
    const lines = (from, to) => span(view.state.doc.lineAt(from).number, view.state.doc.lineAt(to).number);
    let depth = 0, inString = false, element = -1, start = -1;
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (ch === '\\') i++;
        else if (ch === '"') inString = false;
        continue;
      }
      if (depth === 1 && start < 0 && !/[\s,\]]/.test(ch)) { element++; start = i; }
      if (ch === '"') inString = true;
      else if (ch === '[' || ch === '{') depth++;
      else if (ch === ']' || ch === '}') {
        depth--;
        if (depth === 1 && start >= 0) {  // an object (a message) ends
          if (element === index) return lines(start, i);
          start = -1;
        }
        if (depth === 0) break;
      } else if (ch === ',' && depth === 1 && start >= 0) {  // anything else ends at the next comma
        if (element === index) return lines(start, i - 1);
        start = -1;
      }
    }
    return [];
  }
  function markCard(index) {
    // The message's card in the conversation editor (app/conversation.js), shown instead of the JSON.
    for (const card of document.querySelectorAll('#conversation [data-message]')) {
      card.classList.toggle('pv-msg', card.dataset.message === String(index));
    }
  }
  function messageRole(index) {
    const view = editor('messages-editor');
    try { return JSON.parse(view.state.doc.toString())[index].role; } catch (e) { return null; }
  }

  // ----- the prompt → the template and the case -------------------------------------------------
  let pinned = null;
  const callLines = new WeakMap();  // a chains table -> the call lines of each chain, outermost first
  function callsOf(text, chain) {
    // The lines of a chain's call sites: each chain once, built from the one it extends.
    const chains = data(text, 'chains') || [];
    let known = callLines.get(chains);
    if (!known) { known = []; callLines.set(chains, known); }
    if (!(chain >= 0) || !chains[chain]) return [];
    const path = [];
    for (let c = chain; c >= 0 && !known[c] && chains[c]; c = chains[c][0]) path.push(c);
    for (const c of path.reverse()) {
      const parent = chains[c][0];
      known[c] = [...(parent >= 0 && known[parent] ? known[parent] : []), chains[c][1]];
    }
    return known[chain] || [];
  }
  function pieceOf(el) {
    // A stale prompt (the last that rendered, kept on screen after an edit that does not) was
    // written by an older template: its lines no longer say anything. A piece as the page reads
    // it: its row, with the lines of its call sites in place of its chain.
    if (document.querySelector('#prompt-view .stale-banner')) return null;
    const text = el.closest('.prompt-text');
    const rows = data(text, 'pieces');
    const row = rows ? rows[+el.dataset.p] : null;
    return row ? [...row.slice(0, 6), callsOf(text, row[6])] : null;
  }
  function readout(text, el) {
    // A line that floats under the character (no room is taken from the first screen for it).
    let tip = document.getElementById('pv-readout');
    if (!tip) {
      tip = document.createElement('div');
      tip.id = 'pv-readout';
      tip.className = 'pv-readout';
      document.body.appendChild(tip);
    }
    tip.textContent = text;
    tip.hidden = !text;
    if (text && el) {
      const box = el.getBoundingClientRect();
      tip.style.left = `${Math.max(4, Math.min(box.left, window.innerWidth - tip.offsetWidth - 4))}px`;
      tip.style.top = `${box.bottom + 4}px`;
    }
  }
  function sourceText(p) {
    const view = editor('chat-editor');
    if (!view || !p[0] || p[5] === 0) return '';
    try {
      const line = view.state.doc.line(p[0]).text;
      const text = p[2] === p[0] ? line.slice(p[1] - 1, p[3] - 1) : line.slice(p[1] - 1) + ' …';
      return ` ${text.length > 60 ? text.slice(0, 59) + '…' : text}`;
    } catch (e) { return ''; }
  }
  function describe(p) {
    const where = p[0] ? `line ${p[0]}, column ${p[1]}` + (p[2] !== p[0] ? `–line ${p[2]}` : '') : 'line unknown';
    const role = p[4] >= 0 ? messageRole(p[4]) : null;
    // Messages are counted from 1, as the conversation editor's cards are ("Message 1").
    const message = p[4] >= 0 ? `message ${p[4] + 1}${role ? ` (${role})` : ''}` : 'no message';
    // (A deep chain, a macro that calls itself, is said by its ends: the readout stays one line.)
    const lines = p[6].length > 8 ? [...p[6].slice(0, 3), `… ${p[6].length - 6} more …`, ...p[6].slice(-3)] : p[6];
    const via = p[6].length ? ` · via line ${lines.join(', ')}` : '';
    return `${where} · ${KINDS[p[5]] || 'expression'}${sourceText(p)} · ${message}${via}`;
  }
  function show(el) {
    const p = pieceOf(el);
    if (!p) return;
    for (const other of document.querySelectorAll('#prompt-view .pv-hover')) other.classList.remove('pv-hover');
    for (const same of document.querySelectorAll(`#prompt-view [data-p="${el.dataset.p}"]`)) same.classList.add('pv-hover');
    mark('chat-editor', 'pv-line', p[0] ? span(p[0], p[2]) : []);
    mark('chat-editor', 'pv-call', p[6]);
    const lines = messageLines(p[4]);
    mark('messages-editor', 'pv-msg', lines);
    markCard(p[4]);
    reveal('chat-editor', p[0]);
    reveal('messages-editor', lines[0]);
    readout(describe(p), el);
  }
  function clear() {
    for (const other of document.querySelectorAll('#prompt-view .pv-hover')) other.classList.remove('pv-hover');
    mark('chat-editor', 'pv-line', []);
    mark('chat-editor', 'pv-call', []);
    mark('messages-editor', 'pv-msg', []);
    markCard(-1);
    readout('');
  }
  document.addEventListener('mouseover', (event) => {
    const el = event.target.closest && event.target.closest('#prompt-view [data-p]');
    if (el && !pinned) show(el);
  });
  document.addEventListener('mouseout', (event) => {
    const from = event.target.closest && event.target.closest('#prompt-view [data-p]');
    const to = event.relatedTarget && event.relatedTarget.closest && event.relatedTarget.closest('#prompt-view [data-p]');
    if (from && !to && !pinned) clear();
  });
  document.addEventListener('click', (event) => {
    const el = event.target.closest && event.target.closest('#prompt-view [data-p]');
    if (!el) return;
    const p = pieceOf(el);
    pinned = p && pinned !== el.dataset.p ? el.dataset.p : null;
    if (!pinned) { clear(); return; }
    show(el);
    select('chat-editor', [p[0], p[1]], [p[2], p[3]]);
    const lines = messageLines(p[4]);
    if (lines.length) select('messages-editor', [lines[0], 1]);
    hit(p[0]);
  });

  // ----- the template's cursor → the prompt ------------------------------------------------------
  let cursorLine = null;
  function hit(line) {
    cursorLine = line;
    const text = promptText();
    const rows = data(text, 'pieces');
    for (const el of document.querySelectorAll('#prompt-view .pv-hit')) el.classList.remove('pv-hit');
    if (!rows || !line || document.querySelector('#prompt-view .stale-banner')) return;
    for (const el of text.querySelectorAll('[data-p]')) {
      const p = rows[+el.dataset.p];
      if (p && ((p[0] <= line && line <= p[2]) || callsOf(text, p[6]).includes(line))) el.classList.add('pv-hit');
    }
  }
  function followCursor(event) {
    if (!event.target.closest || !event.target.closest('#chat-editor')) return;
    const view = editor('chat-editor');
    if (view) hit(view.state.doc.lineAt(view.state.selection.main.head).number);
  }
  for (const type of ['keyup', 'mouseup', 'focusin']) document.addEventListener(type, followCursor);

  // ----- the output → the response template ------------------------------------------------------
  document.addEventListener('click', (event) => {
    const seg = event.target.closest && event.target.closest('#stream-view .seg, #step-panel .seg');
    if (!seg) return;
    const fields = data(promptText(), 'fields') || {};
    const colour = [...seg.classList].find((c) => /^f\d+$/.test(c));
    const kind = ['open', 'close', 'pending', 'body'].find((k) => seg.classList.contains(k));
    const site = colour && kind && fields[colour] && fields[colour][kind];
    mark('response-editor', 'pv-line', site ? span(site[0], site[2]) : []);
    if (site) select('response-editor', [site[0], site[1]], [site[2], site[3]]);
  });

  // ----- a card of the conversation → its text in the prompt (mouse, or Tab into the card) -------------
  function cardPieces(index, scroll) {
    for (const el of document.querySelectorAll('#prompt-view .pv-card')) el.classList.remove('pv-card');
    const text = promptText();
    const rows = data(text, 'pieces');
    if (!rows || index < 0 || document.querySelector('#prompt-view .stale-banner')) return;
    let first = null;
    for (const el of text.querySelectorAll('[data-p]')) {
      if (rows[+el.dataset.p] && rows[+el.dataset.p][4] === index) { el.classList.add('pv-card'); first = first || el; }
    }
    const view = document.getElementById('prompt-view');
    if (scroll && first && view && window.playgroundPrompt) {
      const a = first.getBoundingClientRect(), b = view.getBoundingClientRect();
      if (a.top < b.top || a.bottom > b.bottom) window.playgroundPrompt.scrollTo(view.scrollTop + a.top - b.top - b.height / 4);
    }
  }
  const cardOf = (el) => el && el.closest && el.closest('#conversation .conv-message[data-message]');
  document.addEventListener('mouseover', (event) => { const c = cardOf(event.target); if (c) cardPieces(+c.dataset.message, false); });
  document.addEventListener('focusin', (event) => { const c = cardOf(event.target); if (c) cardPieces(+c.dataset.message, true); });
  document.addEventListener('mouseout', (event) => { if (cardOf(event.target) && !cardOf(event.relatedTarget)) cardPieces(-1); });
  document.addEventListener('focusout', (event) => { if (cardOf(event.target) && !cardOf(event.relatedTarget)) cardPieces(-1); });

  // ----- an output region ⇄ its key in the parsed message ------------------------------------------------
  // The parsed message's top-level keys (JSON written with indent 2): each key's lines, and its colour
  // class (the legend's chip of the same name). Also what the walk (walk.js) marks a field with.
  function messageFields() {
    const view = window.playgroundEditorView(document.getElementById('message-view'));
    if (!view) return { view: null, fields: [] };
    const doc = view.state.doc, fields = [];
    const colour = {};
    for (const chip of document.querySelectorAll('#legend .chip')) {
      const cls = [...chip.classList].find((c) => /^f\d+$/.test(c));
      if (cls) colour[chip.textContent] = cls;
    }
    for (let n = 1; n <= doc.lines; n++) {
      const key = /^ {2}"((?:[^"\\]|\\.)*)":/.exec(doc.line(n).text);
      if (!key) continue;
      let end = n;
      while (end < doc.lines && /^ {3,}|^ {2}[\]}]/.test(doc.line(end + 1).text)) end++;
      let name = key[1];
      try { name = JSON.parse(`"${key[1]}"`); } catch (e) {}
      fields.push({ name, cls: colour[name] || null, from: n, to: end });
    }
    return { view, fields };
  }
  window.playgroundMessageFields = messageFields;
  function markMessageField(cls) {
    const { view, fields } = messageFields();
    if (!view) return;
    const hit = fields.find((f) => f.cls === cls);
    for (const el of document.querySelectorAll('#message-view .cm-line')) {
      const n = lineOf(view, el);
      el.classList.toggle('pv-field', !!hit && n !== null && hit.from <= n && n <= hit.to);
    }
  }
  function markRegions(cls) {
    for (const el of document.querySelectorAll('#stream-view .pv-region')) el.classList.remove('pv-region');
    if (cls) for (const el of document.querySelectorAll(`#stream-view .seg.${cls}`)) el.classList.add('pv-region');
  }
  const colourOf = (seg) => [...seg.classList].find((c) => /^f\d+$/.test(c)) || null;
  document.addEventListener('mouseover', (event) => {
    const seg = event.target.closest && event.target.closest('#stream-view .seg');
    if (seg) { markMessageField(colourOf(seg)); return; }
    const line = event.target.closest && event.target.closest('#message-view .cm-line');
    if (!line) return;
    const { view, fields } = messageFields();
    const n = view ? lineOf(view, line) : null;
    const field = fields.find((f) => n !== null && f.from <= n && n <= f.to);
    markRegions(field ? field.cls : null);
  });
  document.addEventListener('mouseout', (event) => {
    if (event.target.closest && event.target.closest('#stream-view .seg') && !(event.relatedTarget && event.relatedTarget.closest && event.relatedTarget.closest('#stream-view .seg'))) markMessageField(null);
    if (event.target.closest && event.target.closest('#message-view') && !(event.relatedTarget && event.relatedTarget.closest && event.relatedTarget.closest('#message-view'))) markRegions(null);
  });

  // ----- "By message" -----------------------------------------------------------------------------
  function byMessage(on) {
    const panel = document.getElementById('prompt-panel');
    if (panel) panel.classList.toggle('by-message', on);
    // The conversation's cards take the same colours (a stripe), so the prompt reads against it.
    document.documentElement.classList.toggle('pv-cards-by-message', on);
    cardsFollow();
    const box = document.getElementById('pv-by-message');
    if (box) box.checked = on;
  }
  // Gradio scopes the page's styles under its root column, so the class goes there too (and again
  // after Gradio redraws it).
  function cardsFollow() {
    const top = document.querySelector('.gradio-container .contain > .column');
    if (top) top.classList.toggle('pv-cards-by-message', document.documentElement.classList.contains('pv-cards-by-message'));
  }
  // Presentation mode is the teaching view: the prompt coloured by message beside the conversation
  // in the same colours (this browser's own choice comes back when it ends).
  function presentChanged(on) {
    let saved = false;
    try { saved = !!window.localStorage.getItem(BY_MESSAGE); } catch (e) {}
    byMessage(on || saved);
  }
  document.addEventListener('playground:present', (event) => presentChanged(event.detail.on));
  document.addEventListener('change', (event) => {
    if (event.target.id !== 'pv-by-message') return;
    byMessage(event.target.checked);
    try { window.localStorage.setItem(BY_MESSAGE, event.target.checked ? '1' : ''); } catch (e) {}
  });

  // ----- a prompt shown unexplained is explained once the author pauses ------------------------------
  // A keystroke's answer comes without where the prompt's characters came from (`data-explain="later-N"`:
  // app/workbench.py); once no key was pressed for EXPLAIN_AFTER ms (each key starts the wait again)
  // the hidden Explain button asks for it, once per prompt shown. Explaining in every keystroke's call,
  // or in a call chained to each, kept the render worker busy while the next key waited for it (one
  // render per visitor at a time); a shorter wait still met the next key of a slow typist.
  const EXPLAIN_AFTER = 700;
  let waiting = null, asked = null, seenMark = null, lastKey = -Infinity;
  const later = () => { const t = promptText(); const m = t && t.dataset.explain; return m && m.startsWith('later') ? m : null; };
  function explainLater() {
    clearTimeout(waiting);
    waiting = null;
    const mark = later();
    if (!mark || asked === mark) return;
    waiting = setTimeout(() => {
      waiting = null;
      const now = later();
      const button = document.getElementById('explain-button');
      if (now && asked !== now && button) { asked = now; button.click(); }
    }, Math.max(0, EXPLAIN_AFTER - (performance.now() - lastKey)));
  }
  document.addEventListener('keydown', () => { lastKey = performance.now(); if (waiting !== null) explainLater(); }, true);

  // After every change of the page (the page's one observer, app/page.js): CodeMirror redraws lines
  // as it scrolls, a refresh replaces the prompt (or only its attributes), panels come back.
  let shownPieces = null;
  window.playgroundAfterChange(() => {
    const mark = later();
    if (mark !== seenMark) { seenMark = mark; explainLater(); }
    cardsFollow();
    for (const id of ['chat-editor', 'messages-editor', 'response-editor']) paint(id);
    const text = promptText();
    const pieces = text ? text.dataset.pieces || '' : null;
    if (pieces !== shownPieces) {  // a new prompt: what the cursor's line wrote, again
      shownPieces = pieces;
      pinned = null;
      if (cursorLine) hit(cursorLine);
    }
    const box = document.getElementById('pv-by-message');
    if (box && !box.dataset.pvSet) {  // this browser's choice, once the switch is on the page
      box.dataset.pvSet = '1';
      presentChanged(document.documentElement.classList.contains('presenting'));
    }
  });
}
