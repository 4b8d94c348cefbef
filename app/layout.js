() => {
  // The prompt in full view (issue 34): what the model reads is what the page is for, so the prompt
  // takes the room it needs in the column it shares with the output, and the end of it (the last
  // messages and the generation prompt: where the lesson is) is in view.
  // - The split follows what is on screen: before a run the output needs little room and the prompt
  //   grows with its text (up to what the column holds); after a run the two share it.
  // - Presentation mode fills the window below the toolbar and sets the prompt's type as large as
  //   lets all of it fit (else the lesson: from the last user message to the end), between TYPE.
  // - A prompt longer than its box opens scrolled to its end, and stays there while it changes unless
  //   the reader scrolled up; "earlier text above" (and "later text below") say there is more.
  // Narrow screens keep their own one-column order (style.css): none of this applies there.
  const root = document.documentElement;
  const NARROW = window.matchMedia('(max-width: 1100px)');
  const GAP = 8;  // between the prompt and the output (the column's gap in style.css)
  const TYPE = [1.15, 1.6];  // presentation mode's prompt type, rem: the whole prompt, or the lesson, at this size
  const LESSON_TYPE = 0.8;  // ... smaller (down to the page's own) only as far as the lesson then fits (tool results)
  const OUTPUT_MIN = 130;  // the output's text box, before a run, on the page (two views of at least 120 px)
  const OUTPUT_COMPACT = 44;  // ... in presentation mode after a run, at the least (before one: its title alone)
  const PROMPT_MIN = 140;  // the prompt's text box, however short the prompt (about seven lines)
  const $ = (s) => document.querySelector(s);

  // ----- which end of the prompt is in view ---------------------------------------------------------
  let stick = true;  // keep the end in view (false once the reader scrolled up, or while the walk shows a step)
  let wanted = null;  // a scroll position this script set (its scroll event is not the reader's)
  const view = () => document.getElementById('prompt-view');
  const atEnd = (el) => el.scrollHeight - el.clientHeight - el.scrollTop <= 2;
  function scrollPrompt(top) {
    const el = view();
    if (!el) return;
    const to = Math.max(0, Math.min(Math.round(top), el.scrollHeight - el.clientHeight));
    if (Math.abs(el.scrollTop - to) < 1) return;
    wanted = to;
    el.scrollTop = to;
  }
  function keepEnd() {
    const el = view();
    if (el && stick) scrollPrompt(el.scrollHeight);
    edges();
  }
  // The walk (walk.js) scrolls the prompt to the step it shows, and gives the end back at step 0.
  // While it shows a step, the prompt's size and type stay as they were (the step's marks would
  // otherwise refit the type at every step).
  let held = null;  // the prompt text's height when the walk started
  window.playgroundPrompt = {
    scrollTo: (top) => { stick = false; scrollPrompt(top); edges(); },
    stickToEnd: () => { stick = true; keepEnd(); },
    hold: (on) => { const el = view(); held = on && el ? (held !== null ? held : content(el)) : null; },
  };
  document.addEventListener('scroll', (event) => {
    const el = event.target;
    if (el.id !== 'prompt-view') return;
    if (wanted !== null && Math.abs(el.scrollTop - wanted) < 2) wanted = null;
    else stick = atEnd(el);
    edges();
  }, true);
  // Another preset or case (or a share link) opens at its end again.
  document.addEventListener('click', (event) => {
    if (event.target.closest('#preset-picker [role=option], #case-picker [role=option]')) stick = true;
    const edge = event.target.closest('.prompt-edge button');
    if (edge) {
      const el = view();
      el.scrollTo({ top: edge.dataset.to === 'end' ? el.scrollHeight : 0, behavior: 'smooth' });
    }
  });
  document.addEventListener('playground:restored', () => { stick = true; });

  // "↑ Earlier text above" / "↓ Later text below": sticky over the prompt's top and bottom edges
  // (zero-height, so they take no line from the text), shown while there is text that way.
  function edge(el, where) {
    let box = el.querySelector(`:scope > .prompt-edge.${where}`);
    if (!box) {
      box = document.createElement('div');
      box.className = `prompt-edge ${where}`;
      box.hidden = true;
      const button = document.createElement('button');
      button.type = 'button';
      button.dataset.to = where === 'above' ? 'start' : 'end';
      box.append(button);
      if (where === 'above') el.prepend(box); else el.append(box);
    }
    return box;
  }
  function edges() {
    const el = view();
    if (!el) return;
    const above = edge(el, 'above'), below = edge(el, 'below');
    const line = parseFloat(getComputedStyle(el.querySelector('.prompt-text') || el).lineHeight) || 20;
    const over = el.scrollTop, under = el.scrollHeight - el.clientHeight - el.scrollTop;
    show(above, over > 2, `↑ Earlier text above (${Math.max(1, Math.round(over / line))} lines)`);
    show(below, under > 2, `↓ Later text below (${Math.max(1, Math.round(under / line))} lines)`);
  }
  function show(box, on, text) {
    if (box.hidden !== !on) box.hidden = !on;
    // A hidden note keeps no text: what it counted is gone once the view scrolls or changes.
    const button = box.firstChild, said = on ? text : '';
    if (button.textContent !== said) button.textContent = said;
  }
  // (The edges' own elements: the prompt's view re-inserts them if Gradio drops them.)

  // ----- the split between the prompt and the output ------------------------------------------------
  const hasRun = () => !!$('#run-stats .stats');
  function content(el) {
    // The height of the prompt's text as laid out (its view has `contain: size`: the text never sizes
    // the box, so it is measured on its own).
    const inner = el.querySelector('.html-container');
    return inner ? inner.offsetHeight : el.scrollHeight;
  }
  function lessonTop(el) {
    // Where the lesson starts in the prompt's text: the last user message's first piece (provenance's
    // pieces), else the generation prompt; null when neither is known.
    const text = el.querySelector('.prompt-text');
    if (!text) return null;
    let rows = null, roles = null;
    try { rows = JSON.parse(text.dataset.pieces || 'null'); } catch (e) {}
    try { roles = JSON.parse(window.playgroundEditorView(document.getElementById('messages-editor')).state.doc.toString()).map((m) => m && m.role); } catch (e) {}
    let start = null;
    if (rows && roles) {
      const last = roles.lastIndexOf('user');
      if (last >= 0) start = [...text.querySelectorAll('[data-p]')].find((s) => rows[+s.dataset.p] && rows[+s.dataset.p][4] === last);
    }
    start = start || text.querySelector('.gen');
    if (!start) return null;
    return start.getBoundingClientRect().top - el.querySelector('.html-container').getBoundingClientRect().top;
  }
  function fitType(el, room) {
    // The largest type in TYPE at which the whole prompt fits `room` px; else at which the lesson does;
    // else down to LESSON_TYPE if the lesson then fits (the last user message with the generation prompt
    // below it is the lesson: both on screen beats larger type); else LESSON_TYPE, and the end shown.
    const size = (rem) => { el.style.setProperty('--present-font', `${rem}rem`); };
    const largest = (low, high, fits) => {
      if (fits(high)) return high;
      if (!fits(low)) return null;
      for (let i = 0; i < 6; i++) {
        const mid = (low + high) / 2;
        if (fits(mid)) low = mid; else high = mid;
      }
      return low;
    };
    const whole = (rem) => { size(rem); return content(el) <= room; };
    const lesson = (rem) => {
      size(rem);
      const top = lessonTop(el);
      return top !== null && content(el) - top <= room;
    };
    const fitted = largest(TYPE[0], TYPE[1], whole) || largest(TYPE[0], TYPE[1], lesson)
      || largest(LESSON_TYPE, TYPE[0], lesson) || LESSON_TYPE;
    size(Math.floor(fitted * 100 + 1e-6) / 100);
  }

  // When to lay out again: the page's observer (app/page.js) tells of every change, but a streaming
  // run changes the page 15 times a second, and measuring then would lay the page out each time. So a
  // change is looked at only through what it costs nothing to read (the window, the mode, whether a run
  // is shown, whether the prompt is explained); sizes are watched by a ResizeObserver on the prompt's
  // text and on the column, which tells when they change, after the browser laid them out.
  let last = null;  // what the split was computed for
  let state = null;  // the cheap state it was computed in
  function layout() {
    const bench = document.getElementById('workbench'), views = document.getElementById('view-area');
    const el = view(), area = document.getElementById('prompt-area'), output = document.getElementById('output-area');
    if (!bench || !views || !el || !area || !output) return;
    const presenting = root.classList.contains('presenting');
    const run = hasRun();
    if (bench.dataset.run !== (run ? 'shown' : 'none')) bench.dataset.run = run ? 'shown' : 'none';
    if (NARROW.matches) {
      area.style.removeProperty('height');
      bench.style.removeProperty('height');
      last = null;
      keepEnd();
      return;
    }
    const text = el.querySelector('.prompt-text');
    const key = () => [innerWidth, innerHeight, presenting, run, held !== null ? held : content(el),
      text && text.dataset.pieces ? 1 : 0, views.clientWidth, views.clientHeight].join();
    if (key() === last) { keepEnd(); return; }
    if (presenting) {
      const top = bench.getBoundingClientRect().top + window.scrollY;
      const fill = `${Math.max(360, Math.floor(innerHeight - top - 10))}px`;
      if (bench.style.height !== fill) bench.style.height = fill;
    } else {
      bench.style.removeProperty('height');
    }
    const total = views.clientHeight;
    const chrome = area.offsetHeight - el.clientHeight;  // the prompt panel's title, legend and info line
    const row = document.getElementById('output-row');
    let least;
    if (row && row.offsetParent) {
      least = output.offsetHeight - row.offsetHeight + (presenting ? OUTPUT_COMPACT : OUTPUT_MIN);
    } else {  // presentation mode before a run: the output's title alone
      const title = output.querySelector('.panel-title');
      least = title ? title.getBoundingClientRect().bottom - output.getBoundingClientRect().top + 14 : 60;
    }
    // Before a run the output needs only its least; after one, the prompt and the output share.
    const room = run ? Math.max(Math.round((total - GAP) / 2), Math.min(total - GAP - least, 160))
                     : total - GAP - least;
    if (presenting) fitType(el, room - chrome);
    else el.style.removeProperty('--present-font');
    const height = Math.max(Math.min(chrome + PROMPT_MIN, room), Math.min(room, chrome + content(el) + 2));
    // The box's own height, not a custom property on the workbench: that would restyle every element
    // under it (the editors' lines included) at each preset.
    if (area.style.height !== `${height}px`) area.style.height = `${height}px`;
    last = key();
    keepEnd();
  }
  function cheap() {
    const text = $('#prompt-view .prompt-text');
    return [innerWidth, innerHeight, root.classList.contains('presenting'), hasRun(), NARROW.matches,
      text ? `${text.dataset.pieces ? 1 : 0}${text.dataset.explain ? 1 : 0}` : ''].join();
  }
  const sizes = new ResizeObserver(() => layout());
  const watched = new Set();
  function watch() {
    for (const el of [document.getElementById('view-area'), $('#prompt-view .html-container')]) {
      if (el && !watched.has(el)) { watched.add(el); sizes.observe(el); }
    }
  }
  window.playgroundAfterChange(() => {
    watch();
    const now = cheap();
    if (now !== state) { state = now; layout(); }
  });
  window.addEventListener('resize', layout);
  NARROW.addEventListener('change', layout);
  document.addEventListener('playground:present', () => { last = null; stick = true; requestAnimationFrame(layout); });
  if (document.fonts && document.fonts.ready) document.fonts.ready.then(() => { last = null; layout(); });
}
