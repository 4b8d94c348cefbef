() => {
  // The conversation editor: the case's messages as cards (role, content or content parts,
  // reasoning, tool calls, a tool result's call id and name), added, removed and reordered, beside
  // the JSON view they are kept in step with. The JSON view (the `messages` code editor) stays the
  // one value the server reads: every edit here is written into it as JSON, as if typed, so it goes
  // through the same checked path (app/case_form.py, engine/inputs.py). The engine says what a
  // message may hold (`engine.cases.message_shape`, in data-shape); keys the editor does not show
  // are kept as they are. While the JSON does not parse, the cards show the last version that did,
  // and cannot be edited, so nothing typed in the JSON view is overwritten.
  //
  // Budgets (issue 29): a case may hold thousands of messages (a share link of a few kB holds 9,000
  // empty ones), so the editor draws a page of PAGE cards at a time, with the pager to reach the rest,
  // and no card measures itself: textareas size to their text in CSS (`field-sizing: content`), or,
  // where a browser lacks it, all of a page's in one read after one write. Drawing every card and
  // sizing each with a forced layout froze the tab for 75 s on 2,000 messages.
  const VIEW_KEY = 'template-playground/messages-view';
  const PAGE = 50;
  let first = 0;  // the first message drawn (a multiple of PAGE)
  const root = document.documentElement;
  let shape = null;
  let messages = null;   // what the cards show (the last list that parsed)
  let lastText = null;   // the JSON text last read from, or written to, the JSON view
  let lastDoc = null;    // CodeMirror's (immutable) document last read: the same object, nothing to read
  let broken = false;

  const box = () => document.getElementById('conversation');
  const jsonEditor = () => document.getElementById('messages-editor');
  const view = () => window.playgroundEditorView && window.playgroundEditorView(jsonEditor());

  // ----- which view: Conversation or JSON ---------------------------------------------------------
  function showView(which) {
    root.classList.toggle('messages-json', which === 'json');
    for (const b of document.querySelectorAll('.view-switch button')) b.setAttribute('aria-pressed', String(b.dataset.view === which));
    try { window.localStorage.setItem(VIEW_KEY, which); } catch (e) {}
    if (which !== 'json') read();
  }
  document.addEventListener('click', (event) => {
    const pick = event.target.closest('.view-switch button');
    if (pick) showView(pick.dataset.view);
  });
  document.addEventListener('playground:messages-view', (event) => showView(event.detail.view));
  try { if (window.localStorage.getItem(VIEW_KEY) === 'json') showView('json'); } catch (e) {}

  // ----- reading and writing the JSON view ---------------------------------------------------------
  function read() {
    const editor = view();
    const el = box();
    if (!editor || !el) return;
    if (!shape) shape = JSON.parse(el.dataset.shape);
    // While the JSON view is the one shown, the cards are drawn when the conversation is shown again.
    if (el.dataset.ready && root.classList.contains('messages-json') && !root.classList.contains('presenting')) return;
    if (editor.state.doc === lastDoc && el.dataset.ready) return;
    lastDoc = editor.state.doc;
    const text = lastDoc.toString();
    if (text === lastText && el.dataset.ready) return;
    lastText = text;
    let parsed;
    try { parsed = JSON.parse(text); } catch (e) { parsed = undefined; }
    broken = !Array.isArray(parsed);
    if (!broken) messages = parsed;
    render();
  }

  function write() {
    const editor = view();
    if (!editor || broken) return;
    const text = JSON.stringify(messages, null, 2);
    const old = editor.state.doc.toString();
    lastText = text;
    if (text === old) return;
    // Only the part that changed, so the JSON view keeps its scroll position and a fine-grained undo.
    let from = 0;
    while (from < old.length && from < text.length && old[from] === text[from]) from++;
    let oldEnd = old.length, newEnd = text.length;
    while (oldEnd > from && newEnd > from && old[oldEnd - 1] === text[newEnd - 1]) { oldEnd--; newEnd--; }
    // A user event, so Gradio sends it to the server as an edit of the messages (its `input`).
    editor.dispatch({ changes: { from, to: oldEnd, insert: text.slice(from, newEnd) }, userEvent: 'input.type' });
    lastDoc = editor.state.doc;
  }

  // ----- drawing the cards ---------------------------------------------------------------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'value') el.value = v;
      else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
    return el;
  }

  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const jsonText = (v) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));
  // Textareas as tall as their text (up to 320px): in CSS where the browser can (no script, no layout
  // read); else measured together, once per drawing: every height written, then every height read.
  const SIZED = window.CSS && CSS.supports && CSS.supports('field-sizing', 'content');
  const unsized = [];
  function fitAll() {
    const areas = unsized.splice(0).filter((area) => area.isConnected);
    for (const area of areas) area.style.height = 'auto';
    const heights = areas.map((area) => area.scrollHeight);
    areas.forEach((area, k) => { area.style.height = `${Math.min(heights[k] + 2, 320)}px`; });
  }
  function fit(area) {
    if (SIZED) return;
    if (!unsized.length) requestAnimationFrame(fitAll);
    unsized.push(area);
  }

  function textArea(label, value, onInput, attrs) {
    const area = h('textarea', { rows: 1, 'aria-label': label, spellcheck: 'false', ...(attrs || {}), value: value ?? '',
      oninput: (e) => { fit(e.target); onInput(e.target.value, e.target); } });
    fit(area);
    return area;
  }

  function field(label, control, extra) {
    return h('div', { class: 'conv-field' }, h('span', { class: 'conv-label', 'aria-hidden': 'true' }, label), control, extra || null);
  }

  // A JSON value typed as text: written parsed when it parses; otherwise kept as the text typed (the
  // template then gets a string) and said so, so nothing typed is lost.
  function jsonArea(label, value, set, keepString) {
    const note = h('div', { class: 'conv-note', role: 'status' });
    const area = textArea(label, jsonText(value), (text) => {
      let parsed, error = null;
      try { parsed = JSON.parse(text); } catch (e) { error = e.message; }
      if (keepString) set(text);
      else if (error === null) set(parsed);
      else set(text);
      note.textContent = error !== null && !keepString ? `Not valid JSON (${error}): kept as the text typed, so the template gets a string.` : '';
    }, { class: 'conv-json' });
    return [area, note];
  }

  // A button named by its text (the message's fieldset gives the context), or, for an icon, by `label`.
  function button(text, label, onclick, cls) {
    const icon = cls === 'conv-icon';
    return h('button', { type: 'button', class: cls || 'conv-button', 'aria-label': icon ? label : null, title: label, onclick }, text);
  }

  function reasoningKey(message) {
    return shape.reasoning.find((k) => k in message) || shape.reasoning[0];
  }

  function contentEditor(message, i) {
    const who = `message ${i + 1}`;
    const content = message.content;
    if (Array.isArray(content)) {
      const parts = content.map((part, p) => partEditor(content, part, p, who));
      const type = h('select', { 'aria-label': `Type of the part to add to ${who}` },
        Object.keys(shape.parts).map((t) => h('option', { value: t }, t)));
      const add = button('+ part', `Add a content part to ${who}`, () => {
        const t = type.value;
        content.push(t === 'text' ? { type: 'text', text: '' } : { type: t, [shape.parts[t][0]]: '' });
        const added = `[data-part="${who}-${content.length - 1}"]`;
        change({ focus: `${added} textarea, ${added} input` });
      });
      const plain = content.length === 1 && isObject(content[0]) && content[0].type === 'text'
        ? button('Use plain text', `Make the content of ${who} plain text`, () => { message.content = content[0].text ?? ''; change(); })
        : null;
      return h('div', { class: 'conv-parts' }, h('span', { class: 'conv-label' }, 'Content parts'), parts,
        h('div', { class: 'conv-row' }, type, add, plain));
    }
    if (content !== undefined && content !== null && typeof content !== 'string') {
      return field('Content (JSON)', jsonArea(`Content of ${who} (JSON)`, content, (v) => { message.content = v; write(); }));
    }
    const area = textArea(`Content of ${who}`, content, (text) => { message.content = text; write(); }, { class: 'conv-content' });
    const parts = button('Use content parts', `Make the content of ${who} a list of parts (text, image, audio, video)`, () => {
      message.content = [{ type: 'text', text: message.content ?? '' }];
      change();
    });
    return field('Content', area, h('div', { class: 'conv-row' }, parts));
  }

  function partEditor(content, part, p, who) {
    const name = `part ${p + 1} of ${who}`;
    const remove = button('✕', `Remove ${name}`, () => { content.splice(p, 1); change(); }, 'conv-icon');
    if (!isObject(part) || !(part.type in shape.parts)) {
      return h('div', { class: 'conv-part' }, h('span', { class: 'conv-other' },
        `${isObject(part) ? `A part of type “${part.type}”` : 'A part that is not an object'}: edit it in the JSON view.`), remove);
    }
    const type = h('select', { 'aria-label': `Type of ${name}`, onchange: (e) => {
      const t = e.target.value;
      const old = part.type === 'text' ? part.text : part[sourceKey(part)];
      content[p] = t === 'text' ? { type: 'text', text: old ?? '' } : { type: t, [shape.parts[t][0]]: old ?? '' };
      change({ focus: `[data-part="${who}-${p}"] select` });
    } }, Object.keys(shape.parts).map((t) => h('option', { value: t, selected: t === part.type }, t)));
    let value;
    if (part.type === 'text') {
      value = textArea(`Text of ${name}`, part.text, (text) => { part.text = text; write(); });
    } else {
      const key = sourceKey(part);
      const keys = h('select', { 'aria-label': `Where ${name} is given`, onchange: (e) => {
        const v = part[key];
        delete part[key];
        part[e.target.value] = v ?? '';
        change({ focus: `[data-part="${who}-${p}"] input` });
      } }, shape.parts[part.type].map((k) => h('option', { value: k, selected: k === key }, k)));
      value = h('span', { class: 'conv-source' }, keys, h('input', { type: 'text', 'aria-label': `${key} of ${name}`,
        value: typeof part[key] === 'string' ? part[key] : JSON.stringify(part[key] ?? ''),
        oninput: (e) => { part[key] = e.target.value; write(); } }));
    }
    return h('div', { class: 'conv-part', 'data-part': `${who}-${p}` }, type, value, remove);
  }

  function sourceKey(part) {
    return shape.parts[part.type].find((k) => k in part) || shape.parts[part.type][0];
  }

  function toolCallsEditor(message, i) {
    const who = `message ${i + 1}`;
    const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
    const cards = calls.map((call, c) => {
      const name = `tool call ${c + 1} of ${who}`;
      const remove = button('✕', `Remove ${name}`, () => {
        calls.splice(c, 1);
        if (!calls.length) delete message.tool_calls;
        change();
      }, 'conv-icon');
      if (!isObject(call)) return h('div', { class: 'conv-call' }, h('span', { class: 'conv-other' }, 'Not an object: edit it in the JSON view.'), remove);
      const fn = isObject(call.function) ? call.function : call;  // {"function": {name, arguments}} or flat
      const nameInput = h('input', { type: 'text', class: 'conv-call-name', 'aria-label': `Name of ${name}`, value: fn.name ?? '',
        oninput: (e) => { fn.name = e.target.value; write(); } });
      // The call's id (many templates write or require one: Mistral's, 9 letters or digits); empty: no id.
      const idInput = h('input', { type: 'text', class: 'conv-call-id', 'aria-label': `Id of ${name}`, placeholder: 'id',
        spellcheck: 'false', value: typeof call.id === 'string' ? call.id : (call.id === undefined ? '' : JSON.stringify(call.id)),
        oninput: (e) => { if (e.target.value) call.id = e.target.value; else delete call.id; write(); } });
      const [args, note] = jsonArea(`Arguments of ${name} (JSON)`, fn.arguments ?? {}, (v) => { fn.arguments = v; write(); },
        typeof fn.arguments === 'string');
      return h('div', { class: 'conv-call', 'data-call': String(c) },
        h('div', { class: 'conv-row' }, h('span', { class: 'conv-label' }, `Tool call ${c + 1}`), nameInput, idInput, remove),
        field(typeof fn.arguments === 'string' ? 'Arguments (a JSON string)' : 'Arguments (JSON)', args, note));
    });
    const add = button('+ tool call', `Add a tool call to ${who}`, () => {
      if (!Array.isArray(message.tool_calls)) message.tool_calls = [];
      message.tool_calls.push({ type: 'function', function: { name: '', arguments: {} } });
      change({ focus: `[data-message="${i}"] [data-call="${message.tool_calls.length - 1}"] .conv-call-name` });
    });
    return h('div', { class: 'conv-calls' }, cards, h('div', { class: 'conv-row' }, add));
  }

  function messageCard(message, i) {
    const who = `message ${i + 1}`;
    const n = messages.length;
    const tools = h('span', { class: 'conv-tools' },
      button('↑', `Move ${who} up`, () => move(i, -1), 'conv-icon'),
      button('↓', `Move ${who} down`, () => move(i, 1), 'conv-icon'),
      button('✕', `Remove ${who}`, () => {
        messages.splice(i, 1);
        change({ show: Math.min(i, n - 2), focus: `[data-message="${Math.min(i, n - 2)}"] .conv-tools button:last-child, .conv-add` });
      }, 'conv-icon'));
    if (!isObject(message)) {
      return h('fieldset', { class: 'conv-message', 'data-message': String(i) }, h('legend', {}, `Message ${i + 1}`),
        h('div', { class: 'conv-head' }, h('span', { class: 'conv-other' }, 'Not a message object: edit it in the JSON view.'), tools));
    }
    const roles = shape.roles.includes(message.role) || typeof message.role !== 'string' ? shape.roles : [...shape.roles, message.role];
    const role = h('select', { class: 'conv-role', 'aria-label': `Role of ${who}`, onchange: (e) => {
      message.role = e.target.value;
      change({ focus: `[data-message="${i}"] .conv-role` });
    } }, roles.map((r) => h('option', { value: r, selected: r === message.role }, r)));
    const parts = [h('div', { class: 'conv-head' }, role, tools), contentEditor(message, i)];
    const rKey = reasoningKey(message);
    if (message.role === 'assistant' || rKey in message) {
      parts.push(field(`Reasoning (${rKey})`, textArea(`Reasoning of ${who} (${rKey})`, typeof message[rKey] === 'string' ? message[rKey] : '',
        (text) => { if (text) message[rKey] = text; else delete message[rKey]; write(); })));
    }
    if (message.role === 'assistant' || 'tool_calls' in message) parts.push(toolCallsEditor(message, i));
    if (message.role === 'tool' || 'tool_call_id' in message) {
      for (const key of ['tool_call_id', 'name']) {
        parts.push(field(key, h('input', { type: 'text', 'aria-label': `${key} of ${who}`, value: message[key] ?? '',
          oninput: (e) => { if (e.target.value) message[key] = e.target.value; else delete message[key]; write(); } })));
      }
    }
    const shown = new Set(['role', 'content', 'tool_calls', 'tool_call_id', 'name', ...shape.reasoning]);
    const others = Object.keys(message).filter((k) => !shown.has(k));
    if (others.length) parts.push(h('div', { class: 'conv-other' }, `Also: ${others.join(', ')} (kept; edit in the JSON view)`));
    return h('fieldset', { class: 'conv-message', 'data-message': String(i), 'data-role': String(message.role ?? '') },
      h('legend', {}, `Message ${i + 1}`), parts);
  }

  function move(i, by) {
    const j = i + by;
    if (j < 0 || j >= messages.length) return;
    [messages[i], messages[j]] = [messages[j], messages[i]];
    change({ show: j, focus: `[data-message="${j}"] .conv-tools button:nth-child(${by < 0 ? 1 : 2})` });
  }

  function addMessage() {
    const last = messages.length ? messages[messages.length - 1] : null;
    const next = last && isObject(last) && last.role === 'user' ? 'assistant' : 'user';
    messages.push({ role: next, content: '' });
    change({ show: messages.length - 1, focus: `[data-message="${messages.length - 1}"] .conv-content` });
  }

  function change(options) {
    write();
    if (options && options.show !== undefined) first = pageOf(options.show);
    render(options && options.focus);
  }

  const pageOf = (index) => Math.max(0, Math.floor(index / PAGE) * PAGE);

  function pager(n) {
    // Which page of cards is drawn, and the way to the others (only when there are more than a page).
    if (n <= PAGE) return null;
    const last = Math.min(first + PAGE, n);
    const go = (to) => () => { first = pageOf(Math.min(Math.max(to, 0), n - 1)); render('.conv-pager button:not([disabled])'); };
    const nav = (text, label, to, off) => h('button', { type: 'button', class: 'conv-button', title: label, 'aria-label': label,
      disabled: off, onclick: go(to) }, text);
    return h('div', { class: 'conv-pager conv-row', role: 'navigation', 'aria-label': 'Pages of messages' },
      h('span', { class: 'conv-count' }, `Messages ${first + 1}–${last} of ${n.toLocaleString('en')}` +
        (n > last ? ` (${(n - last).toLocaleString('en')} more…)` : '')),
      nav('First', 'The first page of messages', 0, first === 0),
      nav('◂ Previous', `Messages ${Math.max(first - PAGE, 0) + 1}–${first}`, first - PAGE, first === 0),
      nav('Next ▸', `Messages ${last + 1}–${Math.min(last + PAGE, n)}`, last, last >= n),
      nav('Last', 'The last page of messages', n - 1, last >= n));
  }

  function render(focus) {
    const el = box();
    if (!el || !messages && !broken) return;
    el.dataset.ready = '1';
    const banner = broken
      ? h('div', { class: 'conv-banner', role: 'status' }, messages
        ? 'The JSON view does not hold a valid list of messages (its diagnostic is under this panel). Fix it there; '
          + 'until then this shows the last version that was valid, and cannot be edited.'
        : 'The JSON view does not hold a valid list of messages (its diagnostic is under this panel); fix it there.')
      : null;
    const all = messages || [];
    first = Math.min(first, pageOf(all.length - 1));
    const list = h('fieldset', { class: 'conv-list', disabled: broken },
      h('legend', { class: 'conv-hidden' }, 'Messages'),
      pager(all.length),
      all.slice(first, first + PAGE).map((message, k) => messageCard(message, first + k)),
      all.length > first + PAGE ? pager(all.length) : null,
      h('div', { class: 'conv-row' }, button('+ Message', 'Add a message', addMessage, 'conv-button conv-add')));
    el.replaceChildren(...[banner, list].filter(Boolean));
    el.dataset.count = String((messages || []).length);
    el.dataset.broken = String(broken);
    if (focus) {
      const target = el.querySelector(focus);
      if (target) target.focus();
    }
  }

  // ----- presentation mode: the conversation moves into the workbench -------------------------------
  function place() {
    const el = box();
    const slot = document.querySelector('#present-conversation .present-slot');
    const home = document.querySelector('#conversation-box .view-switch');
    if (!el || !slot || !home) return;
    if (root.classList.contains('presenting')) { if (el.parentElement !== slot) slot.append(el); }
    else if (el.previousElementSibling !== home) home.after(el);
  }
  document.addEventListener('playground:present', () => { place(); read(); });

  // The JSON view changes when the author types in it, or the server shows another case or preset.
  window.playgroundAfterChange(() => { place(); read(); });
}
