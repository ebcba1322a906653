"""``mcpkit skills``: a server's skills (the skills extension, docs/skills-client.md).

``list`` prints the entries of ``skills/list`` (every page) and ``get`` one entry by
its ``SKILL.md`` URI: neither reads a file of any skill. ``read`` loads the skill (its
entry, then ``SKILL.md``, verified against it) and prints ``SKILL.md``, or, given FILE,
that file of the skill, read only if the entry lists it and printed only once it
matched the entry's size and digest. What fails verification is never printed: the
command exits 65 (``UNVERIFIED``) and says why on stderr; without PyYAML (the ``skills``
extra), which parses the frontmatter, ``read`` exits 69.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any, Final

import click

from .common import Common, client_command, common_options
from .session import OK, UNAVAILABLE

if TYPE_CHECKING:
    from ..client.client import Client
    from ..client.skills import SkillFile
    from ..protocol.skills import Skill
    from .render import Output

__all__ = ["skills"]


@click.group("skills")
@click.pass_obj
def skills(config: str | None) -> None:
    """A server's skills (the io.modelcontextprotocol/skills extension): list their
    entries, get one, read one verified.

    Nothing of a skill is read by list or get; read checks each file against the
    skill's entry (size, SHA-256 digest, the SKILL.md frontmatter) before printing it,
    and exits 65 when it does not match.
    """
    if config is not None:
        raise click.UsageError("skills talks to one TARGET: --config is for list, call, read and prompt")


@skills.command("list")
@click.argument("target")
@common_options
def list_(target: str, **common: Any) -> int:
    """List the skills TARGET serves: each one's URI, name, description and files."""

    async def action(client: Client, out: Output) -> int:
        entries = await client.list_all_skills()
        if out.as_json:
            out.json({"skills": entries})
            return OK
        _table(out, entries)
        return OK

    return client_command(target, Common(**common), action)


@skills.command("get")
@click.argument("target")
@click.argument("uri")
@common_options
def get(target: str, uri: str, **common: Any) -> int:
    """Get the entry of the skill whose SKILL.md is at URI: its frontmatter and the
    digest and size of each of its files."""

    async def action(client: Client, out: Output) -> int:
        try:
            entry = await client.get_skill(uri)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="URI") from None
        if out.as_json:
            out.json({"skill": entry})
            return OK
        _entry(out, entry)
        return OK

    return client_command(target, Common(**common), action)


@skills.command("read")
@click.argument("target")
@click.argument("uri")
@click.argument("file", required=False)
@click.option("--allow-dynamic", is_flag=True, help="Also load a skill whose content is generated (no digests to verify).")
@common_options
def read(target: str, uri: str, file: str | None, allow_dynamic: bool, **common: Any) -> int:
    """Load the skill whose SKILL.md is at URI and print SKILL.md, or FILE: a path
    relative to the skill's root (references/GUIDE.md) or a file's URI, read only if
    the skill's entry lists it. Each is printed only once it matched the entry."""

    async def action(client: Client, out: Output) -> int:
        try:
            skill = await client.load_skill(uri, allow_dynamic=allow_dynamic)
            found = skill.skill_md if file is None else await client.read_skill_file(skill, file)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="FILE" if file is not None else "URI") from None
        except ImportError as exc:  # no PyYAML to parse the frontmatter with
            raise _Missing(str(exc)) from None
        _file(out, found)
        return OK

    return client_command(target, Common(**common), action)


class _Missing(click.ClickException):
    """A library the command needs is not installed (exit 69)."""

    exit_code = UNAVAILABLE


def _table(out: Output, entries: list[Skill]) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table("uri", "name", "description", "files", title="skills", title_justify="left")
    for entry in entries:
        files = "dynamic" if isinstance(entry.resources, str) else str(len(entry.resources))
        name = entry.frontmatter.get("name")
        description = str(entry.frontmatter.get("description") or "").strip().split("\n", 1)[0]
        table.add_row(escape(entry.uri), escape(str(name or "")), escape(description), files)
    if entries:
        out.out.print(table)
    else:
        out.out.print("skills: none (a listing may leave skills out: get or read one by its URI)")


def _entry(out: Output, entry: Skill) -> None:
    from rich.markup import escape
    from rich.table import Table

    out.out.print(f"[bold]{escape(entry.uri)}[/]")
    for key, value in entry.frontmatter.items():
        shown = value if isinstance(value, str) else json.dumps(value)
        out.out.print(f"  {escape(str(key))}: {escape(shown)}")
    if isinstance(entry.resources, str):
        out.out.print("files: dynamic (generated content: no digests, nothing to verify)")
        return
    table = Table("uri", "size", "digest", title="files", title_justify="left")
    for item in entry.resources:
        table.add_row(escape(item.uri), str(item.size), escape(item.digest))
    out.out.print(table)


def _file(out: Output, found: SkillFile) -> None:
    if out.as_json:
        import base64

        doc: dict[str, Any] = {"uri": found.uri, "path": found.path, "mimeType": found.mime_type, "size": len(found.content)}
        try:
            doc["text"] = found.content.decode("utf-8")
        except UnicodeDecodeError:
            doc["blob"] = base64.b64encode(found.content).decode()
        out.json(doc)
        return
    try:
        text = found.content.decode("utf-8")
    except UnicodeDecodeError:
        out.text(f"[{found.mime_type or 'binary'} file {found.uri}: {len(found.content)} bytes]")
        return
    out.text(_inert(text) if sys.stdout.isatty() else text)


#: Control characters a terminal acts on (C0 but tab and newline, DEL, C1), and a
#: carriage return that ends no line: shown escaped on a terminal, since a skill's
#: file is the server's text and could retitle, clear or rewrite the screen.
_CONTROL: Final = re.compile(r"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _inert(text: str) -> str:
    """``text`` with what :data:`_CONTROL` matches written as ``\\xNN`` (a CRLF kept)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
