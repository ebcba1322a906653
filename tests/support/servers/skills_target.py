"""An mcpkit server of skills for foreign clients (tests/interop/test_skills_inspector.py):
the conformance suite's skills folder (scripts/conformance/skills/: two skills, nested
folders), served from disk, with directory reads.

``python tests/support/servers/skills_target.py`` serves stdio; ``... --http PORT``
serves 127.0.0.1:PORT/mcp. Both eras (skills only in 2026-07-28's).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcpkit import Server

SKILLS = Path(__file__).resolve().parents[3] / "scripts" / "conformance" / "skills"

server = Server("skills-target")
server.add_skills(SKILLS)

if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
