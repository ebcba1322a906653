"""URI templates (RFC 6570) matched against URIs: the same values as the backtracking
regex the server used before issue 24 (kept below as the oracle, with each operator's
character class as issue 27 widened it), for every template and URI hypothesis makes
up. That it takes time linear in the URI's length on the ambiguous templates the regex
took O(n²) or O(n³) on is tests/hostile/test_uri_templates.py's (the attack, over HTTP)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mcpkit.server.definitions.uri_template import UriTemplate


class OldUriTemplate:
    """The matcher of mcpkit before issue 24, verbatim but for the name and the character
    classes of issue 27 (a simple value may hold ``.``, ``;`` and ``=``): the oracle."""

    _EXPR = re.compile(r"\{([+#./;?&]?)([^{}]+)\}")

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self._query_vars: list[str] = []
        pattern = "^"
        pos = 0
        for m in self._EXPR.finditer(template):
            pattern += re.escape(template[pos : m.start()])
            pos = m.end()
            op, names = m.group(1), [n.split(":")[0].rstrip("*") for n in m.group(2).split(",")]
            for n in names:
                if not re.fullmatch(r"[A-Za-z0-9_.%]+", n):
                    raise ValueError(f"invalid variable name {n!r} in URI template {template!r}")
            self.variables.extend(names)
            if op in ("?", "&"):
                self._query_vars.extend(names)
                pattern += rf"(?:[?&](?P<_q{len(self._query_vars)}>[^#]*))?"
                continue
            groups = []
            for n in names:
                g = f"(?P<{self._group(n)}>{self._charset(op)})"
                groups.append(g)
            sep = {"": ",", "+": ",", "#": ",", ".": r"\.", "/": "/", ";": ";"}[op]
            prefix = {"": "", "+": "", "#": "#", ".": r"\.", "/": "/", ";": ";"}[op]
            if op == ";":
                groups = [f"{re.escape(n)}=?{g}" for n, g in zip(names, groups, strict=True)]
            pattern += prefix + sep.join(groups)
        pattern += re.escape(template[pos:]) + "$"
        self._regex = re.compile(pattern)

    @staticmethod
    def _group(name: str) -> str:
        return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", name)

    @staticmethod
    def _charset(op: str) -> str:
        if op in ("+", "#"):
            return r"[^?#]*?" if op == "+" else r".*?"
        return {"": r"[^/?#&,]*", ".": r"[^./?#]*", "/": r"[^/?#]*", ";": r"[^;/?#]*"}[op]

    def match(self, uri: str) -> dict[str, str] | None:
        from urllib.parse import parse_qs, unquote

        m = self._regex.match(uri)
        if m is None:
            return None
        out: dict[str, str] = {}
        for n in self.variables:
            if n in self._query_vars:
                continue
            value = m.group(self._group(n))
            if value is None or value == "":
                return None
            out[n] = unquote(value)
        if self._query_vars:
            query = "&".join(v for k, v in m.groupdict().items() if k.startswith("_q") and v)
            parsed = parse_qs(query, keep_blank_values=True)
            for n in self._query_vars:
                if n in parsed:
                    out[n] = parsed[n][0]
        return out


# --- templates and URIs as hypothesis makes them up ------------------------------------------------

_CHARS = "ab/.,;=?&#%41\n-"
_literal = st.one_of(st.text(alphabet="ab/.,;=?&#-\n", max_size=3), st.sampled_from(["", "x://", "/", "a/"]))
_names = st.lists(st.sampled_from(["x", "y", "z", "q", "r"]), min_size=1, max_size=2, unique=True)


@st.composite
def templates(draw: Any) -> str:
    parts = [draw(_literal)]
    used: set[str] = set()
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["", "+", "#", ".", "/", ";", "?", "&"]))
        names = [n for n in draw(_names) if op in ("?", "&") or n not in used]
        if not names:
            continue
        if op not in ("?", "&"):
            used.update(names)
        parts.append("{" + op + ",".join(names) + "}")
        parts.append(draw(_literal))
    return "".join(parts)


_value = st.one_of(st.text(alphabet="ab-%41", min_size=1, max_size=3), st.text(alphabet=_CHARS, max_size=4))


def _expansion(draw: Any, op: str, names: list[str]) -> str:
    """What ``{op names}`` could expand to, or random text now and then."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.text(alphabet=_CHARS, max_size=5))
    values = [draw(_value) for _ in names]
    if op in ("?", "&"):
        return op + "&".join(f"{n}={v}" for n, v in zip(names, values, strict=True))
    if op == ";":
        return "".join(f";{n}={v}" for n, v in zip(names, values, strict=True))
    sep = {"": ",", "+": ",", "#": ",", ".": ".", "/": "/"}[op]
    return {"#": "#", ".": ".", "/": "/"}.get(op, "") + sep.join(values)


