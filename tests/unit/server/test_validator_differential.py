"""The built-in argument validator held against jsonschema-rs (src/mcpkit/server/validate.py).

``compile_schema`` sends the schemas mcpkit derives itself, when they use only the
keywords the small built-in validator (``_Simple``) handles, to that validator, and
everything else to ``jsonschema_rs`` (``_Full``). The two must agree: a property test
generates schemas in the built-in subset and instances at their boundaries, and checks
that both give the same verdict, and that the built-in reason names a keyword and a path
at which jsonschema-rs also finds a failure. Example-based tests below pin each boundary
and each disagreement that was found and fixed.

``MCPKIT_DIFF_EXAMPLES`` sets the number of generated examples (1,000 by default) for a
long run by hand, e.g. ``MCPKIT_DIFF_EXAMPLES=20000 pytest tests/unit/server/test_validator_differential.py``.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mcpkit.server.schema import type_schema
from mcpkit.server.validate import _TOO_DEEP, _Full, _Simple, _simple, compile_schema

EXAMPLES = int(os.environ.get("MCPKIT_DIFF_EXAMPLES", "1000"))
pytestmark = pytest.mark.timeout(60 + EXAMPLES // 20)
NAMES = ["a", "b", "c", "ü", "\U0001d535"]  # no '.' or '[': a path in a reason stays parseable
TYPES = ["string", "integer", "number", "boolean", "object", "array", "null"]
CHARS = ["a", "é", "\U0001f600", "\n", "\u00a0", "\u0663", " ", "Z"]
PATTERNS = ["^a", "a$", "^a*$", "^[a-z]+$", "^.$", "a.c", "^[^a]$", "^(a|b)c?$", "^$", "[0-9]{2}", "^[a-z ]{1,2}$", "-"]
DEFS = {"word": {"type": "string", "maxLength": 3}, "count": {"type": "integer", "minimum": 0, "maximum": 2}}

# The reason templates of the built-in validator, each with the jsonschema-rs error kind it reports.
_REASONS: list[tuple[str, str]] = [
    (r"no value is allowed here$", "FalseSchema"),
    (r" is not of type \"[a-z]+\"( or \"[a-z]+\")*$", "Type"),
    (r"(^| )has fewer than \d+ properties$", "MinProperties"),
    (r"(^| )has more than \d+ properties$", "MaxProperties"),
    (r" has fewer than \d+ items$", "MinItems"),
    (r" has more than \d+ items$", "MaxItems"),
    (r" has non-unique elements$", "UniqueItems"),
    (r" is shorter than \d+ characters$", "MinLength"),
    (r" is longer than \d+ characters$", "MaxLength"),
    (r" does not match any of the allowed schemas$", "AnyOf"),
    (r" matches none of the 'oneOf' schemas$", "OneOfNotValid"),
    (r" matches more than one of the 'oneOf' schemas$", "OneOfMultipleValid"),
    (r" is less than the minimum of \S+$", "Minimum"),
    (r" is greater than the maximum of \S+$", "Maximum"),
    (r" is not greater than \S+$", "ExclusiveMinimum"),
    (r" is not less than \S+$", "ExclusiveMaximum"),
    (r" does not match \".*\"$", "Pattern"),
    (r" is not one of .*$", "Enum"),
    (r" was expected$", "Constant"),
]


# --------------------------------------------------------------------------- strategies

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.5, 1e300, 2**53 + 1, -(2**63)]),
    st.text(st.sampled_from(CHARS), max_size=3),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)),
    max_leaves=6,
)
bounds = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2.0, 1e-9, 2**53]))
counts = st.integers(0, 3)
LEAF_KEYWORDS = [
    "type",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
]
STRUCTURAL_KEYWORDS = [
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "anyOf",
    "allOf",
    "oneOf",
    "$ref",
]
# Values of each type, and the values most easily taken for one: 1.0 is an integer, true is not.
TYPED = {
    "integer": [1, 1.0, 1.5, True, 2**64],
    "number": [0, -0.5, False, 1e300],
    "string": ["", "1", "\U0001f600"],
    "boolean": [True, 0, False, 1],
    "null": [None, 0, False, ""],
    "object": [{}, [], {"a": None}],
    "array": [[], {}, [None]],
}
DUPLICATES = [
    [1, 1.0],
    [1, True],
    [0, False],
    [{"a": 1}, {"a": 1.0}],
    [[1], [True]],
    ["a", "a"],
    [{"a": 1}, {"b": 1}],
    [None, None],
]


def _leaf_value(draw: st.DrawFn, key: str) -> Any:
    if key == "type":
        return draw(st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)))
    if key == "enum":
        return draw(st.lists(st.one_of(scalars, json_values), max_size=3))
    if key == "const":
        return draw(st.one_of(scalars, json_values))
    if key == "pattern":
        return draw(st.sampled_from(PATTERNS))
    if key == "uniqueItems":
        return draw(st.booleans())
    if key.startswith(("minimum", "maximum", "exclusive")):
        return draw(bounds)
    return draw(counts)


@st.composite
def schemas(draw: st.DrawFn, depth: int = 2) -> Any:
    """A schema in the built-in subset: boolean, or one or two leaf keywords plus structural ones."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.booleans())
    out: dict[str, Any] = {
        k: _leaf_value(draw, k) for k in draw(st.lists(st.sampled_from(LEAF_KEYWORDS), max_size=2, unique=True))
    }
    if depth <= 0:
        return out
    sub = schemas(depth - 1)
    for key in draw(st.lists(st.sampled_from(STRUCTURAL_KEYWORDS), max_size=2, unique=True)):
        if key == "properties":
            out[key] = draw(st.dictionaries(st.sampled_from(NAMES), sub, max_size=3))
        elif key == "required":
            out[key] = draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
        elif key in ("additionalProperties", "items"):
            out[key] = draw(st.one_of(st.booleans(), sub))
        elif key == "$ref":
            out[key] = "#/$defs/" + draw(st.sampled_from(sorted(DEFS)))
        elif key == "prefixItems":
            out[key] = draw(st.lists(sub, min_size=1, max_size=3))
            if draw(st.booleans()):  # items then applies only past the prefix
                out["items"] = draw(sub)
        else:
            subs = draw(st.lists(sub, min_size=1, max_size=3))
            out[key] = subs + subs[:1] if draw(st.booleans()) else subs  # a repeated schema: oneOf counts it twice
    return out


