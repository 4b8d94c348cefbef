() => {
  // The page's own behaviour in the browser (no server round trip): the "start here" line, the
  // editor switch on narrow screens, diagnostics marked on the editors' lines, and jumps to a line.
  const KEY = 'template-playground/start-here-closed';

  // ----- "Start here", shown until closed -------------------------------------------------------
  try { if (window.localStorage.getItem(KEY)) document.documentElement.classList.add('start-here-closed'); } catch (e) {}
  document.addEventListener('click', (event) => {
    if (event.target.closest('.start-here-close')) {
      document.documentElement.classList.add('start-here-closed');
      try { window.localStorage.setItem(KEY, '1'); } catch (e) {}
    }
    const pick = event.target.closest('.editor-switch button');
    if (pick) {
      const area = document.getElementById('editors-area');
      area.dataset.show = pick.dataset.show;
      for (const b of area.querySelectorAll('.editor-switch button')) b.classList.toggle('active', b === pick);
    }
  });

  // ----- diagnostics on the editors' lines ------------------------------------------------------
  // Each editor's diagnostics list carries data-line on every problem (and data-column /
  // data-end-column when it is one token); the editor marks those lines (line number and text) and
  // those tokens. CodeMirror re-renders lines as it scrolls, so marks are re-applied on every change
  // of the editor or of its diagnostics.
  const PAIRS = [['chat-editor', 'chat-diagnostics'], ['response-editor', 'response-diagnostics']];

  function editorView(root) {
    const content = root && root.querySelector('.cm-content');
    return content && content.cmTile && content.cmTile.view;  // CodeMirror's EditorView, when reachable
  }

  function severityOf(d) {
    return d.classList.contains('error') ? 'error' : d.classList.contains('warning') ? 'warning' : 'info';
  }

  function problemLines(diagId) {
    const lines = new Map();
    for (const d of document.querySelectorAll(`#${diagId} .diag[data-line]`)) {
      const n = parseInt(d.dataset.line, 10);
      if (!n) continue;
      const severity = severityOf(d);
      if (!lines.has(n) || severity === 'error') lines.set(n, severity);
    }
    return lines;
  }

  // The offending token itself (data-column .. data-end-column, or one character): a box drawn in a
  // layer of CodeMirror's scroller, placed from the editor's own coordinates, so it scrolls with the
  // text and never touches the content CodeMirror owns.
  function markTokens(root, view, diagId) {
    const scroller = root.querySelector('.cm-scroller');
    if (!scroller) return;
    let layer = scroller.querySelector(`:scope > .${LAYER}`);
    if (!layer) {
      layer = document.createElement('div');
      layer.className = LAYER;
      layer.setAttribute('aria-hidden', 'true');
      scroller.appendChild(layer);
    }
    const boxes = [];
    const origin = scroller.getBoundingClientRect();
    for (const d of document.querySelectorAll(`#${diagId} .diag[data-line][data-column]`)) {
      const n = parseInt(d.dataset.line, 10), column = parseInt(d.dataset.column, 10);
      if (!n || !column || n > view.state.doc.lines) continue;
      const line = view.state.doc.line(n);
      const from = Math.min(line.from + column - 1, line.to);
      const end = parseInt(d.dataset.endColumn || '0', 10);
      const to = Math.min(Math.max(end ? line.from + end - 1 : from + 1, from + 1), Math.max(line.to, from + 1));
      const start = view.coordsAtPos(from, 1), stop = view.coordsAtPos(Math.min(to, line.to), -1);
      if (!start) continue;  // not drawn (scrolled far away): marked when it is
      const right = stop && stop.top === start.top && stop.right > start.left ? stop.right : start.left + 8;
      const box = document.createElement('div');
      box.className = `diag-token diag-token-${severityOf(d)}`;
      box.dataset.line = String(n);
      box.dataset.from = String(column);
      box.dataset.to = String(column + (to - from));
      box.title = d.querySelector('.msg') ? d.querySelector('.msg').textContent : '';
      Object.assign(box.style, {
        left: `${start.left - origin.left + scroller.scrollLeft}px`, top: `${start.top - origin.top + scroller.scrollTop}px`,
        width: `${right - start.left}px`, height: `${start.bottom - start.top}px`,
      });
      boxes.push(box);
    }
    layer.replaceChildren(...boxes);
  }

  function lineOf(view, el) {
    try { return view.state.doc.lineAt(view.posAtDOM(el)).number; } catch (e) { return null; }
  }

  function mark(editorId, diagId) {
    const root = document.getElementById(editorId);
    if (!root) return;
    const lines = problemLines(diagId);
    root.dataset.problemLines = [...lines.keys()].join(',');
    for (const g of root.querySelectorAll('.cm-lineNumbers .cm-gutterElement')) {
      const severity = lines.get(parseInt(g.textContent, 10));
      for (const s of ['error', 'warning', 'info']) g.classList.toggle(`diag-gutter-${s}`, severity === s);
    }
    const view = editorView(root);
    if (!view) return;
    for (const el of root.querySelectorAll('.cm-content > .cm-line')) {
      const severity = lines.get(lineOf(view, el));
      for (const s of ['error', 'warning', 'info']) el.classList.toggle(`diag-line-${s}`, severity === s);
    }
    markTokens(root, view, diagId);
  }

  let pending = false;
  function markAll() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; for (const [e, d] of PAIRS) mark(e, d); });
  }
  const LAYER = 'diag-token-layer';
  function ours(r) {  // the token layer being filled, or added: our own change
    if (r.target.classList && r.target.classList.contains(LAYER)) return true;
    const changed = [...r.addedNodes, ...r.removedNodes];
    return changed.length > 0 && changed.every((n) => n.classList && n.classList.contains(LAYER));
  }
  const observer = new MutationObserver((records) => {
    // Our own class changes and token boxes also count as mutations: only react to new nodes or text.
    if (records.some((r) => r.type !== 'attributes' && !ours(r))) markAll();
  });
  function watch() {
    for (const [e, d] of PAIRS) {
      for (const id of [e, d]) {
        const el = document.getElementById(id);
        if (el && !el.dataset.watched) {
          el.dataset.watched = '1';
          observer.observe(el, { childList: true, subtree: true, characterData: true });
        }
      }
    }
    markAll();
  }
  watch();
  setInterval(watch, 1000);  // panels can be re-created (tabs); cheap when nothing changed

  // ----- jump to a line (the Checks tab's results) -----------------------------------------------
  window.playgroundJump = (source, line, detail) => {
    const ids = { chat_template: 'chat-editor', response_template: 'response-editor', case: 'messages-editor' };
    const id = ids[source];
    if (!id || !line) return;
    const tab = [...document.querySelectorAll('#tabs button[role=tab]')].find((b) => b.textContent.trim() === 'Playground');
    if (tab) tab.click();
    const area = document.getElementById('editors-area');
    if (area && source !== 'case') area.dataset.show = source === 'chat_template' ? 'chat' : 'response';
    setTimeout(() => {
      const root = document.getElementById(id);
      if (!root) return;
      root.scrollIntoView({ block: 'center' });
      const view = editorView(root);
      if (view) {
        const target = view.state.doc.line(Math.min(line, view.state.doc.lines));
        view.dispatch({ selection: { anchor: target.from, head: target.to }, scrollIntoView: true });
      }
      // Bring the result along: a note over the editor, until closed.
      let note = root.parentElement.querySelector('.jump-note');
      if (!note) {
        note = document.createElement('div');
        note.className = 'jump-note';
        root.parentElement.insertBefore(note, root);
      }
      note.innerHTML = '';
      const text = document.createElement('span');
      text.textContent = `Line ${line}: ${detail || ''}`;
      const close = document.createElement('button');
      close.textContent = '×';
      close.onclick = () => note.remove();
      note.append(text, close);
      root.dataset.jumpedTo = String(line);
      setTimeout(() => {
        for (const el of root.querySelectorAll('.cm-content > .cm-line')) {
          if (view && lineOf(view, el) === line) el.classList.add('jump-line');
        }
      }, 120);
    }, 250);
  };
}
