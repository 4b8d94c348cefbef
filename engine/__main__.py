import os
import sys

from .cli import main

try:
    code = main()
    sys.stdout.flush()
except BrokenPipeError:
    # The reader went away (`python -m engine check … --format json | head`): end quietly, with the
    # shell's code for a broken pipe, and point stdout at /dev/null so Python's own flush at exit
    # does not fail again.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = 141
raise SystemExit(code)