def _near_numbers(bound: float) -> list[Any]:
    near: list[Any] = [bound, float(bound), bound - 1, bound + 1, bound - 0.5, bound + 0.5]
    near += [math.nextafter(float(bound), math.inf), math.nextafter(float(bound), -math.inf)]
    if isinstance(bound, float) and bound.is_integer():
        near.append(int(bound))
    if bound in (0, 1):
        near.append(bool(bound))
    return near


def _twins(value: Any) -> list[Any]:
    """``value``, values JSON-equal to it (1 / 1.0, {"a": 1} / {"a": 1.0}) and near misses (true, another key)."""
    out = [value]
    if type(value) is int:
        out += [float(value), value == 1, value + 1]
    elif type(value) is bool or (type(value) is float and value.is_integer() and abs(value) < 1e18):
        out += [int(value)]
    elif type(value) is str:
        out += [value + "a", value[:-1]]
    elif type(value) is dict:
        out += [{k: _twins(v)[1 % len(_twins(v))] for k, v in value.items()}, {k + "x": v for k, v in value.items()}]
    elif type(value) is list:
        out += [[_twins(v)[1 % len(_twins(v))] for v in value], value[:-1], [*value, None]]
    return out


def _near_strings(n: int) -> st.SearchStrategy[str]:
    return st.integers(max(0, n - 1), n + 1).flatmap(lambda k: st.text(st.sampled_from(CHARS), min_size=k, max_size=k))


def _near_pattern(pattern: str) -> st.SearchStrategy[str]:
    """Strings Python's ``re`` finds ``pattern`` in, the same with a line terminator added,
    and the pattern's literal text with each line terminator for its dots."""
    ends = ["", "\n", "\r", "\u2028"]
    found = st.tuples(st.from_regex(pattern), st.sampled_from(ends), st.booleans())
    literal = pattern.strip("^$")
    dotted = st.sampled_from(["\r", "\n", "\u2028", "\u2029"]).map(lambda end: literal.replace(".", end))
    return st.one_of(found.map(lambda t: t[1] + t[0] if t[2] else t[0] + t[1]), dotted)


