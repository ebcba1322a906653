"""An ASGI app under uvicorn in a thread of the test process, on a loopback port: the test
can look at the app's state (and the handlers can set ``threading.Event`` flags) while
real HTTP goes over a real socket."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

from support.waiting import wait_until


@contextlib.contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1") -> Iterator[int]:
    """Run ``app`` under uvicorn on ``host`` (127.0.0.1 unless a test needs another of
    this machine's addresses) in a thread; yield the port. Bounded start-up (20 s) and
    shutdown (graceful for at most 2 s)."""
    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))  # kept open and handed to uvicorn: no other worker can get it
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    try:

        def started() -> bool:
            assert thread.is_alive(), "uvicorn exited during start-up"
            return bool(server.started)

        wait_until(started, timeout=20, what="uvicorn started")
        yield port
    finally:
        server.should_exit = True
        thread.join(20)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not shut down within 20 s"
