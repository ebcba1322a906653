"""Settings from the environment: the ``MCPKIT_*`` variables :meth:`Server.run` and
``mcpkit run`` read (docs/deploy.md#settings-from-the-environment).

A deployment configures a server it did not write — its transport, where it listens, its
era, its limits — without a code change: :func:`from_environment` reads the variables of
:data:`VARIABLES`, each parsed and checked once, into an :class:`EnvironmentSettings`.
What the caller of ``run`` passes wins over the environment; the environment wins over
the values the ``Server`` was constructed with, since it is the deployment's word on
them. A value that does not parse raises ``ValueError`` naming the variable, before the
server starts: a typo in a port never serves on the default one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

__all__ = ["PREFIX", "VARIABLES", "EnvironmentSettings", "from_environment"]

#: The prefix of every variable.
PREFIX: Final = "MCPKIT_"

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise ValueError(f"is none of {', '.join(allowed)}")
        return value

    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        raise ValueError("is not a whole number") from None
    if value < 1:
        raise ValueError("must be positive")
    return value


def _port(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError("is not a port number") from None
    if not 0 <= value <= 65535:
        raise ValueError("is not a port number (0 to 65535)")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError("is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise ValueError("must be a positive, finite number of seconds")
    return value


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError("is not a yes or a no (1, true, yes, on, or 0, false, no, off)")


def _words(text: str) -> list[str]:
    words = [word.strip() for word in text.split(",") if word.strip()]
    if not words:
        raise ValueError("names nothing")
    return words


def _text(text: str) -> str:
    if not text.strip():
        raise ValueError("is empty")
    return text.strip()


class _Variable(msgspec.Struct, frozen=True):
    """One variable: where its value goes (``run``'s own argument, a ``Server``
    attribute, an option of ``asgi_app`` or of uvicorn) and how it is parsed."""

    target: str  # "run", "server", "http", "uvicorn"
    option: str
    parse: Callable[[str], Any]


#: Each variable (without the prefix) -> what it sets.
VARIABLES: Final[Mapping[str, _Variable]] = {
    "TRANSPORT": _Variable("run", "transport", _choice("stdio", "http")),
    "HOST": _Variable("run", "host", _text),
    "PORT": _Variable("run", "port", _port),
    "PATH": _Variable("run", "path", _text),
    "LOG_LEVEL": _Variable("run", "log_level", _choice("critical", "error", "warning", "info", "debug", "trace")),
    "ERAS": _Variable("server", "eras", _choice("dual", "modern", "legacy")),
    "TOOL_TIMEOUT": _Variable("server", "tool_timeout", _seconds),
    "ASK_TIMEOUT": _Variable("server", "ask_timeout", _seconds),
    "MASK_TOOL_ERRORS": _Variable("server", "mask_tool_errors", _flag),
    "PAGE_SIZE": _Variable("server", "page_size", _positive_int),
    "MAX_MESSAGE_SIZE": _Variable("server", "max_message_size", _positive_int),
    "MAX_IN_FLIGHT": _Variable("server", "max_in_flight", _positive_int),
    "MAX_URI_LENGTH": _Variable("server", "max_uri_length", _positive_int),
    "MAX_LISTENS": _Variable("server", "max_listens", _positive_int),
    "SHUTDOWN_GRACE": _Variable("server", "shutdown_grace", _seconds),
    "ALLOWED_HOSTS": _Variable("http", "allowed_hosts", _words),
    "MAX_BODY_SIZE": _Variable("http", "max_body_size", _positive_int),
    "MAX_SESSIONS": _Variable("http", "max_sessions", _positive_int),
    "MAX_CONNECTIONS": _Variable("uvicorn", "max_connections", _positive_int),
}


class EnvironmentSettings(msgspec.Struct, frozen=True):
    """What the environment sets, by where it goes; an option the environment does not
    set is absent. (A Struct, not a dataclass: it is made in C at import.)"""

    #: ``Server.run``'s own arguments: ``transport``, ``host``, ``port``, ``path``, ``log_level``.
    run: dict[str, Any] = msgspec.field(default_factory=dict)
    #: ``Server`` attributes (its era and limits), set before serving.
    server: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Options of ``Server.asgi_app`` (HTTP only).
    http: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Options of the uvicorn server (HTTP only).
    uvicorn: dict[str, Any] = msgspec.field(default_factory=dict)
    #: The variables read, as ``NAME=value``, for the log.
    read: tuple[str, ...] = ()


def from_environment(environ: Mapping[str, str] | None = None) -> EnvironmentSettings:
    """The settings of the ``MCPKIT_*`` variables in ``environ`` (default: this
    process's); an empty variable counts as unset. Raises ``ValueError`` naming the
    first variable whose value does not parse, and why."""
    source = os.environ if environ is None else environ
    by_target: dict[str, dict[str, Any]] = {"run": {}, "server": {}, "http": {}, "uvicorn": {}}
    read: list[str] = []
    for name, variable in VARIABLES.items():
        text = source.get(PREFIX + name, "")
        if not text:
            continue
        try:
            by_target[variable.target][variable.option] = variable.parse(text)
        except ValueError as exc:
            raise ValueError(f"{PREFIX}{name}={text!r} {exc}") from None
        read.append(f"{PREFIX}{name}={text}")
    return EnvironmentSettings(**by_target, read=tuple(read))
