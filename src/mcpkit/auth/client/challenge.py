"""Reading ``WWW-Authenticate`` (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).

A response may carry several challenges, in several header lines or comma-separated in
one; the client wants the ``Bearer`` one (or, from a server that binds tokens with DPoP,
the ``DPoP`` one) and its parameters: ``resource_metadata``,
``scope``, ``error``, ``error_description``. Parameter values are tokens or quoted
strings (with backslash escapes). A header line longer than :data:`MAX_HEADER` is
ignored rather than parsed, so a hostile server cannot make the client work hard.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Challenge", "find_challenge", "parse_challenges", "MAX_HEADER"]

#: Longest ``WWW-Authenticate`` line that is parsed, in characters.
MAX_HEADER = 8192

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_PARAM = re.compile(rf"({_TOKEN})[ \t]*=[ \t]*({_QUOTED}|[^\s,]*)")
_SCHEME = re.compile(rf"({_TOKEN})(?=[ \t]|,|$)")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*(?=[ \t]*(,|$))")
_SEPARATORS = re.compile(r"[ \t,]*")
_ESCAPE = re.compile(r"\\(.)")


@dataclass
class Challenge:
    """One authentication challenge: its scheme (lowercased) and parameters (names
    lowercased, values unquoted)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def scope(self) -> str | None:
        """The scopes the server asks for, as one space-separated string (None if none)."""
        value = " ".join(self.params.get("scope", "").split())
        return value or None

    @property
    def resource_metadata(self) -> str | None:
        """The Protected Resource Metadata URL the server named, if any."""
        return self.params.get("resource_metadata") or None

    @property
    def error(self) -> str | None:
        """The RFC 6750 error code (``invalid_token``, ``insufficient_scope``), if any."""
        return self.params.get("error") or None


def _value(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"':
        return _ESCAPE.sub(r"\1", raw[1:-1])
    return raw


def parse_challenges(line: str) -> list[Challenge]:
    """Every challenge in one header line, in order; parsing stops quietly at the first
    thing that is not a challenge or a parameter (what came before is kept)."""
    if len(line) > MAX_HEADER:
        return []
    found: list[Challenge] = []
    pos, end = 0, len(line)
    while True:
        pos = _SEPARATORS.match(line, pos).end()  # type: ignore[union-attr]
        if pos >= end:
            return found
        param = _PARAM.match(line, pos)
        if param is not None and found:
            found[-1].params.setdefault(param.group(1).lower(), _value(param.group(2)))
            pos = param.end()
            continue
        scheme = _SCHEME.match(line, pos)
        if scheme is None:
            return found
        found.append(Challenge(scheme.group(1).lower()))
        pos = scheme.end()
        after = _SEPARATORS.match(line, pos).end()  # type: ignore[union-attr]
        if _PARAM.match(line, after) is None and (token68 := _TOKEN68.match(line, after)) is not None:
            pos = token68.end()  # a token68 credential (Basic, Negotiate): not ours to read


def find_challenge(lines: Iterable[str]) -> Challenge:
    """The ``Bearer`` challenge among the ``WWW-Authenticate`` header ``lines``, else the
    ``DPoP`` one (RFC 9449 §7.1); an empty ``Bearer`` one (no parameters) when there is none."""
    found = [c for line in lines for c in parse_challenges(line) if c.scheme in ("bearer", "dpop")]
    for scheme in ("bearer", "dpop"):
        for challenge in found:
            if challenge.scheme == scheme:
                return challenge
    return Challenge("bearer")