def _keyword_values(schema: dict[str, Any]) -> list[st.SearchStrategy[Any]]:
    """Instances at the boundaries of the leaf keywords of ``schema``."""
    options: list[st.SearchStrategy[Any]] = []
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema:
            options.append(st.sampled_from(_near_numbers(schema[key])))
    for key in ("minLength", "maxLength"):
        if key in schema:
            options.append(_near_strings(schema[key]))
    if schema.get("enum"):
        options.append(st.sampled_from(schema["enum"]).flatmap(lambda e: st.sampled_from(_twins(e))))
    if "const" in schema:
        options.append(st.sampled_from(_twins(schema["const"])))
    if "pattern" in schema:
        options.append(_near_pattern(schema["pattern"]))
    if "type" in schema:
        kinds = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        options.append(st.sampled_from([v for k in kinds for v in TYPED[k]]))
    if "uniqueItems" in schema:
        options.append(st.sampled_from(DUPLICATES))
    return options


def _object_near(draw: st.DrawFn, schema: dict[str, Any], depth: int) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    pool = sorted({*props, *schema.get("required", ()), "c"})
    lo, hi = schema.get("minProperties", 0), schema.get("maxProperties", 3)
    fewest = min(max(0, lo - 1), len(pool))
    picked = draw(st.lists(st.sampled_from(pool), min_size=fewest, max_size=max(fewest, min(hi + 1, len(pool))), unique=True))
    return {k: draw(instances(props.get(k, extra), depth - 1)) for k in picked}


def _array_near(draw: st.DrawFn, schema: dict[str, Any], depth: int) -> list[Any]:
    items = schema.get("items", True)
    prefix = schema.get("prefixItems", [])
    lo, hi = schema.get("minItems", 0), schema.get("maxItems", len(prefix) + 2)
    length = draw(st.integers(max(0, lo - 1), max(lo, hi) + 1))
    return [draw(instances(prefix[i] if i < len(prefix) else items, depth - 1)) for i in range(length)]


@st.composite
def instances(draw: st.DrawFn, schema: Any, depth: int = 3) -> Any:
    """An instance near the boundaries of ``schema``: of its keywords, its parts, or any small JSON value."""
    if isinstance(schema, bool) or depth <= 0:
        return draw(json_values)
    branches: list[Any] = ["keyword"] * 3 if _keyword_values(schema) else []
    if {"properties", "required", "additionalProperties", "minProperties", "maxProperties"} & schema.keys():
        branches += ["object"] * 2
    if {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"} & schema.keys():
        branches += ["array"] * 2
    branches += [sub for key in ("anyOf", "allOf", "oneOf") for sub in schema.get(key, ())]
    if "$ref" in schema:
        branches.append(DEFS[schema["$ref"][8:]])
    branch = draw(st.sampled_from([*branches, "any"]))
    if branch == "keyword":
        return draw(st.one_of(_keyword_values(schema)))
    if branch == "object":
        return _object_near(draw, schema, depth)
    if branch == "array":
        return _array_near(draw, schema, depth)
    if branch == "any":
        return draw(json_values)
    return draw(instances(branch, depth - 1))


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, Any]:
    schema = draw(schemas())
    if isinstance(schema, dict) and "$ref" in str(schema):
        schema["$defs"] = DEFS
    return schema, draw(instances(schema))


# --------------------------------------------------------------------------- checking


def _parse_path(text: str) -> list[str | int]:
    parts: list[str | int] = []
    for name, index in re.findall(r"(?:^|\.)([^.\[\]]+)|\[(\d+)\]", text):
        parts.append(int(index) if index else name)
    return parts


def _reason_kinds(reason: str) -> set[tuple[str, tuple[str | int, ...]]]:
    """The jsonschema-rs errors (kind, instance path) that a built-in reason stands for."""
    m = re.match(r"missing required argument '(.*)'$", reason)
    if m:
        return {("Required", tuple(_parse_path(m.group(1))[:-1]))}
    m = re.match(r"unexpected argument '(.*)'$", reason)
    if m:  # jsonschema-rs reports a lone "additionalProperties": false as a false schema
        where = tuple(_parse_path(m.group(1))[:-1])
        return {("AdditionalProperties", where), ("FalseSchema", where)}
    m = re.match(r"argument '([^']*)': (.*)$", reason, re.S)
    path, message = (tuple(_parse_path(m.group(1))), m.group(2)) if m else ((), reason)
    for pattern, kind in _REASONS:
        if re.search(pattern, message, re.S):
            return {(kind, path)}
    raise AssertionError(f"a reason in no known form: {reason!r}")


