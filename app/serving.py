"""How the page is served (app.py, and the tests that serve it in process): Gradio's `launch` with
the request limits in front of every route, uvicorn's own reading of `X-Forwarded-For` off (the
app's is the one reader: app.clients), idle sessions' Gradio state forgotten with them, and nothing
of Gradio's left on disk that no one uses."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from starlette.middleware import Middleware

from engine import limits

from .clients import trust_no_proxy_headers
from .request_limits import RequestLimits
from .visitors import forget_gradio_pages

LOG = logging.getLogger("playground")


def launch(page: Any, host: str, port: int, **options: Any) -> None:
    """Start serving `page` (built by app.page.build, queued) on host:port; returns once it answers."""
    from .page import LAUNCH_OPTIONS

    trust_no_proxy_headers()
    # Uploads (and Gradio's copies of files) are deleted this long after they were written.
    page.delete_cache = (max(1, int(limits.TEMP_FILE_SECONDS // 10)), max(1, int(limits.TEMP_FILE_SECONDS)))
    page.launch(server_name=host, server_port=port, prevent_thread_lock=True,
                app_kwargs={"middleware": [Middleware(RequestLimits)]}, **{**LAUNCH_OPTIONS, **options})
    forget_gradio_pages(page.state_holder)
    remove_unused_folders()


def remove_unused_folders() -> None:
    """Gradio makes a `vibe_edit_history` folder in its temporary folder when it starts, for an app
    editor the playground never turns on (its routes are refused): removed while it is empty."""
    from gradio.route_utils import DEFAULT_TEMP_DIR

    try:
        (Path(DEFAULT_TEMP_DIR) / "vibe_edit_history").rmdir()
    except OSError:  # gone already, or not empty (then something else uses it)
        pass
