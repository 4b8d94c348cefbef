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
  // Each editor's diagnostics list carries data-line on every problem; the editor marks those lines
  // (line number and text). CodeMirror re-renders lines as it scrolls, so marks are re-applied on
  // every change of the editor or of its diagnostics.
  const PAIRS = [['chat-editor', 'chat-diagnostics'], ['response-editor', 'response-diagnostics']];

  function editorView(root) {
    const content = root && root.querySelector('.cm-content');
    return content && content.cmTile && content.cmTile.view;  // CodeMirror's EditorView, when reachable
  }

  function problemLines(diagId) {
    const lines = new Map();
    for (const d of document.querySelectorAll(`#${diagId} .diag[data-line]`)) {
      const n = parseInt(d.dataset.line, 10);
      if (!n) continue;
      const severity = d.classList.contains('error') ? 'error' : d.classList.contains('warning') ? 'warning' : 'info';
      if (!lines.has(n) || severity === 'error') lines.set(n, severity);
    }
    return lines;
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
  }

  let pending = false;
  function markAll() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; for (const [e, d] of PAIRS) mark(e, d); });
  }
  const observer = new MutationObserver((records) => {
    // Our own class changes also count as mutations: only react to new nodes or text.
    if (records.some((r) => r.type !== 'attributes')) markAll();
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
