"""Headless Chromium (Debian's ``chromium``, from scripts/setup_tests.py) driven over the
Chrome DevTools Protocol on a pipe: the docs site in a browser (tests/docs/test_site.py)
and the MCP Apps example's view (tests/e2e/test_apps_chart.py)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--window-size=1400,1000",  # wide enough for the navigation sidebar to show
)


class Browser:
    """Headless Chromium driven over the DevTools Protocol on ``--remote-debugging-pipe``:
    NUL-terminated JSON on its fds 3 (commands in) and 4 (replies and events out). No
    port, no websocket, no extra package."""

    def __init__(self, executable: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="mcpkit-chromium-")
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()
        # bash (unlike sh) redirects fds above 9: put the browser's ends on fds 3 and 4.
        os.dup2(to_browser_r, 100)
        os.dup2(from_browser_w, 101)
        os.close(to_browser_r)
        os.close(from_browser_w)
        args = [executable, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"]
        try:
            self.proc = subprocess.Popen(
                ["/bin/bash", "-c", 'exec "$@" 3<&100 4>&101 100<&- 101>&-', "bash", *args],
                pass_fds=(100, 101),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        finally:
            os.close(100)
            os.close(101)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self._w)
        os.close(self._r)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            if select.select([self._r], [], [], left)[0]:
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    raise EOFError(f"Chromium exited (code {self.proc.poll()})")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                assert "error" not in reply, f"{method}: {reply['error']}"
                result: dict[str, Any] = reply["result"]
                return result
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + self.timeout
        while True:
            event = self._receive(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)
