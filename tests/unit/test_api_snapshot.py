"""The public surface does not change by accident: every name of ``mcpkit.__all__``, its
signature, and the public members of each class are what ``tests/support/public_api.json``
recorded. A change on purpose regenerates the file (``python scripts/api_snapshot.py >
tests/support/public_api.json``) and says so in CHANGELOG.md."""

from __future__ import annotations

import json
import subprocess
import sys

from support.paths import ROOT


def test_public_api_is_the_recorded_one() -> None:
    recorded = json.loads((ROOT / "tests" / "support" / "public_api.json").read_text())
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "api_snapshot.py")], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    current = json.loads(out)
    assert sorted(current) == sorted(recorded), "names added to or removed from mcpkit.__all__"
    changed = {name: (recorded[name], current[name]) for name in recorded if recorded[name] != current[name]}
    assert not changed, f"public signatures changed: {json.dumps(changed, indent=1)[:4000]}"
