"""``mcpkit skills list|get|read``, driven as a subprocess against the scripted skills
server (tests/support/servers/skills_http.py) on 127.0.0.1: what is printed, the exit
codes (65 for content that fails verification, which is never printed), and what the
server was sent."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from typing import Any

import pytest

from support.cli import MCPKIT, as_json, mcpkit, run_in_pty
from support.processes import load_server
from support.serving import serve_in_thread

pytestmark = pytest.mark.timeout(60)

fake = load_server("skills_http")
REFUNDS = fake.REFUNDS


def said(proc: Any) -> str:
    """What the command wrote on stderr, its lines (wrapped by rich at the terminal's width) joined."""
    return " ".join(proc.stderr.split())


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, int]]:
    app = fake.SkillsApp()
    with serve_in_thread(app) as port:
        yield app, port


@pytest.fixture
def app(served: tuple[Any, int]) -> Any:
    served[0].log.clear()
    return served[0]


@pytest.fixture
def url(served: tuple[Any, int]) -> Any:
    port = served[1]
    return lambda mode: f"http://127.0.0.1:{port}/{mode}/mcp"


@pytest.mark.parametrize("era", ["auto", "modern", "legacy"])
def test_list_prints_every_entry_and_reads_nothing(app: Any, url: Any, era: str) -> None:
    proc = mcpkit("skills", "list", url("honest"), "--era", era, "--json")
    assert proc.returncode == 0, proc.stderr
    skills = as_json(proc)["skills"]
    assert [s["uri"] for s in skills] == [REFUNDS, fake.GIT, fake.DAILY]
    assert skills[0]["frontmatter"] == fake.REFUNDS_FRONTMATTER
    assert skills[2]["resources"] == "dynamic"
    text = mcpkit("skills", "list", url("honest"))
    assert text.returncode == 0, text.stderr
    for word in ("refunds", "git-workflow", "dynamic", "Assemble today's report"):
        assert word in text.stdout
    assert app.reads() == []


def test_get_prints_one_entry(app: Any, url: Any) -> None:
    proc = mcpkit("skills", "get", url("honest"), REFUNDS, "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["uri"] for r in as_json(proc)["skill"]["resources"]] == [
        REFUNDS,
        "skill://acme/billing/refunds/examples/email.md",
        "skill://acme/billing/refunds/assets/logo.png",
    ]
    text = mcpkit("skills", "get", url("honest"), REFUNDS)
    assert text.returncode == 0, text.stderr
    assert '"owners": ["billing", "support"]' in text.stdout
    assert "sha256:" in text.stdout
    unknown = mcpkit("skills", "get", url("honest"), "skill://nope/SKILL.md")
    assert unknown.returncode == 2
    assert "-32602" in said(unknown)
    not_a_skill = mcpkit("skills", "get", url("honest"), "skill://nope/README.md")
    assert not_a_skill.returncode == 64
    assert app.reads() == []


def test_read_prints_the_verified_skill_md_or_a_listed_file(app: Any, url: Any) -> None:
    skill_md = mcpkit("skills", "read", url("honest"), REFUNDS)
    assert skill_md.returncode == 0, skill_md.stderr
    assert skill_md.stdout == fake.REFUNDS_MD.decode()
    email = mcpkit("skills", "read", url("honest"), REFUNDS, "examples/email.md")
    assert email.returncode == 0, email.stderr
    assert email.stdout == fake.EMAIL_MD.decode()
    logo = mcpkit("skills", "read", url("honest"), REFUNDS, "assets/logo.png", "--json")
    assert logo.returncode == 0, logo.stderr
    doc = as_json(logo)
    assert base64.b64decode(doc["blob"]) == fake.LOGO
    assert (doc["path"], doc["mimeType"], doc["size"]) == ("assets/logo.png", "image/png", 1024)
    described = mcpkit("skills", "read", url("honest"), REFUNDS, "assets/logo.png")
    assert described.stdout.strip() == "[image/png file skill://acme/billing/refunds/assets/logo.png: 1024 bytes]"
    email_uri = "skill://acme/billing/refunds/examples/email.md"
    assert app.reads() == [REFUNDS, REFUNDS, email_uri, REFUNDS, fake.LOGO_URI, REFUNDS, fake.LOGO_URI]


