"""Build the sdist and the wheel as a release would, and check them (CI runs this after the suite).

    python scripts/check_dist.py             # build into a temporary folder, check, clean up
    python scripts/check_dist.py --out dist  # keep the two files there

``python -m build`` builds the sdist, then the wheel *from the sdist*, so the sdist is shown
to hold what a source install needs. Then: ``twine check`` (the metadata and the README
render on PyPI), and a look inside each file — the wheel holds ``mcpkit/py.typed``, every
module of ``src/mcpkit`` and no tests; the sdist holds the sources, ``py.typed``, the
licence, the README, the changelog and the tests. Exit status 1 on the first problem found.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "mcpkit"


def fail(message: str) -> None:
    raise SystemExit(f"check_dist: {message}")


def build(out: Path) -> tuple[Path, Path]:
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"python -m build failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    wheels, sdists = sorted(out.glob("mcpkit-*.whl")), sorted(out.glob("mcpkit-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        fail(f"expected one wheel and one sdist in {out}, found {[p.name for p in out.iterdir()]}")
    return wheels[0], sdists[0]


def twine_check(*files: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)], capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"twine check failed:\n{proc.stdout}{proc.stderr}")


def check_wheel(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f"mcpkit/{p.relative_to(SRC).as_posix()}" for p in SRC.rglob("*.py")}
    missing = sorted(modules - names) + ([] if "mcpkit/py.typed" in names else ["mcpkit/py.typed"])
    if missing:
        fail(f"{wheel.name} lacks {missing[:10]}")
    strays = sorted(n for n in names if not n.startswith(("mcpkit/", "mcpkit-")))
    tests = sorted(n for n in names if "tests/" in n or n.split("/")[-1].startswith(("test_", "conftest")))
    if strays or tests:
        fail(f"{wheel.name} holds more than the package: {(strays + tests)[:10]}")


def check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    needed = ["pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "src/mcpkit/__init__.py", "src/mcpkit/py.typed"]
    needed += [f"src/mcpkit/{p.relative_to(SRC).as_posix()}" for p in SRC.rglob("*.py")]
    needed += ["tests/conftest.py", "tests/support/__init__.py"]
    missing = [name for name in needed if name not in names]
    if missing:
        fail(f"{sdist.name} lacks {missing[:10]}")
    strays = sorted(n for n in names if n.startswith((".cache/", ".venv/", "dist/", "build/")) or "__pycache__" in n)
    if strays:
        fail(f"{sdist.name} holds build or cache output: {strays[:10]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="keep the built files in this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcpkit-dist-") as scratch:
        out = args.out or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        wheel, sdist = build(out)
        twine_check(wheel, sdist)
        check_wheel(wheel)
        check_sdist(sdist)
        print(f"check_dist: {sdist.name} and {wheel.name} built, twine-checked, and hold what they should")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