def _verdicts(schema: Any, instance: Any) -> tuple[str | None, set[tuple[str, tuple[str | int, ...]]]]:
    simple = _Simple(schema).describe(instance)
    errors = {(type(e.kind).__name__, tuple(e.instance_path)) for e in _Full(schema)._validator.iter_errors(instance)}
    return simple, errors


def assert_agree(schema: Any, instance: Any) -> None:
    assert _simple(schema, schema if isinstance(schema, dict) else {}), schema
    reason, errors = _verdicts(schema, instance)
    full = _Full(schema).describe(instance)
    assert (reason is None) == (full is None), f"built-in: {reason!r}; jsonschema-rs: {full!r}"
    if reason is not None:
        named = _reason_kinds(reason)
        assert named & errors, f"built-in says {reason!r} ({named}); jsonschema-rs: {errors}"


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_builtin_validator_agrees_with_jsonschema_rs(case: tuple[Any, Any]) -> None:
    assert_agree(*case)


# --------------------------------------------------------------------------- examples


def both(schema: Any, instance: Any) -> tuple[bool, bool]:
    """(built-in valid, jsonschema-rs valid), each forced directly."""
    return _Simple(schema).describe(instance) is None, _Full(schema).describe(instance) is None


@pytest.mark.parametrize(
    ("schema", "valid", "invalid", "keyword"),
    [
        ({"minLength": 2}, ["ab", "\U0001f600\U0001f600", "éé"], ["a", "\U0001f600", ""], "shorter than 2"),
        ({"maxLength": 2}, ["ab", "\U0001f600\U0001f600", ""], ["abc", "\U0001f600\U0001f600\U0001f600"], "longer than 2"),
        ({"minimum": 2}, [2, 2.0, 3, 2.5], [1, 1.5, 1.9999999999999998], "less than the minimum of 2"),
        ({"maximum": 2}, [2, 2.0, 1.5, -5], [3, 2.0000000000000004, 2**64], "greater than the maximum of 2"),
        ({"exclusiveMinimum": 2}, [3, 2.0000000000000004], [2, 2.0, 1], "is not greater than 2"),
        ({"exclusiveMaximum": 2}, [1, 1.9999999999999998], [2, 2.0, 3], "is not less than 2"),
        ({"minProperties": 2}, [{"a": 1, "b": 2}], [{"a": 1}, {}], "fewer than 2 properties"),
        ({"maxProperties": 1}, [{"a": 1}, {}], [{"a": 1, "b": 2}], "more than 1 properties"),
        ({"minItems": 2}, [[1, 2]], [[1], []], "fewer than 2 items"),
        ({"maxItems": 2}, [[1, 2], []], [[1, 2, 3]], "more than 2 items"),
    ],
)
def test_every_boundary(schema: dict[str, Any], valid: list[Any], invalid: list[Any], keyword: str) -> None:
    for instance in valid:
        assert both(schema, instance) == (True, True), instance
    for instance in invalid:
        assert both(schema, instance) == (False, False), instance
        reason = compile_schema(schema, trusted=True).describe(instance)
        assert reason is not None
        assert keyword in reason, reason
    # a boundary keyword constrains only its own type: anything else passes
    assert both(schema, None) == (True, True)


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        ({"enum": [1]}, 1.0, True),
        ({"enum": [1.0]}, 1, True),
        ({"enum": [1]}, True, False),
        ({"enum": [True]}, 1, False),
        ({"enum": [0]}, False, False),
        ({"enum": [None]}, 0, False),
        ({"const": {"a": 1}}, {"a": 1.0}, True),
        ({"const": {"a": 1}}, {"a": True}, False),
        ({"const": {"a": 1}}, {"b": 1}, False),
        ({"enum": [{"a": 1, "b": 2}]}, {"a": 1, "c": 2}, False),
        ({"const": {"a": 1, "b": [1]}}, {"b": [1.0], "a": 1}, True),
        ({"const": [1, 2]}, [2, 1], False),
        ({"const": [1]}, [1, 1], False),
        ({"const": "1"}, 1, False),
        ({"const": 9007199254740992.0}, 2**53 + 1, False),
        ({"uniqueItems": True}, [1, 1.0], False),
        ({"uniqueItems": True}, [1, True], True),
        ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}], False),
        ({"uniqueItems": True}, [[0], [False]], True),
    ],
)
def test_json_equality_in_enum_const_and_unique_items(schema: dict[str, Any], instance: Any, valid: bool) -> None:
    assert both(schema, instance) == (valid, valid)


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        (True, {"anything": [1]}, True),
        (False, None, False),
        ({"properties": {"a": False}}, {"a": 1}, False),
        ({"properties": {"a": False}}, {"b": 1}, True),
        ({"properties": {"a": True}, "additionalProperties": False}, {"a": 1}, True),
        ({"additionalProperties": False}, {"a": 1}, False),
        ({"additionalProperties": False}, {}, True),
        ({"items": False}, [], True),
        ({"items": False}, [1], False),
        ({"prefixItems": [True], "items": False}, [1], True),
        ({"prefixItems": [True], "items": False}, [1, 2], False),
        ({"anyOf": [False, True]}, 1, True),
        ({"allOf": [True, False]}, 1, False),
    ],
)
def test_boolean_subschemas(schema: Any, instance: Any, valid: bool) -> None:
    assert both(schema, instance) == (valid, valid)
    if not valid:
        assert compile_schema(schema, trusted=True).describe(instance)


