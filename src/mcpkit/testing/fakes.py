"""Scripted stand-ins for the person and the model behind a client: ``on_elicit`` and
``on_sample`` callbacks that answer from a list and record what the server asked."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

from ..protocol.interactive import CreateMessageParams, CreateMessageResult, ElicitRequestParams, ElicitResult

__all__ = ["FakeUser", "FakeModel", "ScriptExhausted"]


class ScriptExhausted(AssertionError):
    """The server asked more often than the script has answers: a test failure, raised
    in the callback (the client answers the server with an error) and kept in
    ``errors`` so the test can see it even if the server swallows that error."""


class FakeUser:
    """An ``on_elicit`` callback: ``ClientOptions(on_elicit=FakeUser(...))``.

    Each answer, in order, is a dict (the user accepts with that content), ``"decline"``
    or ``"cancel"``, an :class:`ElicitResult`, or a function of the request that returns
    one of those. ``questions`` holds every :class:`ElicitRequestParams` received (its
    ``message`` and ``requested_schema``). Raises :class:`ScriptExhausted` when asked
    once more than it has answers. Called on a worker thread by the client; not for
    concurrent use from several clients.
    """

    def __init__(self, *answers: dict[str, Any] | Literal["decline", "cancel"] | ElicitResult | Callable[..., Any]) -> None:
        self._answers = list(answers)
        self.questions: list[ElicitRequestParams] = []
        self.errors: list[ScriptExhausted] = []

    @property
    def messages(self) -> list[str]:
        """The text of each question asked, in order."""
        return [q.message for q in self.questions]

    def __call__(self, request: ElicitRequestParams) -> ElicitResult:
        self.questions.append(request)
        answer = _next(self._answers, len(self.questions), "elicitation", request.message, self.errors)
        if callable(answer) and not isinstance(answer, ElicitResult):
            answer = answer(request)
        if isinstance(answer, ElicitResult):
            return answer
        if answer in ("decline", "cancel"):
            return ElicitResult(action=answer)
        if isinstance(answer, dict):
            return ElicitResult(action="accept", content=answer)
        raise TypeError(f"FakeUser: an answer must be a dict, 'decline', 'cancel' or an ElicitResult, not {answer!r}")


class FakeModel:
    """An ``on_sample`` callback: ``ClientOptions(on_sample=FakeModel(...))``.

    Each reply, in order, is a string (an assistant text message from ``model``), a
    :class:`CreateMessageResult`, or a function of the request that returns one of
    those. ``requests`` holds every :class:`CreateMessageParams` received; ``prompts``
    the text of each request's last message. Raises :class:`ScriptExhausted` when asked
    once more than it has replies. Called on a worker thread by the client.
    """

    def __init__(self, *replies: str | CreateMessageResult | Callable[..., Any], model: str = "fake-model") -> None:
        self._replies = list(replies)
        self.model = model
        self.requests: list[CreateMessageParams] = []
        self.errors: list[ScriptExhausted] = []

    @property
    def prompts(self) -> list[str]:
        """The text of the last message of each request, in order ("" for non-text)."""
        return [_text(r.messages[-1].content) if r.messages else "" for r in self.requests]

    def __call__(self, request: CreateMessageParams) -> CreateMessageResult:
        self.requests.append(request)
        reply = _next(self._replies, len(self.requests), "sampling", self.prompts[-1], self.errors)
        if callable(reply) and not isinstance(reply, CreateMessageResult):
            reply = reply(request)
        if isinstance(reply, CreateMessageResult):
            return reply
        if isinstance(reply, str):
            return CreateMessageResult(role="assistant", content={"type": "text", "text": reply}, model=self.model)
        raise TypeError(f"FakeModel: a reply must be a str or a CreateMessageResult, not {reply!r}")


def _next(script: list[Any], number: int, kind: str, asked: str, errors: list[ScriptExhausted]) -> Any:
    if number > len(script):
        error = ScriptExhausted(f"{kind} request {number} ({asked!r}), but the script has {len(script)} answer(s)")
        errors.append(error)
        raise error
    return script[number - 1]


def _text(content: Any) -> str:
    blocks: Iterable[Any] = content if isinstance(content, list) else [content]
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
