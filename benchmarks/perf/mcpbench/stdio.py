"""stdio: a spawned server, newline-delimited JSON-RPC on its stdin and stdout, with many
requests in flight on the one pipe."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from .procs import BenchError, log_file
from .wire import INITIALIZED, answer_server_request, initialize

LINE_LIMIT = 64 * 1024 * 1024  # the longest answer we read: a 10 MB result fits


class StdioPeer:
    """A server process and the answers it owes us, by request id."""

    def __init__(self, argv: list[str], stderr: Path | None = None) -> None:
        self.argv = argv
        self.stderr = stderr
        self.proc: asyncio.subprocess.Process | None = None
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.unknown_ids = 0  # answers to requests we never sent: each makes a run invalid
        self.protocol_version: str | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stdin: asyncio.StreamWriter | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self) -> None:
        err = log_file(self.stderr)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err, limit=LINE_LIMIT
            )
        finally:
            if not isinstance(err, int):
                err.close()
        self._stdin = self.proc.stdin
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        assert self._stdin is not None
        readline, loads, pending, stdin = self.proc.stdout.readline, json.loads, self.pending, self._stdin
        reason = "the server closed its stdout"
        try:
            while line := await readline():
                try:
                    msg = loads(line)
                except ValueError:
                    continue  # not JSON-RPC (a banner, a log line): ignored
                if not isinstance(msg, dict):
                    continue
                if "method" in msg:  # a request or notification from the server
                    if "id" in msg:
                        stdin.write(answer_server_request(msg) + b"\n")
                    continue
                future = pending.pop(msg.get("id"), None)  # type: ignore[arg-type]
                if future is None:
                    self.unknown_ids += 1
                elif not future.done():
                    future.set_result(msg)
        except (ConnectionError, ValueError, asyncio.LimitOverrunError, asyncio.IncompleteReadError) as exc:
            reason = f"reading the server's stdout failed: {exc!r}"
        for future in pending.values():
            if not future.done():
                future.set_exception(BenchError(reason))
        pending.clear()

    async def call(self, body: bytes, rid: int) -> dict[str, Any]:
        """Send one request and wait for its answer."""
        assert self._stdin is not None
        if self._reader is not None and self._reader.done():
            raise BenchError("the server closed its stdout")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        self._stdin.write(body + b"\n")
        return await future

    async def initialize(self, rid: int = 0, timeout: float = 60.0, capabilities: dict[str, Any] | None = None) -> None:
        """The legacy handshake: ``initialize``, then ``notifications/initialized``."""
        assert self._stdin is not None
        try:
            answer = await asyncio.wait_for(self.call(initialize(rid, capabilities), rid), timeout)
        except TimeoutError:
            raise BenchError(f"no answer to initialize within {timeout} s") from None
        result = answer.get("result")
        if not isinstance(result, dict):
            raise BenchError(f"initialize failed: {str(answer)[:300]}")
        self.protocol_version = result.get("protocolVersion")
        self._stdin.write(INITIALIZED + b"\n")

    async def close(self, timeout: float = 10.0) -> None:
        """Close stdin and wait for the exit; kill the process if it does not exit."""
        if self.proc is None:
            return
        if self._stdin is not None:
            with contextlib.suppress(ConnectionError, RuntimeError):
                self._stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