def _uri_for(draw: Any, template: str) -> str:
    """A URI near the template (its expressions expanded, sometimes badly: many match),
    or random text."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.text(alphabet=_CHARS, max_size=14))
    out, pos = "", 0
    for m in re.finditer(r"\{([+#./;?&]?)([^{}]+)\}", template):
        out += template[pos : m.start()] + _expansion(draw, m.group(1), m.group(2).split(","))
        pos = m.end()
    return out + template[pos:]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_values_are_the_old_regexs(data: st.DataObject) -> None:
    template = data.draw(templates())
    new, old = UriTemplate(template), OldUriTemplate(template)
    for _ in range(8):
        uri = _uri_for(data.draw, template)
        assert new.match(uri) == old.match(uri), (template, uri)


KNOWN = [
    "users://{user_id}/profile",
    "files://{+path}",
    "search://items{?q,limit}",
    "x://{+a}/{+b}",
    "y://{+a}/{+b}/{+c}",
    "doc://{a}{b}",
    "map://{x,y}/tile{.fmt}",
    "page://{/seg,more}{?q}{&r}",
    "m://x{;k,v}",
    "h://page{#frag}",
    "h://{+a}{#frag}",
    "q://{?a}{&b}{?c}",
]
URIS = [
    "users://7/profile",
    "users:///profile",
    "files://a/b/c.txt",
    "files://a?b",
    "search://items?q=hello%20world&limit=5",
    "search://items?limit=3",
    "search://items",
    "x://a/b",
    "x:////b",
    "x://a/b/c/d",
    "x://a%2Fb/c",
    "y://a/b/c",
    "y://a/b/c/d/e",
    "y:////",
    "doc://ab",
    "map://1,2/tile.png",
    "page:///a/b?q=1&r=2",
    "m://x;k=1;v",
    "h://page#top",
    "h://a/b#c",
    "q://?a=1&b=2?c=3",
    "users://7/profile\n",
    "files://a\n",
]


@pytest.mark.parametrize("template", KNOWN)
def test_known_templates_match_as_before(template: str) -> None:
    new, old = UriTemplate(template), OldUriTemplate(template)
    assert [new.match(uri) for uri in URIS] == [old.match(uri) for uri in URIS]


def test_the_documented_examples() -> None:
    assert UriTemplate("files://{name}").match("files://report.csv") == {"name": "report.csv"}
    assert UriTemplate("files://{name}").match("files://a/b.csv") is None
    assert UriTemplate("users://{user_id}/profile").match("users://42/profile") == {"user_id": "42"}
    assert UriTemplate("files://{+path}").match("files://docs/a%20b.md") == {"path": "docs/a b.md"}
    assert UriTemplate("search://items{?q,limit}").match("search://items?limit=3&q=x") == {"q": "x", "limit": "3"}
    assert UriTemplate("x://{+a}/{+b}").match("x://1/2/3") == {"a": "1", "b": "2/3"}
    assert UriTemplate("x://{+a}/{+b}").match("x://1") is None


def test_invalid_templates_are_refused() -> None:
    with pytest.raises(ValueError, match="invalid variable name"):
        UriTemplate("x://{a b}")
    with pytest.raises(ValueError, match="appears twice"):
        UriTemplate("x://{a}/{a}")


def test_ambiguous_templates_are_not_matched_by_a_backtracking_regex() -> None:
    """Which path each template takes: the unambiguous ones keep their regex."""
    assert UriTemplate("users://{user_id}/profile")._regex is not None
    assert UriTemplate("files://{+path}")._regex is not None
    assert UriTemplate("search://items{?q,limit}")._regex is not None
    for ambiguous in ("x://{+a}/{+b}", "y://{+a}/{+b}/{+c}", "doc://{a}{b}", "q://{?a}{&b}"):
        assert UriTemplate(ambiguous)._regex is None, ambiguous


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        # A simple value: anything but the URI's structure and the expression's separator.
        ("files://{name}", "files://v1.2;x=y", {"name": "v1.2;x=y"}),
        ("files://{name}", "files://a,b", None),
        ("files://{name}", "files://a&b", None),
        ("files://{name}", "files://a?b", None),
        ("files://{name}", "files://a#b", None),
        ("files://{name}/raw", "files://x.tar.gz/raw", {"name": "x.tar.gz"}),
        ("files://{a}.{b}", "files://x.tar.gz", {"a": "x.tar", "b": "gz"}),
        # Labels stop at a dot, segments at a slash, path parameters at a semicolon.
        ("f://x{.ext}", "f://x.tar.gz", None),
        ("f://x{.ext}", "f://x.t,z", {"ext": "t,z"}),
        ("f://x{/seg}", "f://x/a.b,c", {"seg": "a.b,c"}),
        ("f://x{;k}", "f://x;k=a=b", {"k": "a=b"}),
        ("f://x{;k}", "f://x;k=a;b", None),
    ],
)
def test_each_operators_stops(template: str, uri: str, expected: dict[str, str] | None) -> None:
    assert UriTemplate(template).match(uri) == expected