@pytest.mark.parametrize(
    ("instance", "matches"),
    [(1, 2), (1.0, 2), (1.5, 1), ("a", 1), (None, 0), (True, 0)],
)
def test_one_of_counts_its_matches(instance: Any, matches: int) -> None:
    schema = {"oneOf": [{"type": "number"}, {"type": ["integer", "string"]}]}
    valid = matches == 1
    assert both(schema, instance) == (valid, valid)
    reason = _Simple(schema).describe(instance)
    if matches == 0:
        assert reason is not None
        assert "matches none of the 'oneOf'" in reason
    elif matches > 1:
        assert reason is not None
        assert "matches more than one of the 'oneOf'" in reason
    else:
        assert reason is None


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        ({"type": "integer"}, 1.0, True),
        ({"type": "integer"}, 1.5, False),
        ({"type": "integer"}, True, False),
        ({"type": "number"}, False, False),
        ({"type": "integer"}, 2**70, True),
        ({"type": "integer"}, 1e300, True),
        ({"type": ["integer", "null"]}, None, True),
        ({"type": ["boolean", "string"]}, 0, False),
        ({"minimum": 0}, True, True),  # a boolean is no number: minimum does not apply
    ],
)
def test_integers_floats_and_booleans(schema: dict[str, Any], instance: Any, valid: bool) -> None:
    assert both(schema, instance) == (valid, valid)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("schema", [{"type": "number"}, {"type": "integer"}, {"maximum": 10}, {"minimum": 10}])
def test_nan_and_infinity_are_refused(schema: dict[str, Any], value: float) -> None:
    # No JSON text decodes to NaN or infinity (the wire decoder refuses 1e400); a tool's
    # structured output can hold one. The built-in names it; jsonschema-rs, which reads
    # it as null, also refuses it wherever a number is required.
    reason = compile_schema(schema, trusted=True).describe(value)
    assert reason in ("is not a finite number", f'{value!r} is not of type "integer"')
    if "type" in schema:
        assert _Full(schema).describe(value) is not None


@pytest.mark.parametrize(
    ("pattern", "instance", "valid"),
    [
        ("^a$", "a\n", False),  # ECMA-262 "$" is the end; Python's "$" also matches before a final newline
        ("a$", "ba\n", False),
        ("^[a-z]+$", "abc\n", False),
        ("^.$", "\r", False),  # ECMA-262 "." matches no line terminator
        ("^.$", "\u2028", False),
        ("^a.c$", "a\u2029c", False),
        ("^.$", "\U0001f600", True),  # one code point
        ("^.$", "\x85", True),
        ("^[^a]{2}$", "\U0001f600é", True),
        ("^[a-z]{2,3}$", "abc", True),
        ("^[A-Z]{3}$", "ABC", True),
    ],
)
def test_portable_patterns_mean_what_ecma_262_says(pattern: str, instance: str, valid: bool) -> None:
    schema = {"type": "string", "pattern": pattern}
    assert isinstance(compile_schema(schema, trusted=True), _Simple)
    assert both(schema, instance) == (valid, valid)


