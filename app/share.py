"""Share links and browser storage.

A share link is the page URL with the workspace in its fragment (`#s=<code>`, see
`state.encode_workspace`): fragments never reach a server log, and the code holds templates, cases
and settings, never a token. The same code is saved in the browser's localStorage after every
edit, so a reload finds the editors as they were. Reading both happens in the page's load event
(`BOOT_JS` hands them to `sources.restore`)."""

from __future__ import annotations

from typing import Any

from .run_stream import read_settings, store_settings
from .state import Session, encode_workspace
from .workbench import sync

STORAGE_KEY = "template-playground/workspace"

# Page load: what the server needs to restore (the fragment and the saved copy). The fragment is
# dropped as soon as it is read, before the server sees it: a link that cannot be opened must not
# fail again on every reload, and a reload after edits shows the edits (kept in storage), not the
# link's original state.
BOOT_JS = f"""() => {{
  const hash = window.location.hash;
  if (hash.startsWith('#s=')) {{
    history.replaceState(null, '', window.location.pathname + window.location.search);
  }}
  let saved = null;
  try {{ saved = window.localStorage.getItem({STORAGE_KEY!r}); }} catch (e) {{}}
  return [JSON.stringify({{hash: hash, saved: saved}})];
}}"""

# Page load: only a page with something to restore (a share link, a saved copy) asks the server for
# it, by pressing the hidden restore button (whose event reads them with BOOT_JS). A new visitor's
# page is served showing the default preset already: nothing to ask for, nothing sent.
RESTORE_GATE_JS = f"""() => {{
  let saved = null;
  try {{ saved = window.localStorage.getItem({STORAGE_KEY!r}); }} catch (e) {{}}
  if (window.location.hash.startsWith('#s=') || saved) {{
    const button = document.getElementById('restore-button');
    if (button) button.click();
  }}
}}"""

# After the restore's answer is shown: the page's scripts that wait for the restored workspace (presentation
# mode's walk, asked for a step by the address) go on.
RESTORED_JS = "() => { document.dispatchEvent(new CustomEvent('playground:restored')); }"

SAVE_JS = f"""(code) => {{ if (code) {{ try {{ window.localStorage.setItem({STORAGE_KEY!r}, code); }} catch (e) {{}} }} }}"""

# The address's own options stay in the link (`?present=1&step=N`: presentation mode's walk at that step).
LINK_JS = """(code) => code ? window.location.origin + window.location.pathname + window.location.search + '#s=' + code : ''"""


def share_code(session: Session, chat_template: str, response_template: str, form_case: str, **values: Any) -> dict[str, str]:
    """The Share button: the editors, the case form and the run settings (`values`, by name) as a
    share code; the page turns it into a link."""
    sync(session, chat_template, response_template, form_case, values)
    store_settings(session.workspace, read_settings(**values))
    return {"share_code": encode_workspace(session.workspace)}


def save_settings(session: Session, **settings: Any) -> dict[str, str]:
    """A run setting changed: keep it in the workspace; returns the code browser storage saves."""
    store_settings(session.workspace, read_settings(**settings))
    return {"saved_code": encode_workspace(session.workspace)}
