"""How a handler's questions to the client travel: per era (docs/interactive.md), and in
a task (docs/tasks.md).

:class:`~mcpkit.server.context.Context` asks through an asker. In the legacy era
(:class:`LiveAsker`) each question is a JSON-RPC request to the client, awaited with its
own deadline. In the modern era (:class:`ReplayAsker`) there are no server→client
requests: the handler is *re-run* on each retry of the client's request, and each
question is answered from what the client already said — the answers sealed into
``requestState`` on earlier rounds, or this round's ``inputResponses``. The first
question without an answer ends the run with :class:`InputRequired`, which the
dispatcher turns into an ``InputRequiredResult`` listing every question asked together
(``asyncio.gather``) and the sealed answers so far. Nothing stays on the server between
rounds, so any node that shares the state key can continue the exchange.

A task's handler (2026-07-28, the tasks extension) asks through a :class:`TaskAsker`:
each question waits for its answer in a ``tasks/update``, listed meanwhile in the task's
``inputRequests``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import msgspec

from ..protocol.errors import INVALID_PARAMS, McpError, RequestTimeout, flatten_text
from ..protocol.interactive import InputRequest, InputRequiredResult, decode_answer
from ..protocol.request_state import StateSealer, new_exchange_id, request_digest
from ..protocol.types import Result
from ..runtime.outbound import Outbound
from .forms import form_schema as elicitation_schema
from .schema import converter_for

__all__ = [
    "InputRequired",
    "Asker",
    "LiveAsker",
    "ReplayAsker",
    "NoAsker",
    "TaskAsker",
    "elicitation_schema",
    "content_converter",
]

_encode = msgspec.json.Encoder(order="sorted").encode
_decode_dict = msgspec.json.Decoder(dict[str, Any]).decode


class InputRequired(BaseException):
    """Raised inside a modern-era handler by a question that has no answer yet; it
    ends the run (``except Exception`` in user code does not stop it)."""


class Asker(Protocol):
    async def ask(self, key: str, method: str, params: dict[str, Any], timeout: float) -> Result:
        """The client's answer to ``method`` with ``params``, typed."""
        ...


class LiveAsker:
    """Legacy era: each question is a request to the client over ``outbound``."""

    __slots__ = ("_outbound",)

    def __init__(self, outbound: Outbound) -> None:
        self._outbound = outbound

    async def ask(self, key: str, method: str, params: dict[str, Any], timeout: float) -> Result:
        """Raises :class:`McpError` for the client's error response,
        :class:`~mcpkit.RequestTimeout` after ``timeout`` seconds (the request is
        cancelled on the wire), :class:`~mcpkit.ConnectionClosed` when the connection
        ends first; a malformed answer raises a local ``McpError(-32603)``. On
        cancellation the request is cancelled on the wire and ``CancelledError``
        propagates."""
        raw = await self._outbound.request(method, params, timeout=timeout)
        try:
            return decode_answer(method, _decode_dict(raw), f"the client's answer to {method}")
        except (McpError, msgspec.DecodeError, RecursionError) as exc:
            raise McpError(-32603, f"Invalid result from client: {flatten_text(str(exc), 256)}", local=True) from None


class NoAsker:
    """A request that cannot ask anything (a modern method that has no input rounds)."""

    def __init__(self, method: str) -> None:
        self._method = method

    async def ask(self, key: str, method: str, params: dict[str, Any], timeout: float) -> Result:
        raise RuntimeError(f"a {self._method} handler cannot ask the client for input in the 2026-07-28 era")


def _question_id(method: str, params: dict[str, Any]) -> str:
    import hashlib  # here, not at import time: only the modern era's interactive path asks (about 0.7 MB)

    return hashlib.sha256(_encode([method, params])).hexdigest()[:16]


