"""Matching URIs against RFC 6570 URI templates, in time linear in the URI's length
whatever the template: :class:`UriTemplate`.

A template is compiled into a sequence of *elements* — literal text, a variable (a run
of the characters its operator allows, taken as much as possible, or for ``{+var}`` as
little as possible), the optional ``=`` of a ``{;var}``, an optional query part — and a
URI matches when the sequence can consume it all. Where a template is ambiguous (a
variable may contain what follows it, as in ``x://{+a}/{+b}``), a backtracking regex
would try every split of the URI between the variables, O(n²) for two and O(n³) for
three: one 24,000-character URI stalled the event loop for seconds. Here those
templates are matched by dynamic programming instead: a pass from the end computes, for
every element and position, whether the rest of the template can match from there; a
pass from the start then takes, at each variable, the stop a backtracking matcher would
take first (the longest run, or the shortest for ``{+var}``) among those from which the
rest matches. That is the regex's own answer, found in O(n × elements), without ever
going back. A template that is not ambiguous — every variable ends where a character it
cannot contain follows, the usual case — cannot backtrack more than a step per
character, and is matched by its regex (the fast path); both give the same values.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

__all__ = ["UriTemplate"]

# compiled (and cached by re) at first use, not at import
_EXPR: Final = r"\{([+#./;?&]?)([^{}]+)\}"
_NAME: Final = r"[A-Za-z0-9_.%]+"
#: The characters a variable of each operator cannot contain (everything else it can): the
#: URI's structure (``/``, ``?``, ``#``) and the expression's own separators, as the official
#: SDK's matcher stops at, so ``files://{name}`` matches ``files://report.csv``. A stricter
#: reading of RFC 6570 (a simple value has every reserved character percent-encoded) would
#: refuse the dot that every file name has; ``{+path}`` takes slashes as well.
_EXCLUDED: Final = {"": "/?#&,", "+": "?#", "#": "\n", ".": "./?#", "/": "/?#", ";": ";/?#"}
#: Between a multi-variable expression's values, and before its first one.
_SEPARATOR: Final = {"": ",", "+": ",", "#": ",", ".": ".", "/": "/", ";": ";"}
_PREFIX: Final = {"": "", "+": "", "#": "#", ".": ".", "/": "/", ";": ";"}


class _Literal(msgspec.Struct, frozen=True):
    text: str


class _Variable(msgspec.Struct, frozen=True):
    """A run of characters not in ``excluded``: the longest (greedy) or, with ``lazy``,
    the shortest from which the rest matches. ``group`` names its value."""

    group: str
    excluded: str
    lazy: bool
    stops: re.Pattern[str]  # finds the characters it cannot contain


class _OptionalEquals(msgspec.Struct, frozen=True):
    """The ``=`` after a ``{;name}`` (taken when the rest matches after it)."""


class _Query(msgspec.Struct, frozen=True):
    """``[?&]`` and the rest up to a ``#``, or nothing (taken when the rest matches)."""

    group: str


_Element = _Literal | _Variable | _OptionalEquals | _Query
_QUERY_STOPS: Final = re.compile("#")
_QUERY_STARTS: Final = re.compile("[?&]")


def _charset(op: str) -> str:
    """The regex of a value of ``op``'s variables (for the fast path)."""
    if op in ("+", "#"):
        return r"[^?#]*?" if op == "+" else r".*?"
    return "[^" + re.escape(_EXCLUDED[op]) + "]*"


def _variable(group: str, op: str) -> _Variable:
    excluded = _EXCLUDED[op]
    return _Variable(group, excluded, op in ("+", "#"), re.compile("[" + re.escape(excluded) + "]"))


