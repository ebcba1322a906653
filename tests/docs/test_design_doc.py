"""docs/design.md stays true: its map of the tree names every module and package, where it
is, and nothing that is not there; its rules are the import-linter contracts, one for one."""

from __future__ import annotations

import re
import tomllib

from support.paths import ROOT

DOC = ROOT / "docs" / "design.md"
SRC = ROOT / "src" / "mcpkit"
# a module name in the map (one in backquotes is an example, such as `app.py[:name]`, not an entry)
_NAME = re.compile(r"(?<![\w./`])([A-Za-z_]\w*\.py)\b")
_DIR = re.compile(r"^([a-z_]\w*)/(?:\s|$)")


def _tree() -> list[str]:
    """The lines of the design doc's first code block: the map of the tree."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("```\n", 2)[1]
    return block.splitlines()


def named_in_map() -> tuple[set[str], set[str]]:
    """The modules (``a/b.py``) and packages (``a/``) the map names, each placed under the
    directory whose entry encloses its line: an entry's name starts a line at its indent,
    and its description (on that line and the more indented ones after it) belongs to it."""
    modules: set[str] = set()
    packages: set[str] = set()
    stack: list[tuple[int, str]] = []  # (indent, directory) of the enclosing entries
    for line in _tree()[1:]:  # the first line is mcpkit/ itself
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        entry = _DIR.match(body)
        if entry:
            path = "/".join([*(d for _, d in stack), entry.group(1)])
            packages.add(path + "/")
            stack.append((indent, entry.group(1)))
            body = body[entry.end() :]
        where = "/".join(d for _, d in stack)
        for name in _NAME.findall(body):
            modules.add(f"{where}/{name}" if where else name)
    return modules, packages


def test_the_map_names_every_module_where_it_is() -> None:
    modules, _ = named_in_map()
    present = {p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py") if p.name != "__init__.py"}
    present.add("__init__.py")  # the package root's: the public surface
    assert sorted(present - modules) == [], "modules the map of docs/design.md does not name (under their directory)"
    stale = {m for m in modules - present if not m.endswith("__init__.py")}
    assert sorted(stale) == [], "names in the map of docs/design.md that are no module there"


def test_the_map_names_every_package() -> None:
    _, packages = named_in_map()
    present = {p.parent.relative_to(SRC).as_posix() + "/" for p in SRC.rglob("__init__.py") if p.parent != SRC}
    assert sorted(present ^ packages) == []


def test_the_rules_are_the_contracts() -> None:
    """Every bullet of "The rules" opens with a contract's name in bold, and every
    contract of pyproject.toml has its bullet."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## The rules\n", 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"\n- ", "\n" + section)[1:]
    stated = []
    for bullet in bullets:
        opening = re.match(r"\*\*(.+?)\*\*", bullet, re.S)
        assert opening, f"a rule that names no contract: {bullet[:80]!r}"
        stated.append(" ".join(opening.group(1).split()).rstrip("."))
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = [c["name"] for c in config["tool"]["importlinter"]["contracts"]]
    assert sorted(stated) == sorted(contracts)
    assert len(set(stated)) == len(stated)


def test_the_map_reader_places_names_under_their_directory() -> None:
    """The reader itself: a name is placed under the entry that encloses it."""
    modules, packages = named_in_map()
    assert "transports/http/server/modern.py" in modules
    assert "transports/http/client/modern.py" in modules
    assert "server/definitions/tools.py" in modules
    assert "server/features/tools.py" in modules
    assert "transports/http/sse/" in packages
    assert not any(m.startswith("protocol/") and m.endswith("guard.py") for m in modules)