class ReplayAsker:
    """Modern era: answers from the sealed state and this round's responses; a
    question without one is recorded and ends the run (:class:`InputRequired`).

    Each recorded answer is kept with a digest of its question, and so is each question
    left open, so a handler that asks something else under the same key on a later run
    is asked again, not answered with a stale reply — nor with the reply the client gave
    to the question it was asked before.
    """

    def __init__(
        self,
        sealer: StateSealer,
        method: str,
        params: Callable[[], dict[str, Any]],
        responses: dict[str, Any] | None,
        state: str | None,
        subject: str | None = None,
    ) -> None:
        """``params()`` gives the request's salient params (computed only if a state is
        opened or sealed: most requests never ask anything); ``responses`` and ``state``
        are the retry's ``inputResponses`` and ``requestState`` (None when absent).
        Raises ``McpError(-32602)`` if ``requestState`` fails verification."""
        self._sealer = sealer
        self._subject = subject
        self._method = method
        self._params = params
        self._digest_value: str | None = None
        if state is None:
            self._recorded: dict[str, Any] = {}
            self._exchange: str | None = None  # minted when first needed
        else:
            opened = sealer.open(state, self._digest, subject=subject)
            self._recorded, self._exchange = opened.answers, opened.exchange
        self._responses: dict[str, Any] = {} if responses is None else responses
        self._answers: dict[str, Any] = {}
        self.pending: dict[str, InputRequest] = {}

    @property
    def exchange_id(self) -> str:
        """The id of the exchange this run belongs to: the one sealed in the state the
        client echoed, or (on the first round) a fresh one that every later round keeps."""
        if self._exchange is None:
            self._exchange = new_exchange_id()
        return self._exchange

    @property
    def _digest(self) -> str:
        if self._digest_value is None:
            self._digest_value = request_digest(self._method, self._params())
        return self._digest_value

    async def ask(self, key: str, method: str, params: dict[str, Any], timeout: float) -> Result:
        """Raises :class:`InputRequired` if the question has no answer yet, and
        ``McpError(-32602)`` if this round's answer does not have the right shape."""
        qid = _question_id(method, params)
        recorded = self._recorded.get(key)
        if isinstance(recorded, list) and len(recorded) == 2 and recorded[0] == qid:
            answer = recorded[1]
        elif key in self._responses and not (isinstance(recorded, list) and len(recorded) == 1 and recorded[0] != qid):
            answer = self._responses[key]  # the answer to this question (the state says it was asked)
        else:
            self.pending[key] = InputRequest(method=method, params=params)
            self._answers[key] = [qid]  # asked: this round's answer under the key must be to it
            raise InputRequired
        typed = decode_answer(method, answer, f"inputResponses.{flatten_text(key, 64)}")
        self._answers[key] = [qid, answer]
        return typed

    def result(self) -> InputRequiredResult:
        """The ``InputRequiredResult`` for the questions left unanswered by this run."""
        return InputRequiredResult(
            input_requests=dict(self.pending),
            request_state=self._sealer.seal(self._digest, self._answers, exchange=self.exchange_id, subject=self._subject),
        )


class TaskAsker:
    """A task's questions (docs/tasks.md): each waits, at most ``timeout``, for its answer
    in a ``tasks/update`` (:meth:`answer`). ``publish(questions)`` is awaited whenever the
    open questions change, with them by key (``{"method", "params"}`` each), or None when
    none is left. A key is used once in the task's life: a repeated one gets a suffix."""

    def __init__(self, publish: Callable[[dict[str, Any] | None], Awaitable[None]]) -> None:
        self._publish = publish
        self.pending: dict[str, tuple[InputRequest, asyncio.Future[Result]]] = {}
        self._used: set[str] = set()

    def _unique(self, key: str) -> str:
        candidate, n = key, 1
        while candidate in self._used:
            n += 1
            candidate = f"{key}~{n}"
        self._used.add(candidate)
        return candidate

    def _questions(self) -> dict[str, Any] | None:
        return {k: msgspec.to_builtins(request) for k, (request, _) in self.pending.items()} or None

    async def ask(self, key: str, method: str, params: dict[str, Any], timeout: float) -> Result:
        """Raises :class:`~mcpkit.RequestTimeout` after ``timeout`` seconds without an
        answer (the question is withdrawn). On cancellation the question is dropped."""
        key = self._unique(key)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self.pending[key] = (InputRequest(method=method, params=params), future)
        await self._publish(self._questions())
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            if self.pending.pop(key, None) is not None:
                await self._publish(self._questions())
            raise RequestTimeout(None) from None
        finally:
            self.pending.pop(key, None)

    async def answer(self, responses: dict[str, Any]) -> None:
        """Give the open questions named in ``responses`` their answers; other keys are
        ignored. Raises ``McpError(-32602)``, answering none, if an answer does not have
        its question's shape."""
        typed: dict[str, Result] = {}
        for key, answer in responses.items():
            entry = self.pending.get(key)
            if entry is not None and not entry[1].done():
                typed[key] = decode_answer(entry[0].method, answer, f"inputResponses.{flatten_text(key, 64)}")
        if not typed:
            return
        for key, value in typed.items():
            _, future = self.pending.pop(key)
            future.set_result(value)
        await self._publish(self._questions())


class _Converter(msgspec.Struct, frozen=True):
    tp: Any

    def __call__(self, content: dict[str, Any]) -> Any:
        convert = converter_for(self.tp)
        return content if convert is None else convert(content)


def content_converter(schema_or_model: Any) -> _Converter | None:
    """What turns accepted content into the type the handler asked with (None for a
    plain schema dict: the content stays a dict)."""
    return None if isinstance(schema_or_model, dict) else _Converter(schema_or_model)


def invalid_content(exc: Exception) -> McpError:
    """The error for accepted content that does not fit the handler's type."""
    return McpError(INVALID_PARAMS, f"Invalid params: elicitation content: {flatten_text(str(exc), 256)}")
