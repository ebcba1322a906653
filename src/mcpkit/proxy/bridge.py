"""A legacy server's questions asked of a modern client, across the client's rounds: the
era bridge of a proxy (docs/howto/proxies.md, "What crosses").

A legacy upstream server asks by sending a request and waiting for its answer, in the
middle of the call; a 2026-07-28 client is asked by ending its request with
``input_required`` and answers in a *new* request. So the upstream call must outlive the
downstream request that started it. An :class:`Exchange` is that call kept between
rounds, found again by the exchange id the downstream request's sealed ``requestState``
carries (``Context.exchange_id``: the same on every round, chosen by the proxy, never by
the client):

1. the first round starts the upstream call on a link of its own (so that every question
   that link receives is this call's) and waits for what happens first: the call ends
   (its result or error is the answer, and the exchange is over), or the upstream server
   asks a question;
2. a question is asked of the downstream client through its request's asker under the
   key ``upstream-N`` (its number in the exchange): unanswered, the round ends with
   ``input_required`` and the exchange waits; the next round finds the answer in the
   retry's ``inputResponses``, hands it to the waiting upstream request, and waits again.

State between rounds is bounded and expires: at most ``max_exchanges`` exchanges at once
(each holds an upstream session), each dropped — its upstream call cancelled — when no
round comes within ``ttl`` seconds of the last, or when a round is cancelled while it
waits for the upstream server. Exchanges live in the process that started them: the
client's rounds must reach it (as the tasks of docs/tasks.md do).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol.errors import INTERNAL_ERROR, McpError
from ..server.context import Context, relay_question
from ..server.interaction import InputRequired
from .link import Link

__all__ = ["Exchange", "Bridge"]


class Exchange:
    """One upstream call held between a modern client's rounds (see the module)."""

    def __init__(self, link: Link, ctx: Context) -> None:
        self.link = link
        #: The downstream request of the current round: where progress and logs go.
        self.ctx = ctx
        self.events: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        #: The event being handled: a question waiting for the client, or the end.
        self.pending: tuple[Any, ...] | None = None
        self.asked = 0
        self.task: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None

    async def ask(self, method: str, params: dict[str, Any]) -> Any:
        """The upstream server's question, put to the client at its next round; returns
        its answer (the link's callbacks await this). Cancelled with the exchange."""
        self.asked += 1
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.events.put_nowait(("ask", self.asked, method, params, answer))
        return await answer


class Bridge:
    """The exchanges of one proxy: at most ``max_exchanges``, each expiring ``ttl``
    seconds after its last round. ``checkout`` lends a link of its own to an exchange,
    ``checkin`` takes it back."""

    def __init__(
        self, checkout: Callable[[], Awaitable[Link]], checkin: Callable[[Link], None], *, max_exchanges: int, ttl: float
    ) -> None:
        self._checkout = checkout
        self._checkin = checkin
        self._max = max_exchanges
        self._ttl = ttl
        self._exchanges: dict[str, Exchange] = {}

    def __len__(self) -> int:
        return len(self._exchanges)

    async def forward(self, ctx: Context, method: str, params: Any) -> Any:
        """One round of the downstream request ``ctx``: the upstream answer, or
        ``InputRequired`` (the round ends, the exchange waits). Raises the upstream
        ``McpError`` as it is, -32603 (503) past ``max_exchanges``; cancellation drops
        the exchange and cancels the upstream call."""
        key = ctx.exchange_id
        exchange = self._exchanges.get(key)
        if exchange is None:
            exchange = await self._start(key, ctx, method, params)
        elif exchange.timer is not None:
            exchange.timer.cancel()
            exchange.timer = None
        exchange.ctx = ctx
        try:
            return await self._round(key, exchange)
        except InputRequired:
            exchange.timer = asyncio.get_running_loop().call_later(self._ttl, self._drop, key)
            raise
        except asyncio.CancelledError:
            self._drop(key)
            raise

    async def _start(self, key: str, ctx: Context, method: str, params: Any) -> Exchange:
        if len(self._exchanges) >= self._max:
            raise McpError(INTERNAL_ERROR, "Service unavailable: the proxy holds too many exchanges in progress", status=503)
        link = await self._checkout()
        exchange = Exchange(link, ctx)
        link.exchange = exchange

        async def call() -> None:
            try:
                outcome: tuple[Any, ...] = ("done", await link.forward_for(lambda: exchange.ctx, method, params), None)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                outcome = ("done", None, exc)
            exchange.events.put_nowait(outcome)

        exchange.task = asyncio.ensure_future(call())
        self._exchanges[key] = exchange
        return exchange

    async def _round(self, key: str, exchange: Exchange) -> Any:
        """Relay questions until one is unanswered (``InputRequired``) or the call ends."""
        while True:
            if exchange.pending is None:
                exchange.pending = await exchange.events.get()
            event = exchange.pending
            if event[0] == "done":
                self._end(key, exchange)
                if event[2] is not None:
                    raise event[2]
                return event[1]
            _, number, method, params, answer = event
            reply = await relay_question(exchange.ctx, method, params, key=f"upstream-{number}")
            if not answer.done():
                answer.set_result(reply)
            exchange.pending = None

    def _end(self, key: str, exchange: Exchange) -> None:
        if self._exchanges.get(key) is exchange:
            del self._exchanges[key]
        if exchange.timer is not None:
            exchange.timer.cancel()
        exchange.link.exchange = None
        self._checkin(exchange.link)

    def _drop(self, key: str) -> None:
        """The exchange is given up on: its upstream call is cancelled (and its link,
        in an unknown state, is not lent again until the call has ended)."""
        exchange = self._exchanges.pop(key, None)
        if exchange is None:
            return
        if exchange.timer is not None:
            exchange.timer.cancel()
        task = exchange.task
        if task is None or task.done():
            self._end(key, exchange)
            return
        task.cancel()
        task.add_done_callback(lambda _: self._end(key, exchange))

    async def close(self) -> None:
        """Drop every exchange (at the proxy's stop)."""
        for key in list(self._exchanges):
            self._drop(key)
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)