@pytest.mark.parametrize(("mode", "reason"), [("digest", "digest"), ("size", "size"), ("frontmatter", "frontmatter")])
def test_read_refuses_a_tampered_skill_and_prints_none_of_it(app: Any, url: Any, mode: str, reason: str) -> None:
    proc = mcpkit("skills", "read", url(mode), REFUNDS, "examples/email.md")
    assert proc.returncode == 65
    assert proc.stdout == ""
    assert "verification error" in said(proc)
    as_doc = mcpkit("skills", "read", url(mode), REFUNDS, "--json")
    assert as_doc.returncode == 65
    error = as_json(as_doc)["error"]
    assert (error["kind"], error["data"]) == ("verification", {"uri": REFUNDS, "reason": reason})
    assert app.reads(mode) == [REFUNDS, REFUNDS]  # SKILL.md only: never the file after it


def test_read_refuses_a_file_the_entry_does_not_list_without_asking_for_it(app: Any, url: Any) -> None:
    proc = mcpkit("skills", "read", url("honest"), REFUNDS, "examples/new.md")
    assert proc.returncode == 65
    assert "is not listed" in said(proc)
    tampered = mcpkit("skills", "read", url("file"), REFUNDS, "examples/email.md")
    assert tampered.returncode == 65
    assert "does not match the digest" in said(tampered)
    outside = mcpkit("skills", "read", url("honest"), REFUNDS, "../other/SKILL.md")
    assert outside.returncode == 64
    assert fake.UNLISTED not in app.reads()


def test_read_loads_a_dynamic_skill_only_when_asked_to(app: Any, url: Any) -> None:
    refused = mcpkit("skills", "read", url("honest"), fake.DAILY, "data/today.md")
    assert refused.returncode == 65
    assert "allow-dynamic" in said(refused) or "allow_dynamic" in said(refused)
    assert app.reads() == []
    proc = mcpkit("skills", "read", url("honest"), fake.DAILY, "data/today.md", "--allow-dynamic")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == fake.TODAY_MD.decode()


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_server_without_the_extension_is_told_apart_and_sent_nothing(app: Any, url: Any, era: str) -> None:
    for command, *uri in (("list",), ("get", REFUNDS), ("read", REFUNDS)):
        proc = mcpkit("skills", command, url("none"), *uri, "--era", era)
        assert proc.returncode == 2
        assert "does not declare the skills extension" in said(proc)
    assert [m for m in app.methods() if m.startswith(("skills/", "resources/"))] == []


def test_skills_take_a_target_not_a_configuration(app: Any, url: Any, tmp_path: Any) -> None:
    config = tmp_path / "servers.json"
    config.write_text('{"mcpServers": {}}')
    proc = mcpkit("--config", str(config), "skills", "list", url("honest"))
    assert proc.returncode == 64
    assert "--config is for" in said(proc)
    assert app.methods() == []


def test_read_without_pyyaml_says_which_extra_to_install(app: Any, url: Any, tmp_path: Any) -> None:
    hidden = tmp_path / "yaml"
    hidden.mkdir()
    (hidden / "__init__.py").write_text("raise ImportError('PyYAML is hidden from this test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = mcpkit("skills", "read", url("honest"), fake.GIT, env=env)
    assert proc.returncode == 69
    assert "pip install 'mcpkit[skills]'" in said(proc)
    assert proc.stdout == ""
    listed = mcpkit("skills", "list", url("honest"), env=env)  # listing needs no parser
    assert listed.returncode == 0, listed.stderr


HOSTILE = "title\x1b]0;pwned\x07 clear\x1b[2J bell\x07 back\rover del\x7f c1\x9b crlf\r\nend\n"


def test_read_on_a_terminal_shows_control_characters_escaped_and_piped_as_they_are(tmp_path: Any) -> None:
    script = tmp_path / "hostile_skill.py"
    script.write_text(
        "from mcpkit import Server\n"
        "server = Server('hostile')\n"
        f"server.add_skill('demo', 'd', 'body', files={{'notes.md': {HOSTILE!r}}})\n"
        "server.run()\n"
    )
    target = f"python {script}"
    piped = mcpkit("skills", "read", target, "skill://demo/SKILL.md", "notes.md")
    assert piped.returncode == 0, piped.stderr
    # a pipe gets the verified text as it is (the capture reads line endings universally)
    assert piped.stdout == HOSTILE.replace("\r\n", "\n").replace("\r", "\n")
    code, screen = run_in_pty([*MCPKIT, "skills", "read", target, "skill://demo/SKILL.md", "notes.md"])
    assert code == 0, screen
    for raw in ("\x1b", "\x07", "\x7f", "\x9b", "back\rover"):
        assert raw not in screen
    assert "title\\x1b]0;pwned\\x07 clear\\x1b[2J bell\\x07 back\\x0dover del\\x7f c1\\x9b crlf" in screen
