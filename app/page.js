() => {
  // The page's own behaviour in the browser (no server round trip): the "start here" line, the
  // editor switch on narrow screens, keyboard shortcuts, presentation mode, what makes Gradio's
  // widgets accessible, diagnostics marked on the editors' lines, and jumps to a line. The
  // conversation editor is app/conversation.js.
  const KEY = 'template-playground/start-here-closed';
  const root = document.documentElement;

  // ----- after the page changed --------------------------------------------------------------
  // One observer for the whole page: what depends on Gradio's DOM (marks on the editors' lines,
  // focusable scrollers, the code palette) is redone once per animation frame after a change, never
  // on a timer. Attribute changes are left out (our own marks are attribute changes).
  const afterChange = [];
  let scheduled = false;
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; for (const fn of afterChange) fn(); });
  }
  // The boxes drawn over the editors' tokens are our own change too: redrawing them must not
  // schedule another redraw.
  const OWN_LAYER = 'diag-token-layer';
  function ours(r) {
    if (r.target.classList && r.target.classList.contains(OWN_LAYER)) return true;
    const changed = [...r.addedNodes, ...r.removedNodes];
    return changed.length > 0 && changed.every((n) => n.classList && n.classList.contains(OWN_LAYER));
  }
  new MutationObserver((records) => {
    if (records.some((r) => r.type !== 'attributes' && !ours(r))) schedule();
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
  window.playgroundAfterChange = (fn) => { afterChange.push(fn); schedule(); };

  // ----- "Start here", shown until closed; the editor switch ---------------------------------
  try { if (window.localStorage.getItem(KEY)) root.classList.add('start-here-closed'); } catch (e) {}
  document.addEventListener('click', (event) => {
    if (event.target.closest('.start-here-close')) {
      root.classList.add('start-here-closed');
      try { window.localStorage.setItem(KEY, '1'); } catch (e) {}
    }
    const pick = event.target.closest('.editor-switch button');
    if (pick) showEditor(pick.dataset.show);
    if (event.target.closest('#present-toggle, [data-present-toggle]')) present(!root.classList.contains('presenting'));
    // The header's status line: its Undo presses the hidden button of the event; × hides the line.
    const press = event.target.closest('[data-press]');
    if (press) { const target = document.getElementById(press.dataset.press); if (target) target.click(); }
    const close = event.target.closest('.status-close');
    if (close && close.closest('.status-line')) close.closest('.status-line').remove();
    // Its notes open over the page: a click anywhere else closes them.
    for (const open of document.querySelectorAll('.status-more[open]')) if (!open.contains(event.target)) open.open = false;
  });

  // ----- panels that open over the page stay inside the window ---------------------------------------
  // "Load …", "About this format" and the status line's notes open where their button is; near the
  // right edge they ran off it. Each is shifted back in (CSS `translate`, which the panels' own
  // transforms leave alone) when one opens, when the status line (which moves them) changes, and when
  // the window is resized; never on other changes (measuring there would lay the page out on every
  // frame of a streaming run).
  const PANELS = ['#load-accordion > [data-testid="accordion-content"]', '#notes-accordion > [data-testid="accordion-content"]',
    '.status-more[open] .status-pop'];
  function keepInView() {
    for (const el of document.querySelectorAll(PANELS.join(', '))) {
      el.style.translate = '';
      const box = el.getBoundingClientRect();
      if (!box.width) continue;
      let shift = 0;
      if (box.right > window.innerWidth - 8) shift = window.innerWidth - 8 - box.right;
      if (box.left + shift < 8) shift = 8 - box.left;
      if (shift) el.style.translate = `${Math.round(shift)}px 0`;
    }
  }
  let statusShown = null;
  afterChange.push(() => {
    const status = document.getElementById('top-status');
    const now = status ? status.innerHTML : '';
    // Nothing to say: the line takes no room (a `:has()` rule did this, at a cost on every change; set
    // after every change, since Gradio may redraw the element's classes).
    if (status) status.classList.toggle('status-empty', !status.querySelector('.status-note, .diags'));
    if (now !== statusShown) { statusShown = now; keepInView(); }
  });
  window.addEventListener('resize', keepInView);
  document.addEventListener('toggle', keepInView, true);
  // An accordion opens by a style change (no new nodes for the observer): placed once it is drawn.
  document.addEventListener('click', (event) => {
    if (event.target.closest('.label-wrap')) { requestAnimationFrame(keepInView); setTimeout(keepInView, 120); }
  });

  // ----- a diagnostic's snippet shows its caret ----------------------------------------------------
  // A long line scrolls sideways (it is not wrapped, so the caret stays under its character): it is
  // scrolled so the caret is in view, once per snippet drawn.
  function showCarets() {
    for (const caret of document.querySelectorAll('.diag .snippet .caret:not([data-shown])')) {
      const pre = caret.closest('.snippet');
      caret.dataset.shown = '1';
      if (!pre.clientWidth) { delete caret.dataset.shown; continue; }  // not drawn yet (a closed panel)
      const right = caret.offsetLeft + caret.offsetWidth;
      if (right > pre.scrollLeft + pre.clientWidth - 16) pre.scrollLeft = Math.max(0, right - pre.clientWidth * 0.6);
    }
  }
  afterChange.push(showCarets);

  function showEditor(which) {
    const area = document.getElementById('editors-area');
    if (!area) return;
    area.dataset.show = which;
    for (const b of area.querySelectorAll('.editor-switch button')) b.setAttribute('aria-pressed', String(b.dataset.show === which));
  }

  // ----- keyboard: Ctrl/Cmd+Enter runs, Esc stops ------------------------------------------------
  // Captured before the editors see the keys (CodeMirror binds Mod-Enter to "insert blank line").
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey) && !event.shiftKey && !event.altKey) {
      const run = document.querySelector('#run-button');
      if (run && !run.disabled) {
        event.preventDefault();
        event.stopPropagation();
        run.click();
      }
    } else if (event.key === 'Escape') {
      const stop = document.querySelector('#stop-button');
      if (stop && !stop.disabled) stop.click();  // Esc keeps its other meanings (closing a list)
      for (const open of document.querySelectorAll('.status-more[open]')) open.open = false;
    }
  }, true);

  // ----- presentation mode ---------------------------------------------------------------------
  // Larger type and only the teaching flow (conversation → prompt → output → parsed message), for a
  // projector; `?present=1` in the address opens the page in it, and the toggle keeps the address
  // in step so it can be bookmarked.
  function present(on) {
    root.classList.toggle('presenting', on);
    markPresenting();
    const toggle = document.getElementById('present-toggle');
    if (toggle) toggle.setAttribute('aria-pressed', String(on));
    if (on) {
      const tab = [...document.querySelectorAll('#tabs button[role=tab]')].find((b) => b.textContent.trim() === 'Playground');
      if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
    }
    const url = new URL(window.location.href);
    if (on) url.searchParams.set('present', '1'); else url.searchParams.delete('present');
    window.history.replaceState(window.history.state, '', url);
    document.dispatchEvent(new CustomEvent('playground:present', { detail: { on } }));
  }
  // The styles key on the page's root column (see style.css); Gradio may redraw it, so after changes too.
  function markPresenting() {
    const top = document.querySelector('.gradio-container .contain > .column');
    if (top) top.classList.toggle('presenting', root.classList.contains('presenting'));
  }
  afterChange.push(markPresenting);
  const asked = new URLSearchParams(window.location.search).get('present');
  if (asked && asked !== '0') present(true);

  // ----- accessibility of Gradio's widgets ---------------------------------------------------------
  // Code editors: Gradio's light code theme (Nord) writes names, strings and keywords in colours
  // that fail WCAG contrast on white (2.0-4.0:1), its dark one its comments and meta; each is
  // replaced by the same hue, darker (lighter), at 4.5:1 or more. CodeMirror keeps its highlight
  // rules in a <style> element under generated class names, so the rules are found by their colour.
  const PALETTE = {
    'rgb(94, 129, 172)': '#3b6592', 'rgb(208, 135, 112)': '#a0502f', 'rgb(129, 161, 193)': '#44688f',
    'rgb(163, 190, 140)': '#4a7330', 'rgb(143, 188, 187)': '#2f6f6d', 'rgb(136, 192, 208)': '#2b6e82',
    'rgb(235, 203, 139)': '#80621a', 'rgb(180, 142, 173)': '#85557e', 'rgb(191, 97, 106)': '#a63e48',
    'rgb(105, 135, 175)': '#93acd0', 'rgb(165, 69, 67)': '#e58785', 'rgb(128, 128, 128)': '#a8a8a8',
  };
  const seen = new WeakMap();
  function fixPalette() {
    for (const sheet of document.styleSheets) {
      let rules;
      try { rules = sheet.cssRules; } catch (e) { continue; }
      if (seen.get(sheet) === rules.length) continue;
      seen.set(sheet, rules.length);
      for (const rule of rules) {
        if (!rule.selectorText || !rule.selectorText.startsWith('.ͼ') || !rule.style) continue;
        const better = PALETTE[rule.style.color];
        if (better) rule.style.setProperty('color', better);
      }
    }
  }
  // Scrolling boxes a keyboard must be able to reach (WCAG 2.1.1): the code editors' content
  // (editable: CodeMirror's contenteditable, given an explicit tab stop) or the box itself.
  const SCROLLERS = [['#prompt-view', 'Prompt'], ['#stream-view .inc-scroll', 'Output'], ['#events-view .inc-scroll', 'Events'],
    ['#chat-diagnostics', 'Chat template diagnostics'], ['#response-diagnostics', 'Response template diagnostics'],
    ['#step-view .events-scroll', 'Step-through table'], ['#step-view .step-side pre', 'Step-through detail'],
    ['#publish-diff .diff', 'Diff'], ['#check-detail .check-lines', 'Lines'], ['#draft-diff .diff', 'Draft diff']];
  function fixFocus() {
    for (const [selector, label] of SCROLLERS) {
      for (const el of document.querySelectorAll(selector)) {
        if (el.hasAttribute('tabindex')) continue;
        el.setAttribute('tabindex', '0');
        el.setAttribute('role', 'region');
        el.setAttribute('aria-label', label);
      }
    }
    for (const content of document.querySelectorAll('.cm-content')) {
      const scroller = content.closest('.cm-scroller');
      if (content.getAttribute('contenteditable') === 'true') {
        if (!content.hasAttribute('tabindex')) content.setAttribute('tabindex', '0');
        if (!content.hasAttribute('aria-describedby')) describeKeys(content);
      } else if (scroller && scroller.getAttribute('tabindex') !== '0') {
        scroller.setAttribute('tabindex', '0');  // a read-only editor (the parsed message): scroll it by keyboard
      }
    }
    // Gradio's "empty" placeholder is a labelled <div> without a role (an icon): say what it is.
    for (const empty of document.querySelectorAll('div.empty[aria-label]:not([role])')) empty.setAttribute('role', 'img');
  }
  // In a code editor Tab indents (as authors expect), so the way out is said where it applies: a
  // note shown while the editor has focus (WCAG 2.1.2), also read out with the editor.
  let hints = 0;
  function describeKeys(content) {
    const editor = content.closest('.cm-editor');
    if (!editor || !editor.parentElement) return;
    const hint = document.createElement('div');
    hint.className = 'kbd-hint';
    hint.id = `kbd-hint-${++hints}`;
    hint.textContent = 'Tab indents · Esc then Tab leaves the editor · Ctrl+Enter runs';
    editor.after(hint);  // shown while the editor has focus: `.cm-editor:focus-within + .kbd-hint`
    editor.parentElement.classList.add('kbd-host');
    content.setAttribute('aria-describedby', hint.id);
  }
  afterChange.push(fixPalette, fixFocus);

  // ----- diagnostics on the editors' lines ------------------------------------------------------
  // Each editor's diagnostics list carries data-line on every problem (and data-column /
  // data-end-column when it is one token); the editor marks those lines (line number and text) and
  // those tokens. CodeMirror re-renders lines as it scrolls, so marks are re-applied after every
  // change of the editor or of its diagnostics (the page's observer above).
  const PAIRS = [['chat-editor', 'chat-diagnostics'], ['response-editor', 'response-diagnostics']];

  function editorView(el) {
    const content = el && el.querySelector('.cm-content');
    return content && content.cmTile && content.cmTile.view;  // CodeMirror's EditorView, when reachable
  }
  window.playgroundEditorView = editorView;

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
    let layer = scroller.querySelector(`:scope > .${OWN_LAYER}`);
    if (!layer) {
      layer = document.createElement('div');
      layer.className = OWN_LAYER;
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
    const editor = document.getElementById(editorId);
    if (!editor) return;
    const lines = problemLines(diagId);
    const key = [...lines.keys()].join(',');
    if (editor.dataset.problemLines !== key) editor.dataset.problemLines = key;
    for (const g of editor.querySelectorAll('.cm-lineNumbers .cm-gutterElement')) {
      const severity = lines.get(parseInt(g.textContent, 10));
      for (const s of ['error', 'warning', 'info']) g.classList.toggle(`diag-gutter-${s}`, severity === s);
    }
    const view = editorView(editor);
    if (!view) return;
    for (const el of editor.querySelectorAll('.cm-content > .cm-line')) {
      const severity = lines.size ? lines.get(lineOf(view, el)) : undefined;
      for (const s of ['error', 'warning', 'info']) el.classList.toggle(`diag-line-${s}`, severity === s);
    }
    markTokens(editor, view, diagId);
  }
  afterChange.push(() => { for (const [e, d] of PAIRS) mark(e, d); });

  // ----- jump to a line (the Checks tab's results) -----------------------------------------------
  window.playgroundJump = (source, line, detail) => {
    const ids = { chat_template: 'chat-editor', response_template: 'response-editor', case: 'messages-editor' };
    const id = ids[source];
    if (!id || !line) return;
    const tab = [...document.querySelectorAll('#tabs button[role=tab]')].find((b) => b.textContent.trim() === 'Playground');
    if (tab) tab.click();
    if (source === 'case') document.dispatchEvent(new CustomEvent('playground:messages-view', { detail: { view: 'json' } }));
    else showEditor(source === 'chat_template' ? 'chat' : 'response');
    setTimeout(() => {
      const target = document.getElementById(id);
      if (!target) return;
      target.scrollIntoView({ block: 'center' });
      const view = editorView(target);
      if (view) {
        const at = view.state.doc.line(Math.min(line, view.state.doc.lines));
        view.dispatch({ selection: { anchor: at.from, head: at.to }, scrollIntoView: true });
      }
      // Bring the result along: a note over the editor, until closed.
      let note = target.parentElement.querySelector('.jump-note');
      if (!note) {
        note = document.createElement('div');
        note.className = 'jump-note';
        target.parentElement.insertBefore(note, target);
      }
      note.innerHTML = '';
      // The result's details keep their lines and columns (a check may set texts side by side).
      const text = document.createElement('span');
      text.className = 'jump-detail';
      text.textContent = `Line ${line}: ${detail || ''}`;
      const close = document.createElement('button');
      close.textContent = '×';
      close.setAttribute('aria-label', 'Close this note');
      close.onclick = () => note.remove();
      note.append(text, close);
      target.dataset.jumpedTo = String(line);
      setTimeout(() => {
        for (const el of target.querySelectorAll('.cm-content > .cm-line')) {
          if (view && lineOf(view, el) === line) el.classList.add('jump-line');
        }
      }, 120);
    }, 250);
  };
}
