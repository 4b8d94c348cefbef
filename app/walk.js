() => {
  // Presentation mode's walk through one turn (issue 34; the bar is app/walk.py's): step 0 shows the
  // whole turn; then the conversation; the prompt message by message, each piece picked out beside
  // the template line that wrote it (provenance's pieces, app/provenance_view.py) and the text after it
  // not yet shown; the output region by region as it streamed (the segments the trace drew) with the
  // key of the parsed message it became; the parsed message. → and ← (or PageDown and PageUp, a
  // presenter's remote) and the bar's buttons step; at the output with no run yet, → runs. Everything
  // is read from the page as it is: no server round trip. The step is kept in the address
  // (`&step=N`), so a share link made while presenting opens here at that step.
  const root = document.documentElement;
  const STORAGE_KEY = 'template-playground/workspace';
  const presenting = () => root.classList.contains('presenting');
  const $ = (s) => document.querySelector(s);
  let steps = [{ kind: 'overview' }];
  let index = 0;
  const asked = parseInt(new URLSearchParams(window.location.search).get('step') || '0', 10) || 0;
  let target = asked > 0 ? asked : null;  // the step the address asked for, until the presenter moves
  // The address asked for a step of the output: one replay is run for it. `autoRun` is the run the
  // output view showed when it was asked for (its id): the step waits for a run after that one.
  let autoRun = null;
  let restoring = false;
  try { restoring = window.location.hash.startsWith('#s=') || !!window.localStorage.getItem(STORAGE_KEY); } catch (e) {}
  document.addEventListener('playground:restored', () => { restoring = false; refresh(); });

  // ----- what the page shows ----------------------------------------------------------------------
  function json(el, name) {
    try { return JSON.parse((el && el.dataset[name]) || 'null'); } catch (e) { return null; }
  }
  function editorText(id) {
    const view = window.playgroundEditorView && window.playgroundEditorView(document.getElementById(id));
    return view ? view.state.doc.toString() : '';
  }
  function messages() {
    try { const list = JSON.parse(editorText('messages-editor')); return Array.isArray(list) ? list : []; } catch (e) { return []; }
  }
  function templateLine(n) {
    const lines = editorText('chat-editor').split('\n');
    return n >= 1 && n <= lines.length ? lines[n - 1].trim() : '';
  }
  const promptText = () => (document.querySelector('#prompt-view .stale-banner') ? null : $('#prompt-view .prompt-text'));
  const running = () => { const stop = $('#stop-button'); return !!stop && !stop.disabled; };
  const ran = () => !!$('#run-stats .stats') && !running();
  const over = () => { const status = $('#run-stats .stat b'); return !!status && /^(done|stopped|failed)$/.test(status.textContent.trim()) && !running(); };
  const runShown = () => { const stream = document.getElementById('stream-view'); return stream ? stream.dataset.run || '' : ''; };

  // The prompt in groups: consecutive pieces of one message (whitespace between two messages goes with
  // the one before), the text before the first message, the generation prompt.
  function promptGroups() {
    const text = promptText();
    if (!text) return [];
    const rows = json(text, 'pieces');
    const spans = [...text.querySelectorAll(':scope > [data-p]')];
    if (!rows || !spans.length) return [{ kind: 'prompt', spans: [...text.children], message: -1, whole: true }];
    const groups = [];
    for (const span of spans) {
      const row = rows[+span.dataset.p] || [0, 0, 0, 0, -1, 0, []];
      const gen = span.classList.contains('gen');
      const current = groups[groups.length - 1];
      const blank = !span.textContent.trim();
      if (current && (current.message === row[4] || (blank && row[4] < 0 && !gen)) && current.gen === gen) current.spans.push(span);
      else groups.push({ kind: 'prompt', spans: [span], message: row[4], gen });
    }
    const first = groups.findIndex((g) => g.message >= 0);
    groups.forEach((g, i) => {
      g.rows = g.spans.map((s) => rows[+s.dataset.p]).filter(Boolean);
      g.where = g.message >= 0 ? 'message' : g.gen ? 'generation' : first < 0 || i < first ? 'before' : 'after';
    });
    return groups;
  }

  // The output in regions: a field's segments from its opening delimiter to its closing one (or while
  // the same field goes on), dropped text, held-back text.
  function outputRegions() {
    const regions = [];
    let open = null;
    for (const seg of document.querySelectorAll('#stream-view .seg')) {
      const field = [...seg.classList].find((c) => /^f\d+$/.test(c)) || '';
      const kind = ['open', 'close', 'body', 'discarded', 'pending'].find((k) => seg.classList.contains(k)) || 'body';
      const group = kind === 'discarded' ? 'dropped' : kind === 'pending' ? 'held' : field;
      if (!open || open.group !== group || open.closed || kind === 'open' && open.spans.length) {
        open = { kind: 'output', group, field, spans: [], closed: false, fromPrompt: !!seg.closest('.from-prompt') };
        regions.push(open);
      }
      open.spans.push(seg);
      if (kind === 'open') open.opener = seg.textContent;
      if (kind === 'close') { open.closer = seg.textContent; open.closed = true; }
    }
    return regions;
  }

  // Read again only when the prompt or the output changed (the page's observer calls `refresh` after
  // every change of the page, a streaming run's updates included).
  const seen = { text: null, pieces: null, groups: [], output: null, regions: [], version: 0 };
  function compute() {
    const text = promptText();
    const pieces = text ? text.dataset.pieces || '' : null;
    const stale = seen.groups.length && seen.groups[0].spans.length && !seen.groups[0].spans[0].isConnected;
    if (text !== seen.text || pieces !== seen.pieces || stale) {  // (the page may keep the element, not its pieces)
      Object.assign(seen, { text, pieces, groups: promptGroups() });
      seen.version++;
    }
    const stream = document.getElementById('stream-view');
    const stable = $('#stream-view .inc-stable');
    const output = ran() && stable ? `${stream.dataset.run}:${stable.childElementCount}:${stable.lastChild && stable.lastChild.textContent.length}` : '';
    if (output !== seen.output) {
      Object.assign(seen, { output, regions: output ? outputRegions() : [] });
      seen.version++;
    }
    const list = [{ kind: 'overview' }, { kind: 'conversation' }, ...seen.groups];
    if (seen.regions.length) list.push(...seen.regions, { kind: 'message' });
    else list.push({ kind: 'run' });
    return list;
  }

  // ----- showing a step -----------------------------------------------------------------------------
  const MARKS = ['walk-on', 'walk-later', 'walk-panel'];
  function clear() {
    for (const cls of MARKS) for (const el of document.querySelectorAll(`.${cls}`)) el.classList.remove(cls);
    for (const el of document.querySelectorAll('[data-walk-line]')) delete el.dataset.walkLine;
    for (const el of document.querySelectorAll('.walk-field')) el.classList.remove('walk-field', ...fieldClasses(el));
    fieldsShown = [];
  }
  const fieldClasses = (el) => [...el.classList].filter((c) => /^f\d+$/.test(c));
  function later(elements, after) {
    // Everything after `after` (in the page's order) is not shown yet.
    let past = false;
    for (const el of elements) {
      if (past) el.classList.add('walk-later');
      if (el === after) past = true;
    }
  }
  function card(message) {
    return document.querySelector(`#conversation .conv-message[data-message="${message}"]`);
  }
  function reveal(el, box) {
    // Scroll `box` (never the page) so that `el` is in view.
    if (!el || !box) return;
    const a = el.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (a.top < b.top || a.bottom > b.bottom) box.scrollTop += a.top - b.top - Math.max(8, (b.height - a.height) / 3);
  }
  function fieldName(cls) {
    const chip = document.querySelector(`#legend .chip.${cls}`);
    return chip ? chip.textContent : 'a field';
  }
  // The parsed message's lines of the fields shown (provenance.js reads its keys), each in its colour.
  let fieldsShown = [];
  function markFields() {
    const { view, fields } = window.playgroundMessageFields ? window.playgroundMessageFields() : { view: null, fields: [] };
    if (!view) return;
    const spans = fields.filter((f) => fieldsShown.includes(f.cls));
    for (const el of document.querySelectorAll('#message-view .cm-line')) {
      let n = null;
      try { n = view.state.doc.lineAt(view.posAtDOM(el)).number; } catch (e) {}
      const hit = spans.find((f) => n !== null && f.from <= n && n <= f.to);
      const want = hit ? hit.cls : null;
      if (want && el.classList.contains('walk-field') && el.classList.contains(want)) continue;
      if (!want && !el.classList.contains('walk-field')) continue;
      el.classList.remove('walk-field', ...fieldClasses(el));
      if (want) el.classList.add('walk-field', want);
    }
  }

  function caption(parts) {
    // The caption's text: plain strings and [code] pieces (a template's line is an author's text: never HTML).
    const box = $('#walk-box .walk-caption');
    const said = JSON.stringify(parts);
    if (!box || box.dataset.said === said) return;
    box.dataset.said = said;
    box.replaceChildren(...parts.map((p) => {
      if (typeof p === 'string') return document.createTextNode(p);
      const code = document.createElement('code');
      code.textContent = p[0];
      return code;
    }));
  }
  function lineParts(rows) {
    // The template lines that wrote these pieces, in order, each with its text.
    const lines = [];
    for (const row of rows) if (row[0] && !lines.includes(row[0])) lines.push(row[0]);
    const parts = [];
    lines.slice(0, 3).forEach((n, i) => {
      const text = templateLine(n);
      parts.push(i ? ' · line ' : 'line ', `${n} `, [text.length > 70 ? `${text.slice(0, 69)}…` : text]);
    });
    if (lines.length > 3) parts.push(` · and ${lines.length - 3} more`);
    return parts.length ? parts : ['a line provenance could not place'];
  }
  function roleOf(message) {
    const m = messages()[message];
    return m && typeof m.role === 'string' ? m.role : 'message';
  }

  function describe(step) {
    const all = messages();
    switch (step.kind) {
      case 'overview':
        return ['The whole turn. → walks through it: the conversation, the prompt message by message, the output region by region, the parsed message.'];
      case 'conversation':
        return [`The conversation: ${all.length} message${all.length === 1 ? '' : 's'} (${all.map((m) => (m && m.role) || '?').join(', ')}). `
          + 'The chat template turns it into the prompt →'];
      case 'prompt': {
        if (step.whole) return ['The prompt, exactly what the model reads (where each character came from is not shown for it).'];
        const head = {
          message: `Message ${step.message + 1} (${roleOf(step.message)}) becomes the marked text, written by `,
          before: 'Before the first message the template writes the marked text, by ',
          after: 'After the messages the template writes the marked text, by ',
          generation: 'The generation prompt: the template opens the assistant\'s turn, where the model starts writing, by ',
        }[step.where];
        return [head, ...lineParts(step.rows)];
      }
      case 'run':
        return [running() ? 'The model is writing…' : 'Next, the model writes its answer: → runs it (or ▶ Run).'];
      case 'output': {
        const regions = steps.filter((s) => s.kind === 'output');
        const which = `Region ${regions.indexOf(step) + 1} of ${regions.length}: `;
        if (step.group === 'dropped') return [which, 'dropped — no region of the response template claimed this text, so it is not in the message.'];
        if (step.group === 'held') return [which, 'held back — this text may still become a delimiter, so the parser waits.'];
        const parts = [which, [fieldName(step.field)]];
        if (step.fromPrompt) parts.push(', opened by the prompt');
        if (step.opener) parts.push(', opened by ', [step.opener]);
        if (step.closer) parts.push(', closed by ', [step.closer]);
        const sites = json($('#prompt-view .prompt-text'), 'fields') || {};
        const site = sites[step.field] && (sites[step.field].body || sites[step.field].open);
        parts.push(` → the message's ${fieldName(step.field)}`);
        if (site) parts.push(` (the response template's key on line ${site[0]})`);
        return [...parts, '.'];
      }
      case 'message': {
        const names = [...new Set(steps.filter((s) => s.kind === 'output' && s.field).map((s) => fieldName(s.field)))];
        return ['The parsed message: ', ...names.flatMap((n, i) => (i ? [', ', [n]] : [[n]])), ' — each region\'s text under its key, what parse_response returns.'];
      }
    }
    return [''];
  }

  function draw(step) {
    clear();
    if (window.playgroundPrompt) window.playgroundPrompt.hold(step.kind !== 'overview');
    const text = promptText();
    const prompt = document.getElementById('prompt-view');
    const segs = [...document.querySelectorAll('#stream-view .seg, #stream-view .error-badge')];
    if (step.kind === 'overview') {
      if (window.playgroundPrompt) window.playgroundPrompt.stickToEnd();
      return;
    }
    if (step.kind === 'conversation') {
      const box = document.getElementById('present-conversation');
      if (box) box.classList.add('walk-panel');
      for (const el of document.querySelectorAll('#conversation .conv-message')) el.classList.add('walk-on');
      if (text) later([...text.children], null);
      for (const el of segs) el.classList.add('walk-later');
      return;
    }
    if (step.kind === 'prompt') {
      if (!text) return;
      document.getElementById('prompt-panel').classList.add('walk-panel');
      let line = null;
      for (const span of step.spans) {
        span.classList.add('walk-on');
        const row = step.rows && step.rows[step.spans.indexOf(span)];
        if (row && row[0] && row[0] !== line && span.textContent.trim()) { span.dataset.walkLine = String(row[0]); line = row[0]; }
      }
      later([...text.children], step.spans[step.spans.length - 1]);
      for (const el of segs) el.classList.add('walk-later');
      const own = step.message >= 0 ? card(step.message) : null;
      if (own) { own.classList.add('walk-on'); reveal(own, document.getElementById('present-conversation')); }
      if (window.playgroundPrompt && prompt) {
        const a = step.spans[0].getBoundingClientRect(), b = prompt.getBoundingClientRect();
        window.playgroundPrompt.scrollTo(prompt.scrollTop + a.top - b.top - Math.max(8, b.height / 4));
      }
      return;
    }
    if (window.playgroundPrompt) window.playgroundPrompt.stickToEnd();
    if (step.kind === 'run') {
      document.getElementById('output-panel').classList.add('walk-panel');
      return;
    }
    if (step.kind === 'output') {
      document.getElementById('output-panel').classList.add('walk-panel');
      for (const el of step.spans) el.classList.add('walk-on');
      later(segs, step.spans[step.spans.length - 1]);
      reveal(step.spans[0], $('#stream-view .inc-scroll'));
      if (step.field && step.group === step.field) fieldsShown = [step.field];
      markFields();
      return;
    }
    if (step.kind === 'message') {
      const box = document.getElementById('message-view');
      if (box) box.classList.add('walk-panel');
      fieldsShown = [...new Set(steps.filter((s) => s.kind === 'output' && s.field && s.group === s.field).map((s) => s.field))];
      markFields();
    }
  }

  let drawn = null;  // what the marks were drawn for: the steps' version and the step
  let linked = null;  // "Link to this step" said where the link is: kept until the walk moves
  function show(to) {
    index = Math.max(0, Math.min(to, steps.length - 1));
    const step = steps[index];
    const now = `${seen.version}|${index}|${running()}`;
    if (now === drawn) {
      if (step.kind === 'output' || step.kind === 'message') markFields();  // CodeMirror redraws lines as it scrolls
      return;
    }
    drawn = now;
    const count = $('#walk-box .walk-count');
    const counted = index ? `Step ${index} of ${steps.length - 1}` : `${steps.length - 1} steps`;
    if (count && count.textContent !== counted) count.textContent = counted;
    for (const b of document.querySelectorAll('#walk-box .walk-button')) {
      b.disabled = b.dataset.walk === '-1' ? index === 0 : index === steps.length - 1 && step.kind !== 'run';
    }
    caption(linked && linked.index === index ? linked.parts : describe(step));
    draw(step);
    if (presenting()) {
      const url = new URL(window.location.href);
      if (index) url.searchParams.set('step', String(index)); else url.searchParams.delete('step');
      if (url.href !== window.location.href) window.history.replaceState(window.history.state, '', url);
    }
  }

  function go(by) {
    if (!presenting()) return;
    linked = null;  // the step's own caption again
    target = null;  // the presenter walks from here
    const step = steps[index];
    if (by > 0 && step.kind === 'run') {
      const run = $('#run-button');
      if (run && !run.disabled && !running()) run.click();
      return;
    }
    show(index + by);
  }

  // ----- the steps follow the page --------------------------------------------------------------------
  function refresh() {
    if (!presenting()) {
      if (drawn !== null) {
        clear();
        drawn = null;
        index = 0;
        target = null;
        if (window.playgroundPrompt) window.playgroundPrompt.hold(false);
      }
      return;
    }
    steps = compute();
    const explained = promptText() && !promptText().dataset.explain;  // (its pieces come right after the prompt)
    if (target !== null && !restoring && explained) {
      const runAt = steps.findIndex((s) => s.kind === 'run');  // a step at or past the run is in its output
      const wantsOutput = runAt >= 0 && target >= runAt;
      const replay = /recorded|simulated/i.test(($('#runner-choice input') || {}).value || '');
      const run = $('#run-button');
      if (wantsOutput && replay && autoRun === null && !running() && run && !run.disabled) {
        autoRun = runShown();  // (only once pressed: a button still disabled while the page restores is tried again)
        run.click();
      }
      // A step of the output waits for the replay to be over: the regions of the run shown before it,
      // or of the replay still under way, are not (all) the step's yet.
      const replayed = autoRun !== null && runShown() !== autoRun && over() && steps.some((s) => s.kind === 'output');
      // The asked step stays asked for until the presenter moves: Gradio can run the restore's
      // `then` before it has drawn the restored prompt (seen on a busy machine), so the steps may
      // still be the first view's here, and change when the restored prompt is drawn.
      if (!wantsOutput || !replay || replayed) index = target;
    }
    show(index);
  }
  window.playgroundAfterChange(refresh);
  document.addEventListener('playground:present', (event) => {
    if (!event.detail.on) {
      const url = new URL(window.location.href);
      url.searchParams.delete('step');
      window.history.replaceState(window.history.state, '', url);
    }
    requestAnimationFrame(refresh);
  });

  document.addEventListener('click', (event) => {
    const button = event.target.closest('#walk-box .walk-button[data-walk]');
    if (button) go(parseInt(button.dataset.walk, 10));
    if (event.target.closest('#walk-box .walk-link')) link();
  });
  // "Link to this step": the page's Share link (its address keeps `?present=1&step=N`), copied, and
  // shown in the caption (to copy by hand where the clipboard is not allowed).
  function link() {
    const box = $('#share-link input'), share = $('#share-button');
    if (!box || !share) return;
    const before = box.value;
    share.click();
    const started = Date.now();
    const wait = () => {
      if (box.value && box.value !== before && box.value.includes('#s=')) {
        const done = (copied) => {
          linked = { index, parts: [copied ? `Copied: a link to step ${index}: ` : `A link to step ${index}: `, [box.value]] };
          caption(linked.parts);
        };
        if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(box.value).then(() => done(true), () => done(false));
        else done(false);
      } else if (Date.now() - started < 15000) setTimeout(wait, 100);
    };
    wait();
  }
  document.addEventListener('keydown', (event) => {
    if (!presenting() || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const t = event.target;
    if (t.closest && t.closest('input, textarea, select, [contenteditable="true"], .cm-editor, [role="listbox"]')) return;
    const by = { ArrowRight: 1, PageDown: 1, ArrowLeft: -1, PageUp: -1 }[event.key];
    if (!by) return;
    event.preventDefault();
    go(by);
  });
  // For tests and the curious: the walk as it stands.
  window.playgroundWalk = () => ({ index, steps: steps.map((s) => s.kind + (s.where ? `:${s.where}` : '')) });
}
