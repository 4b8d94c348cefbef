"""Entry point: `python app.py` serves the template playground (default 127.0.0.1:7860).

Host and port come from --host/--port, else GRADIO_SERVER_NAME/GRADIO_SERVER_PORT (what Spaces set)."""

from __future__ import annotations

import argparse
import logging
import os
import threading

from app.page import LAUNCH_OPTIONS, build
from engine.engines import jinja_js
from engine.sandbox import shared_pool


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the template playground.")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    args = parser.parse_args()
    # What a Space owner reads in the Space's logs: why a visitor's run, render or check failed
    # (engine.errors.log_failure; redacted, never a token).
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("playground").setLevel(logging.INFO)
    # Start the render workers while the server starts, so the first page load does not wait.
    threading.Thread(target=shared_pool().warm, daemon=True).start()
    # Install @huggingface/jinja for the engines check now (once, into .cache/engines), not in a check.
    threading.Thread(target=jinja_js.install, daemon=True).start()
    build().queue(default_concurrency_limit=8).launch(server_name=args.host, server_port=args.port, **LAUNCH_OPTIONS)


if __name__ == "__main__":
    main()
