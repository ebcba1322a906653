"""What a server asks of the client: elicitation, sampling and roots (docs/interactive.md).

The same three requests travel two ways. In the legacy era they are JSON-RPC requests
from the server (``elicitation/create``, ``sampling/createMessage``, ``roots/list``); in
the modern era (2026-07-28) they ride inside an :class:`InputRequiredResult` as
``inputRequests``, and the client's answers come back on a retry of the original
request as ``inputResponses``. This module holds their wire types, which client
capability each needs, and the checks on answers — nothing here knows which way they go.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec
from msgspec import field

from .errors import INVALID_PARAMS, MISSING_CLIENT_CAPABILITY, URL_ELICITATION_REQUIRED, McpError, flatten_text
from .types import Result, Root, WireStruct

__all__ = [
    "ELICIT",
    "SAMPLE",
    "LIST_ROOTS",
    "INPUT_REQUIRED",
    "MRTR_METHODS",
    "ElicitRequestParams",
    "CreateMessageParams",
    "ElicitResult",
    "CreateMessageResult",
    "SamplingMessage",
    "ListRootsResult",
    "InputRequest",
    "InputRequiredResult",
    "UrlElicitationRequired",
    "required_capability",
    "missing_capability",
    "decode_answer",
]

ELICIT: Final = "elicitation/create"
SAMPLE: Final = "sampling/createMessage"
LIST_ROOTS: Final = "roots/list"
#: The ``resultType`` of a result that asks for input before the request can finish.
INPUT_REQUIRED: Final = "input_required"
#: The requests a modern server may answer with an :class:`InputRequiredResult`.
MRTR_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})


class SamplingMessage(WireStruct, kw_only=True):
    """One message of a sampling conversation: ``content`` is a content block (a
    dict such as ``{"type": "text", "text": ...}``) or, since 2025-11-25, a list of
    them (tool use and tool results)."""

    role: Literal["user", "assistant"]
    content: Any
    meta: dict[str, Any] | None = field(default=None, name="_meta")


class ElicitRequestParams(WireStruct, kw_only=True):
    """What the server asks the user (``elicitation/create``): a form described by
    ``requested_schema`` (``mode="form"``), or a ``url`` to open (``mode="url"``, with
    its ``elicitation_id``)."""

    message: str
    mode: Literal["form", "url"] = "form"
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")


class CreateMessageParams(WireStruct, kw_only=True):
    """What the server asks the client's model (``sampling/createMessage``)."""

    messages: list[SamplingMessage]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    model_preferences: dict[str, Any] | None = None
    include_context: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")


class ElicitResult(Result, kw_only=True):
    """The user's answer to an elicitation: ``"accept"`` (with ``content`` in form
    mode), ``"decline"`` or ``"cancel"``. ``value`` is ``content`` converted to the type
    the server asked with (the content dict itself when it asked with a schema)."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    value: Any = field(default=None, name="__value__")  # never on the wire: set locally

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (``action == "accept"``)."""
        return self.action == "accept"


class CreateMessageResult(Result, kw_only=True):
    """What the client's model answered: ``content`` is one content block or a list
    of them (``tool_use`` blocks when ``stop_reason`` is ``"toolUse"``)."""

    role: Literal["user", "assistant"]
    content: Any
    model: str
    stop_reason: str | None = None

    @property
    def text(self) -> str:
        """The text of the answer's text blocks, joined ("" if it has none)."""
        blocks = self.content if isinstance(self.content, list) else [self.content]
        return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


class ListRootsResult(Result, kw_only=True):
    roots: list[Root]


class InputRequest(WireStruct, kw_only=True):
    """One request of an :class:`InputRequiredResult`."""

    method: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class InputRequiredResult(Result, kw_only=True):
    """A modern result that ends a request early: answer ``input_requests`` and retry
    the request with ``inputResponses`` and ``request_state`` echoed unchanged."""

    input_requests: dict[str, InputRequest] | None = None
    request_state: str | None = None

    def __post_init__(self) -> None:
        self.result_type = INPUT_REQUIRED  # always on the wire: a default would be omitted


class UrlElicitationRequired(McpError):
    """Raised by a handler (and by the client, for the error from a server) when a
    request cannot go on until the user completes out-of-band URL interactions:
    ``-32042`` with ``data.elicitations``, each ``{"mode": "url", "elicitationId",
    "url", "message"}``."""

    def __init__(self, elicitations: list[dict[str, Any]], message: str = "URL elicitation required") -> None:
        for e in elicitations:
            if not isinstance(e, dict) or not isinstance(e.get("elicitationId"), str) or not isinstance(e.get("url"), str):
                raise ValueError("each elicitation needs a string 'elicitationId' and 'url'")
        items = [{"mode": "url", **e} for e in elicitations]
        super().__init__(URL_ELICITATION_REQUIRED, message, {"elicitations": items})
        self.elicitations = items


def required_capability(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The client capability ``method`` with ``params`` needs, as the
    ``requiredCapabilities`` member of a -32021 error would list it."""
    if method == ELICIT:
        return {"elicitation": {params.get("mode", "form"): {}}}
    if method == SAMPLE:
        return {"sampling": {"tools": {}}} if params.get("tools") or params.get("toolChoice") else {"sampling": {}}
    return {"roots": {}}


def _declares(caps: dict[str, Any], method: str, params: dict[str, Any]) -> bool:
    if method == ELICIT:
        elicitation = caps.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        mode = params.get("mode", "form")
        if mode == "form":  # a bare {} (before modes existed) means form
            return "form" in elicitation or "url" not in elicitation
        return mode in elicitation
    if method == SAMPLE:
        sampling = caps.get("sampling")
        if not isinstance(sampling, dict):
            return False
        return not (params.get("tools") or params.get("toolChoice")) or isinstance(sampling.get("tools"), dict)
    return isinstance(caps.get("roots"), dict)


def missing_capability(caps: dict[str, Any], method: str, params: dict[str, Any]) -> McpError | None:
    """The -32021 error to raise if the client's capabilities ``caps`` do not cover
    ``method`` with ``params``, else None."""
    if _declares(caps, method, params):
        return None
    required = required_capability(method, params)
    name = ".".join([*required, *next(iter(required.values()))])
    return McpError(
        MISSING_CLIENT_CAPABILITY,
        f"Missing required client capability: the client did not declare {name}",
        {"requiredCapabilities": required},
        status=400,
    )


_ANSWER_TYPES: Final[dict[str, type[Result]]] = {ELICIT: ElicitResult, SAMPLE: CreateMessageResult, LIST_ROOTS: ListRootsResult}


def decode_answer(method: str, answer: Any, where: str) -> Result:
    """The client's ``answer`` to a ``method`` request, typed. Raises
    ``McpError(-32602)`` naming ``where`` if it does not have the shape ``method``'s
    result must have."""
    try:
        result = msgspec.convert(answer, _ANSWER_TYPES[method], from_attributes=False)
    except (msgspec.ValidationError, RecursionError) as exc:
        raise McpError(INVALID_PARAMS, f"Invalid params: {where}: {flatten_text(str(exc), 256)}") from None
    if isinstance(result, ElicitResult) and result.value is not None:
        result.value = None  # a peer cannot set the local field
    return result
