"""Argument validation as a tool's caller sees it (src/mcpkit/server/validate.py).

The reason a call is refused is one line a person can act on: it names the argument by its
path and says what is wrong with the value. tests/unit/server/test_validator_differential.py holds the
built-in validator's verdicts against jsonschema-rs; this file pins the reasons themselves
(every template, at a nested path, for arguments and for structured output fields), the
JSON equality and typing rules, which schemas a trusted caller may hand over, and the
choice between the built-in validator and jsonschema-rs.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypedDict

import jsonschema_rs
import pytest

from mcpkit import Client, McpError, Server
from mcpkit.server.validate import SchemaError, compile_schema
from support.ports import free_port
from support.processes import listening, stop


def reason(schema: Any, instance: Any, what: str = "argument", *, trusted: bool = True) -> str | None:
    return compile_schema(schema, trusted=trusted).describe(instance, what)


def nested(inner: Any) -> dict[str, Any]:
    """A schema whose ``a.b`` is an array of ``inner``."""
    return {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "array", "items": inner}}}}}


# --- every reason, at a nested path ------------------------------------------------------------


@pytest.mark.parametrize(
    ("inner", "good", "bad", "says"),
    [
        ({"type": ["string", "null"]}, None, 5, '5 is not of type "string" or "null"'),
        ({"type": "array"}, [], {}, '{} is not of type "array"'),
        ({"type": "boolean"}, False, 0, '0 is not of type "boolean"'),
        ({"type": "integer"}, 2.0, 2.5, '2.5 is not of type "integer"'),
        ({"type": "object"}, {}, [], '[] is not of type "object"'),
        ({"type": "null"}, None, False, 'false is not of type "null"'),
        ({"enum": ["x", [1]]}, [1.0], "z", '"z" is not one of ["x",[1]]'),
        ({"const": {"k": "x"}}, {"k": "x"}, {"k": "y"}, '{"k":"x"} was expected'),
        ({"minLength": 2}, "zz", "z", '"z" is shorter than 2 characters'),
        ({"maxLength": 1}, "z", "zz", '"zz" is longer than 1 characters'),
        ({"pattern": "^a"}, "ab", "ba", '"ba" does not match "^a"'),
        ({"minimum": 2}, 2, 1, "1 is less than the minimum of 2"),
        ({"maximum": 2}, 2.0, 3, "3 is greater than the maximum of 2"),
        ({"exclusiveMinimum": 2}, 3, 2, "2 is not greater than 2"),
        ({"exclusiveMaximum": 2}, 1, 2.0, "2.0 is not less than 2"),
        ({"type": "number"}, 1, math.inf, "is not a finite number"),
        ({"maximum": 10}, 1, -math.inf, "is not a finite number"),
        ({"minimum": 0}, 1, math.nan, "is not a finite number"),
        ({"minItems": 2}, [1, 2], [1], "[1] has fewer than 2 items"),
        ({"maxItems": 1}, [1], [1, 2], "[1,2] has more than 1 items"),
        ({"uniqueItems": True}, [1, True], [1, 1.0], "[1,1.0] has non-unique elements"),
        ({"minProperties": 1}, {"k": 1}, {}, "has fewer than 1 properties"),
        ({"maxProperties": 0}, {}, {"k": 1}, "has more than 0 properties"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "s", 1, "1 does not match any of the allowed schemas"),
        ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 1, None, "null matches none of the 'oneOf' schemas"),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.5, 1, "1 matches more than one of the 'oneOf' schemas"),
    ],
)
@pytest.mark.parametrize("what", ["argument", "field"])
def test_a_reason_names_the_path_and_the_value(inner: Any, good: Any, bad: Any, says: str, what: str) -> None:
    schema = nested(inner)
    assert reason(schema, {"a": {"b": [good]}}, what) is None
    assert reason(schema, {"a": {"b": [good, bad]}}, what) == f"{what} 'a.b[1]': {says}"
    # at the root there is no path to name
    assert reason(inner, bad, what) == says


@pytest.mark.parametrize("what", ["argument", "field"])
def test_object_reasons_name_the_member(what: str) -> None:
    assert reason(nested({"required": ["k"]}), {"a": {"b": [{"k": 1}, {}]}}, what) == f"missing required {what} 'a.b[1].k'"
    assert reason(nested({"additionalProperties": False}), {"a": {"b": [{"k": 1}]}}, what) == f"unexpected {what} 'a.b[0].k'"
    extra = nested({"additionalProperties": {"type": "string"}})
    assert reason(extra, {"a": {"b": [{"k": "v"}, {"k": 1}]}}, what) == f"{what} 'a.b[1].k': 1 is not of type \"string\""
    tuple_ = nested({"prefixItems": [{"type": "string"}, {"type": "integer"}]})
    assert reason(tuple_, {"a": {"b": [["s", 1], ["s", "t"]]}}, what) == f'{what} \'a.b[1][1]\': "t" is not of type "integer"'
    all_of = nested({"allOf": [{"type": "integer"}, {"minimum": 5}]})
    assert reason(all_of, {"a": {"b": [5, 4]}}, what) == f"{what} 'a.b[1]': 4 is less than the minimum of 5"
    assert reason(nested(False), {"a": {"b": []}}, what) is None
    assert reason(nested(False), {"a": {"b": [None]}}, what) == f"{what} 'a.b[0]': no value is allowed here"
    assert reason({"required": ["k"]}, {}, what) == f"missing required {what} 'k'"
    assert reason({"additionalProperties": False}, {"k": 1}, what) == f"unexpected {what} 'k'"


def test_additional_properties_apply_only_to_undeclared_members() -> None:
    schema = {"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}}
    assert reason(schema, {"a": 1, "b": "x"}) is None
    assert reason(schema, {"a": "x"}) == 'argument \'a\': "x" is not of type "integer"'
    assert reason(schema, {"b": 1}) == "argument 'b': 1 is not of type \"string\""
    assert reason({"additionalProperties": True}, {"b": 1}) is None


def test_items_after_prefix_items_follow_items() -> None:
    schema = {"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}
    assert reason(schema, ["s", 1, 2]) is None
    assert reason(schema, ["s", 1, "t"]) == 'argument \'[2]\': "t" is not of type "integer"'
    assert reason(schema, [1]) == "argument '[0]': 1 is not of type \"string\""
    assert reason({"prefixItems": [{"type": "string"}, {"type": "string"}]}, ["s"]) is None  # shorter than the prefix


def test_a_long_value_is_shown_shortened() -> None:
    assert reason({"maxLength": 3}, "x" * 78) == '"' + "x" * 78 + '" is longer than 3 characters'  # 80 characters: whole
    assert reason({"maxLength": 3}, "x" * 79) == '"' + "x" * 76 + "... is longer than 3 characters"
    assert reason({"maxLength": 3}, "y" * 10_000) == '"' + "y" * 76 + "... is longer than 3 characters"
    assert reason({"maxItems": 1}, list(range(100))) == "[" + ",".join(map(str, range(100)))[:76] + "... has more than 1 items"


def test_what_follows_the_part_shown_does_not_change_it() -> None:
    # Output from Python code can hold a lone surrogate, which JSON cannot encode; past the
    # part of a long string that is shown, it changes nothing.
    shown = '"' + "x" * 76 + "... is longer than 3 characters"
    assert reason({"maxLength": 3}, "x" * 80 + "\ud800") == shown
    assert reason({"maxLength": 3}, "x" * 80 + "\ud800" + "y") == shown


def test_a_value_that_is_not_json_is_still_shown() -> None:
    # Structured output is validated before it is encoded: it can hold what JSON cannot.
    assert reason({"type": "string"}, 2**70) == '1180591620717411303424 is not of type "string"'
    assert reason({"type": "string"}, {1, 2}) == '[1,2] is not of type "string"'
    shown = reason({"type": "string"}, object())
    assert shown is not None
    assert shown.startswith("<object object at 0x")
    assert shown.endswith('is not of type "string"')
    deep: Any = []
    for _ in range(10_000):
        deep = [deep]
    assert reason({"type": "string"}, deep) == '(a nested list) is not of type "string"'


def test_jsonschema_rs_refuses_a_value_json_cannot_hold_before_it_validates() -> None:
    # So a reason of jsonschema-rs's never has to show such a value (_Full.describe).
    for value in (object(), "\ud800", ["\ud800"], {"a": "\ud800"}, {"a": [object()]}):
        for schema in ({"type": "integer"}, {"maxLength": 0}, {"not": {}}, {"items": {"type": "integer"}}):
            assert reason(schema, value, trusted=False) in (None, "nested too deeply to validate"), (schema, value)


# --- JSON equality and JSON types ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        ({"enum": ["a", "b"]}, "a", True),
        ({"enum": ["a"]}, "A", False),
        ({"const": None}, None, True),
        ({"const": None}, False, False),
        ({"const": "x"}, "x", True),
        ({"const": ["a"]}, "a", False),  # a list is never equal to a string
        ({"const": "a"}, ["a"], False),
        ({"enum": [{"a": 1}]}, [1], False),  # an object is never equal to an array
        ({"enum": [{"a": 1}]}, "a", False),
        ({"enum": [[{"a": [1, {"b": True}]}]]}, [{"a": [1.0, {"b": True}]}], True),
        ({"enum": [[{"a": [1, {"b": True}]}]]}, [{"a": [1.0, {"b": 1}]}], False),
        ({"const": [1, [2]]}, [1, [2, 3]], False),
        ({"const": False}, 0, False),
        ({"const": 0}, False, False),
        ({"const": 1.0}, 1, True),
    ],
)
def test_json_equality(schema: dict[str, Any], instance: Any, valid: bool) -> None:
    assert (reason(schema, instance) is None) is valid


@pytest.mark.parametrize(
    ("kind", "members", "others"),
    [
        ("array", [[], [1, "a"]], [{}, "[]", None, (1,)]),
        ("boolean", [True, False], [0, 1, "true", None]),
        ("object", [{}, {"a": 1}], [[], None, "{}"]),
        ("string", ["", "1"], [1, None, b"x"]),
        ("null", [None], [0, False, "", []]),
    ],
)
def test_json_types(kind: str, members: list[Any], others: list[Any]) -> None:
    for value in members:
        assert reason({"type": kind}, value) is None, value
    for value in others:
        assert reason({"type": kind}, value) is not None, value


@pytest.mark.parametrize("combinator", ["anyOf", "oneOf"])
def test_alternatives_that_are_objects(combinator: str) -> None:
    point = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    schema = nested({combinator: [point, {"type": "null"}]})
    assert reason(schema, {"a": {"b": [{"x": 1}, None]}}) is None
    for bad in ({"x": "1"}, {}):
        said = reason(schema, {"a": {"b": [bad]}})
        assert said is not None
        assert said.startswith("argument 'a.b[0]': "), said


# --- which schemas are accepted, and by which validator -----------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "strng"},
        {"type": 5},
        {"type": ["string", "nope"]},
        {"enum": "abc"},
        {"required": "a"},
        {"required": [1]},
        {"minLength": -1},
        {"maxItems": 1.5},
        {"minProperties": "1"},
        {"maxProperties": -2},
        {"minItems": True},
        {"maxLength": None},
        {"minimum": "1"},
        {"maximum": None},
        {"exclusiveMinimum": True},
        {"exclusiveMaximum": [1]},
        {"uniqueItems": "yes"},
        {"anyOf": []},
        {"allOf": {}},
        {"oneOf": [{"type": "nope"}]},
        {"prefixItems": [5]},
        {"properties": []},
        {"properties": {"a": {"minLength": -1}}},
        {"$defs": {"a": {"minLength": -1}}},
        {"items": {"type": "nope"}},
        {"additionalProperties": {"minItems": -1}},
        {"$ref": "#/$defs/missing"},
        {"$ref": "#/$defs/missing", "$defs": {}},
        {"description": "first", "minLength": -1},  # an annotation before a bad keyword
        {"type": "string", "pattern": "("},
    ],
)
def test_a_schema_that_is_not_json_schema_is_refused_even_when_trusted(schema: dict[str, Any]) -> None:
    for trusted in (True, False):
        with pytest.raises(SchemaError, match=r"^invalid JSON Schema: [^\n]+$"):
            compile_schema(schema, trusted=trusted)


def test_a_schema_must_be_an_object_or_a_boolean() -> None:
    for schema in ([{"type": "string"}], "string", None, 1):
        with pytest.raises(SchemaError, match=r"^a JSON Schema must be an object or a boolean$"):
            compile_schema(schema)  # type: ignore[arg-type]
    assert compile_schema(True).describe([1]) is None
    assert compile_schema(False, trusted=True).describe(1) == "no value is allowed here"
    assert compile_schema(False).describe(1) == "False schema does not allow 1"


def test_a_schema_is_checked_against_the_meta_schema_unless_mcpkit_made_it() -> None:
    # A schema derived from type hints is trusted: no second check of what mcpkit built.
    # Anything else, a plain Mapping included, is checked, and the reason is one line.
    duplicate = {"type": "object", "required": ["a", "a"]}
    assert reason(duplicate, {"a": 1}) is None
    for schema in (duplicate, MappingProxyType(duplicate)):
        with pytest.raises(SchemaError) as info:
            compile_schema(schema)
        assert str(info.value) == 'invalid JSON Schema: ["a","a"] has non-unique elements'


def test_a_remote_ref_is_never_fetched() -> None:
    with pytest.raises(SchemaError, match=r"remote \$ref 'http://127\.0\.0\.1:9/s\.json' is not fetched"):
        compile_schema({"$ref": "http://127.0.0.1:9/s.json"})


def test_a_schema_that_names_an_unknown_dialect_is_refused_without_fetching_it(tmp_path: Path) -> None:
    # jsonschema-rs's meta-schema check would fetch the meta-schema a "$schema" names; only
    # a schema without one is checked that way. The dialect is served on 127.0.0.1, which
    # logs every request it is sent.
    port = free_port()
    command = [sys.executable, "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)]
    with listening(command, port, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as server:
        url = f"http://127.0.0.1:{port}/dialect"
        with pytest.raises(SchemaError) as info:
            compile_schema({"$schema": url, "type": "string"})
        stop(server)
        assert server.stderr is not None
        requests = server.stderr.read().decode()
    assert str(info.value) == (
        f"invalid JSON Schema: Unknown meta-schema: '{url}'. Custom meta-schemas must be registered in the registry before use"
    )
    assert "GET" not in requests, requests


def test_an_invalid_schema_is_named_by_the_meta_schema_check() -> None:
    # Compiling the schema would stop at another of its errors first.
    with pytest.raises(SchemaError) as info:
        compile_schema({"type": 5, "minLength": -1})
    assert str(info.value) == "invalid JSON Schema: 5 is not valid under any of the schemas listed in the 'anyOf' keyword"
    # scripts/mutation_equivalents.toml: a pre-check of None finds it invalid, so validate runs
    assert not jsonschema_rs.meta.is_valid(None)


def test_the_router_sends_what_the_built_in_validator_cannot_handle_to_jsonschema_rs() -> None:
    # Fails if every trusted schema went to the built-in validator: it knows no multipleOf,
    # no "not", and 2020-12 only.
    assert reason({"type": "integer", "multipleOf": 3}, 4) is not None
    assert reason({"title": "t", "multipleOf": 3}, 4) is not None  # an annotation first changes nothing
    assert reason({"not": {"type": "string"}}, "s") is not None
    assert reason({"type": "string", "pattern": "^\\d$"}, "\u0663") is not None  # ECMA-262 \d is ASCII
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/$defs/s", "maxLength": 1}
    draft7["$defs"] = {"s": {"type": "string"}}
    assert reason(draft7, "long") is None  # draft 7 ignores the siblings of $ref
    assert reason({k: v for k, v in draft7.items() if k != "$schema"}, "long") is not None  # 2020-12 does not


def test_the_router_keeps_what_it_can_handle_for_the_built_in_validator() -> None:
    # Fails if every schema went to jsonschema-rs: it reads NaN and infinity as null, where
    # the built-in validator names them; and it would refuse a trusted schema that mcpkit
    # built without a meta-schema check.
    assert reason({"type": "number"}, math.nan) == "is not a finite number"
    by_ref = {"$defs": {"n": {"type": "number"}}, "properties": {"x": {"$ref": "#/$defs/n"}}}
    assert reason(by_ref, {"x": math.inf}) == "argument 'x': is not a finite number"
    assert reason({"items": {"$ref": "#/$defs/n"}, "$defs": {"n": {"type": "number"}}}, [1, math.nan]) == (
        "argument '[1]': is not a finite number"
    )
    assert reason({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "number"}, math.nan) == (
        "is not a finite number"
    )
    assert reason({"type": "object", "required": ["a", "a"]}, {}) == "missing required argument 'a'"


def test_untrusted_schemas_give_the_same_kind_of_reasons() -> None:
    untrusted = nested({"type": "object", "required": ["k"], "additionalProperties": False, "properties": {"k": {}}})
    assert reason(untrusted, {"a": {"b": [{"k": 1}, {}]}}, trusted=False) == "missing required argument 'a.b[1].k'"
    assert reason(untrusted, {"a": {"b": [{"k": 1, "x": 2, "y": 3}]}}, "field", trusted=False) == (
        "unexpected field 'a.b[0].x', 'a.b[0].y'"
    )
    assert reason({"type": "string"}, 5, trusted=False) == '5 is not of type "string"'  # no path at the root
    assert (
        reason(nested({"maximum": 1}), {"a": {"b": [2]}}, trusted=False)
        == "argument 'a.b[0]': 2 is greater than the maximum of 1"
    )
    assert reason({"type": "string"}, "x", trusted=False) is None


def test_untrusted_schemas_shorten_a_long_value_in_the_reason() -> None:
    long = "z" * 500
    assert reason({"type": "integer"}, long, trusted=False) == '"' + "z" * 76 + '... is not of type "integer"'
    assert reason({"enum": [1, 2]}, list(range(50)), trusted=False) == (
        "[" + ",".join(map(str, range(50)))[:76] + "... is not one of 1 or 2"
    )
    spaced = "a b " * 25  # jsonschema-rs and the reason may space a value differently
    assert reason({"type": "integer"}, spaced, trusted=False) == '"' + spaced[:76] + '... is not of type "integer"'
    # a long message that does not start with the value says which keyword refused it
    assert reason({"not": {"type": "string"}}, long, trusted=False) == '"' + "z" * 76 + "... is invalid (Not)"
    kept = reason({"not": {"type": "string"}}, "q" * 161, trusted=False)
    assert kept == '{"type":"string"} is not allowed for "' + "q" * 161 + '"'
    assert len(kept) == 200  # short enough to keep
    assert reason({"not": {"type": "string"}}, "q" * 162, trusted=False) == '"' + "q" * 76 + "... is invalid (Not)"
    assert reason({"maxLength": 3}, "abcd", trusted=False) == '"abcd" is longer than 3 characters'  # short: as it is


# --- through a server: what the caller of a tool reads -------------------------------------------


class Line(TypedDict):
    sku: str
    qty: int


async def test_a_tool_call_names_the_nested_argument_that_is_wrong() -> None:
    server = Server("shop", "1.0")

    @server.tool
    def order(lines: list[Line], note: str | None = None) -> str:
        return f"{len(lines)} lines"

    async with Client(server) as client:
        assert not (await client.call_tool("order", {"lines": [{"sku": "a", "qty": 1}]})).is_error
        prefix = "Invalid arguments for tool order: "
        with pytest.raises(McpError) as info:
            await client.call_tool("order", {"lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": "2"}]})
        assert info.value.code == -32602
        assert info.value.message == prefix + 'argument \'lines[1].qty\': "2" is not of type "integer"'
        with pytest.raises(McpError) as info:
            await client.call_tool("order", {"lines": [{"sku": "a"}]})
        assert info.value.message == prefix + "missing required argument 'lines[0].qty'"
        with pytest.raises(McpError) as info:
            await client.call_tool("order", {"lines": [], "note": 5})
        assert info.value.message == prefix + "argument 'note': 5 does not match any of the allowed schemas"