@pytest.mark.parametrize(
    ("pattern", "instance", "valid"),
    [
        ("^\\d$", "\u0663", False),  # ECMA-262 \d is [0-9]; Python's is any Unicode digit
        ("^\\w$", "é", False),  # ECMA-262 \w is [A-Za-z0-9_]
        ("^\\s$", "\x1c", False),  # not ECMA-262 white space; Python's \s matches it
        ("^é+$", "éé", True),
        ("a++", "aa", True),
        ("(?i)a", "A", True),
        ("^a\\.b$", "a.b", True),
        ("^a--b$", "a--b", True),  # "--" is a set difference to come in Python's classes: not portable
    ],
)
def test_other_patterns_go_to_jsonschema_rs(pattern: str, instance: str, valid: bool) -> None:
    schema = {"type": "string", "pattern": pattern}
    validator = compile_schema(schema, trusted=True)
    assert isinstance(validator, _Full)
    assert (validator.describe(instance) is None) == valid


def test_a_recursive_schema_agrees_and_a_too_deep_value_is_named() -> None:
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "n": {"maximum": 1}}}},
        "$ref": "#/$defs/node",
    }
    for instance in [{}, {"next": {"next": {"n": 1}}}, {"next": {"next": {"n": 2}}}, {"next": 1}]:
        assert_agree(schema, instance)
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"next": deep}
    assert _Simple(schema).describe(deep) == _TOO_DEEP


def test_a_derived_pattern_refuses_a_trailing_newline() -> None:
    # A pydantic field's pattern reaches the built-in validator; "$" used to accept "abc\n".
    class Code(pydantic.BaseModel):
        code: str = pydantic.Field(pattern="^[a-z]+$")

    validator = compile_schema(type_schema(Code, {}), trusted=True)
    assert isinstance(validator, _Simple)
    assert validator.describe({"code": "abc"}) is None
    assert validator.describe({"code": "abc\n"}) == 'argument \'code\': "abc\\n" does not match "^[a-z]+$"'


@pytest.mark.parametrize(
    ("ref", "instance", "valid"),
    [
        ("#/$defs/a~1b", 1, True),  # JSON Pointer: "~1" is "/", so this is the integer "a/b", not the string "a~1b"
        ("#/$defs/a~1b", "x", False),
        ("#/$defs/a~0b", "x", True),  # "~0" is "~"
        ("#/$defs/a%7E1b", 1, True),  # percent-decoded to "a~1b", then "a/b"
        ("#/$defs/Name_1.v-2", "x", True),
        ("#/$defs/Name_1.v-2", 1, False),
    ],
)
def test_a_ref_is_resolved_as_a_json_pointer(ref: str, instance: Any, valid: bool) -> None:
    schema = {
        "$defs": {
            "a~1b": {"type": "string"},
            "a/b": {"type": "integer"},
            "a~b": {"type": "string"},
            "Name_1.v-2": {"type": "string"},
        },
        "properties": {"p": {"$ref": ref}},
    }
    validator = compile_schema(schema, trusted=True)
    assert (validator.describe({"p": instance}) is None) == valid
    assert _Full(schema).describe({"p": instance}) == validator.describe({"p": instance})


_FLAT = [
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "default": 1},
            "x": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "flag": {"type": ["boolean", "null"]},
        },
        "required": ["n"],
        "additionalProperties": False,
    },
]


_INSTANCES: list[Any] = [
    {"text": "t"},
    {"text": 1},
    {},
    {"text": "t", "other": 1},
    {"n": 1},
    {"n": True},
    {"n": 2.0},
    {"n": 2.5},
    {"n": 1, "x": 1.5},
    {"n": 1, "x": float("nan")},
    {"n": 1, "x": float("inf")},
    {"n": 1, "x": None},
    {"n": 1, "mode": "a"},
    {"n": 1, "mode": "c"},
    {"n": 1, "mode": 1},
    {"n": 1, "tags": ["a", "b"]},
    {"n": 1, "tags": ["a", 2]},
    {"n": 1, "flag": None},
    {"n": 1, "flag": 0},
    {"n": 1, "unknown": 0},
    [],
    "text",
]


@pytest.mark.parametrize("schema", _FLAT)
def test_the_validators_fast_path_answers_as_the_full_check(schema: dict[str, Any]) -> None:
    fast = compile_schema(schema, trusted=True)
    assert isinstance(fast, _Simple)
    assert fast._plan is not None
    full = _Simple(schema)
    full._plan = None  # the full check alone
    answers = [(fast.describe(i), full.describe(i)) for i in _INSTANCES]
    assert all(a == b for a, b in answers), answers
    assert any(a is None for a, _ in answers)
    assert any(a is not None for a, _ in answers)
