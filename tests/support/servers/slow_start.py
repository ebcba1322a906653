"""A server that is slow to start: ``python tests/support/servers/slow_start.py SECONDS
SCRIPT [ARGS...]`` sleeps ``SECONDS`` before anything else (a heavy import, a loaded
machine) and then runs ``SCRIPT`` — a file of tests/support/servers/ by name, or a path —
as ``__main__`` with ``ARGS``. Whatever the client sent meanwhile waits in the pipe (over
stdio) or is refused (over HTTP: nothing listens yet)."""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

seconds, script, *args = sys.argv[1:]
time.sleep(float(seconds))
path = Path(script) if Path(script).is_absolute() else Path(__file__).with_name(script)
sys.argv = [str(path), *args]
sys.path.insert(0, str(path.parent))
runpy.run_path(str(path), run_name="__main__")