class UriTemplate:
    """An RFC 6570 URI template that can *match* URIs (levels 1–4 operators; the explode
    and prefix modifiers are accepted and ignored when matching), in time linear in the
    URI's length. Raises ``ValueError`` for an invalid variable name, or a variable that
    appears twice outside the query."""

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self._query_vars: list[str] = []
        elements: list[_Element] = []
        pattern = "^"
        pos = 0
        groups: set[str] = set()
        for m in re.finditer(_EXPR, template):
            literal = template[pos : m.start()]
            pattern += re.escape(literal)
            if literal:
                elements.append(_Literal(literal))
            pos = m.end()
            op, names = m.group(1), [n.split(":")[0].rstrip("*") for n in m.group(2).split(",")]
            for n in names:
                if not re.fullmatch(_NAME, n):
                    raise ValueError(f"invalid variable name {n!r} in URI template {template!r}")
            self.variables.extend(names)
            if op in ("?", "&"):
                self._query_vars.extend(names)
                group = f"_q{len(self._query_vars)}"
                pattern += rf"(?:[?&](?P<{group}>[^#]*))?"
                elements.append(_Query(group))
                continue
            regexes = []
            if _PREFIX[op]:
                elements.append(_Literal(_PREFIX[op]))
            for i, n in enumerate(names):
                group = self._group(n)
                if group in groups:
                    raise ValueError(f"variable {n!r} appears twice in URI template {template!r}")
                groups.add(group)
                if i:
                    elements.append(_Literal(_SEPARATOR[op]))
                if op == ";":
                    elements += [_Literal(n), _OptionalEquals()]
                elements.append(_variable(group, op))
                g = f"(?P<{group}>{_charset(op)})"
                regexes.append(f"{re.escape(n)}=?{g}" if op == ";" else g)
            pattern += re.escape(_PREFIX[op]) + re.escape(_SEPARATOR[op]).join(regexes)
        tail = template[pos:]
        pattern += re.escape(tail) + "$"
        if tail:
            elements.append(_Literal(tail))
        self._elements: tuple[_Element, ...] = tuple(elements)
        #: The regex, for a template it matches in linear time (None: dynamic programming).
        self._regex = re.compile(pattern) if _unambiguous(self._elements) else None

    @staticmethod
    def _group(name: str) -> str:
        return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", name)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables if ``uri`` matches, else None. Values are percent-decoded.
        A variable that would be empty means no match."""
        if self._regex is not None:
            m = self._regex.match(uri)
            if m is None:
                return None
            groups: dict[str, str | None] = m.groupdict()
        else:
            found = _match(self._elements, uri)
            if found is None:
                return None
            groups = found
        from urllib.parse import parse_qs, unquote  # here, not at import time: it imports ipaddress

        out: dict[str, str] = {}
        for n in self.variables:
            if n in self._query_vars:
                continue
            value = groups.get(self._group(n))
            if value is None or value == "":
                return None
            out[n] = unquote(value)
        if self._query_vars:
            query = "&".join(v for k, v in groups.items() if k.startswith("_q") and v)
            parsed = parse_qs(query, keep_blank_values=True)
            for n in self._query_vars:
                if n in parsed:
                    out[n] = parsed[n][0]
        return out


# --- which templates a regex matches in linear time -------------------------------------------


def _unambiguous(elements: tuple[_Element, ...]) -> bool:
    """Whether no element can give back what it took to the rest: every variable (and
    the query's value) is followed only by characters it cannot contain, the optional
    ``=`` and the optional query only by something that cannot start as they do. Then a
    backtracking regex tries, at each position, at most one continuation that gets past
    its first character: linear time."""
    following: frozenset[str] | None = frozenset()  # what the rest can start with; None: anything
    for element in reversed(elements):
        if isinstance(element, _Literal):
            following = frozenset(element.text[0])
        elif isinstance(element, _Variable):
            if following is None or not following <= set(element.excluded):
                return False
            following = None  # a variable can start with almost anything
        elif isinstance(element, _OptionalEquals):
            if following is None or "=" in following:
                return False
            following = following | {"="}
        else:  # a query
            if following is None or not following <= {"#"} or following & {"?", "&"}:
                return False
            following = following | {"?", "&"}
    return True


# --- dynamic programming, for the ambiguous ones -----------------------------------------------


def _can_end(uri: str) -> bytearray:
    """Where the template's end can be: the end of ``uri``, or before its last character
    if that is a newline (as a regex's ``$``)."""
    n = len(uri)
    ok = bytearray(n + 1)
    ok[n] = 1
    if n and uri[-1] == "\n":
        ok[n - 1] = 1
    return ok


def _literal_from(text: str, uri: str, after: bytearray) -> bytearray:
    """Positions where ``text`` starts and the rest matches after it."""
    ok = bytearray(len(uri) + 1)
    size = len(text)
    at = uri.find(text)
    while at != -1:
        if after[at + size]:
            ok[at] = 1
        at = uri.find(text, at + 1)
    return ok


def _run_from(stops: re.Pattern[str], uri: str, after: bytearray, start: int = 0) -> bytearray:
    """Positions from which a run of allowed characters (possibly empty) reaches a
    position where the rest matches: within each maximal run [a, b] (b the next stop
    or the end), every position up to the last good one in it."""
    ok = bytearray(len(uri) + 1)
    a = start
    for stop in stops.finditer(uri, start):
        _fill_run(ok, after, a, stop.start())
        a = stop.start() + 1
    _fill_run(ok, after, a, len(uri))
    return ok


def _fill_run(ok: bytearray, after: bytearray, a: int, b: int) -> None:
    last = after.rfind(1, a, b + 1)
    if last != -1:
        ok[a : last + 1] = b"\x01" * (last + 1 - a)


def _equals_from(uri: str, after: bytearray) -> bytearray:
    ok = bytearray(after)
    at = uri.find("=")
    while at != -1:
        if after[at + 1]:
            ok[at] = 1
        at = uri.find("=", at + 1)
    return ok


def _query_from(uri: str, after: bytearray) -> bytearray:
    value = _run_from(_QUERY_STOPS, uri, after)
    ok = bytearray(after)
    for start in _QUERY_STARTS.finditer(uri):
        if value[start.start() + 1]:
            ok[start.start()] = 1
    return ok


def _match(elements: tuple[_Element, ...], uri: str) -> dict[str, str | None] | None:
    """The values of ``elements``' groups in ``uri`` as the template's regex would give
    them, or None if it does not match: O(len(uri) × len(elements))."""
    # From the end: rest[i][p] says whether elements[i:] can match uri[p:].
    rest = [_can_end(uri)]
    for element in reversed(elements):
        after = rest[-1]
        if isinstance(element, _Literal):
            rest.append(_literal_from(element.text, uri, after))
        elif isinstance(element, _Variable):
            rest.append(_run_from(element.stops, uri, after))
        elif isinstance(element, _OptionalEquals):
            rest.append(_equals_from(uri, after))
        else:
            rest.append(_query_from(uri, after))
    rest.reverse()
    if not rest[0][0]:
        return None
    # From the start: at each choice, the first a backtracking matcher would try that succeeds.
    groups: dict[str, str | None] = {}
    n = len(uri)
    p = 0
    for i, element in enumerate(elements):
        after = rest[i + 1]
        if isinstance(element, _Literal):
            p += len(element.text)
        elif isinstance(element, _Variable):
            stop = element.stops.search(uri, p)
            end = stop.start() if stop is not None else n
            j = after.find(1, p, end + 1) if element.lazy else after.rfind(1, p, end + 1)
            groups[element.group] = uri[p:j]
            p = j
        elif isinstance(element, _OptionalEquals):
            if p < n and uri[p] == "=" and after[p + 1]:
                p += 1
        else:
            taken = None
            if p < n and uri[p] in "?&":
                stop = _QUERY_STOPS.search(uri, p + 1)
                end = stop.start() if stop is not None else n
                j = after.rfind(1, p + 1, end + 1)
                if j != -1:
                    taken = uri[p + 1 : j]
                    p = j
            groups[element.group] = taken
    return groups
