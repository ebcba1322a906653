"""The deployment files of deploy/ (docs/deploy.md), checked as far as they can be without
Docker or a Kubernetes cluster: the image installs mcpkit from the repository's own source
(mcpkit is not on PyPI) and copies only what its build context holds, compose builds it
from the repository's root, the manifests parse and agree with each other, and the app,
run as the container runs it with the environment the manifests give it, answers the
probes they send (the path, the port and the ``Host`` header).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml  # PyYAML: a dependency of mkdocs, which the test extra installs

from support.paths import ROOT
from support.ports import free_port
from support.processes import listening

DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"
MANIFESTS = sorted((DEPLOY / "k8s").glob("*.yaml"))
APP = DEPLOY / "app.py"
APP_PORT = 8000  # deploy/app.py's default PORT, which the image runs it with


# --- the Dockerfile --------------------------------------------------------------------------


def instructions(path: Path) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (keyword, arguments), continuation lines joined."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, rest = (pending + line).strip().partition(" ")
        found.append((keyword.upper(), rest.strip()))
        pending = ""
    return found


def dockerignored() -> set[str]:
    """The top-level names the root's .dockerignore keeps out of the build context."""
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    return {line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")}


class Image:
    """What the Dockerfile puts where: each COPY's image path and the context path it
    comes from, with the WORKDIR each instruction runs in."""

    def __init__(self, path: Path, context: Path) -> None:
        self.workdir = PurePosixPath("/")
        self.files: dict[PurePosixPath, Path] = {}
        self.runs: list[tuple[PurePosixPath, str]] = []
        self.cmd: tuple[PurePosixPath, list[str]] | None = None
        self.exposed: list[int] = []
        for keyword, args in instructions(path):
            if keyword == "WORKDIR":
                self.workdir = self.workdir / args
            elif keyword == "COPY":
                *sources, dest = shlex.split(args)
                assert not any(s.startswith("--") for s in sources), f"COPY {args}: a flag this test does not model"
                target = self.workdir / dest
                into = dest.endswith("/") or dest in (".", "./") or len(sources) > 1
                for source in sources:
                    # Into a folder a file keeps its name, a folder's contents go in as they are.
                    is_file = (context / source).is_file()
                    self.files[target / Path(source).name if into and is_file else target] = context / source
            elif keyword == "RUN":
                self.runs.append((self.workdir, args))
            elif keyword == "CMD":
                self.cmd = (self.workdir, yaml.safe_load(args))
            elif keyword == "EXPOSE":
                self.exposed += [int(port.split("/")[0]) for port in args.split()]

    def holds(self, path: PurePosixPath) -> Path | None:
        """The context path that ``path`` of the image comes from (None: not copied)."""
        for place, source in self.files.items():
            if path == place:
                return source
            if path.is_relative_to(place) and source.is_dir():
                return source / path.relative_to(place)
        return None


def pip_installs(image: Image) -> list[tuple[PurePosixPath, str]]:
    """The requirements of every ``pip install`` in a RUN, with the WORKDIR it runs in."""
    found = []
    for workdir, command in image.runs:
        for part in command.split("&&"):
            words = shlex.split(part)
            if words[:2] == ["pip", "install"]:
                found += [(workdir, w) for w in words[2:] if not w.startswith("-")]
    return found


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def image() -> Image:
    return Image(DOCKERFILE, ROOT)


def test_compose_builds_from_the_repository_root(compose: dict[str, Any]) -> None:
    built = {name: service["build"] for name, service in compose["services"].items() if "build" in service}
    assert set(built) == {"node1", "node2", "node3"}, built
    for name, build in built.items():
        assert isinstance(build, dict), f"{name}: build: {build!r} (a context without dockerfile: is deploy/)"
        context = (COMPOSE.parent / build["context"]).resolve()
        assert (context / "pyproject.toml").is_file(), f"{name}: the build context {context} has no pyproject.toml"
        assert context == ROOT
        assert (context / build["dockerfile"]).resolve() == DOCKERFILE


def test_the_image_installs_mcpkit_from_the_local_source(image: Image) -> None:
    installs = pip_installs(image)
    assert len(installs) == 1, installs
    workdir, requirement = installs[0]
    location, _, extras = requirement.partition("[")
    assert location.startswith(("/", ".")), f"pip install {requirement!r} names no local source (mcpkit is not on PyPI)"
    assert extras.rstrip("]").split(",") == ["http", "redis"], requirement
    project = workdir / location
    pyproject = image.holds(project / "pyproject.toml")
    assert pyproject == ROOT / "pyproject.toml", f"{project}/pyproject.toml is not the repository's"
    # What the build backend reads besides: the files the metadata names, and the package.
    metadata = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for name in [metadata["readme"], *metadata["license-files"], "src/mcpkit/__init__.py", "src/mcpkit/_version.py"]:
        assert image.holds(project / name) == ROOT / name, f"the image lacks {project / name}"


def test_every_copy_comes_from_the_build_context(image: Image) -> None:
    ignored = dockerignored()
    for place, source in image.files.items():
        assert source.exists(), f"{place}: {source} is not in the build context"
        top = source.relative_to(ROOT).parts[0]
        assert top not in ignored, f"{place}: {source} is left out by .dockerignore"
    for kept_out in (".venv", ".cache", ".git", "site"):
        assert kept_out in ignored, f".dockerignore does not keep {kept_out} out of the context"


def test_the_image_runs_the_app_on_its_port(image: Image) -> None:
    assert image.cmd is not None
    workdir, command = image.cmd
    assert command[0] == "python", command
    assert image.holds(workdir / command[1]) == APP
    assert image.exposed == [APP_PORT]
    assert f'"PORT", "{APP_PORT}"' in APP.read_text(encoding="utf-8"), "deploy/app.py's default port changed"


# --- the Kubernetes manifests --------------------------------------------------------------


@pytest.fixture(scope="module")
def manifests() -> list[dict[str, Any]]:
    documents = []
    for path in MANIFESTS:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert isinstance(document, dict), f"{path.name}: a document that is not a mapping"
            for field in ("apiVersion", "kind", "metadata"):
                assert field in document, f"{path.name}: a {document.get('kind')} without {field}"
            assert document["metadata"].get("name"), f"{path.name}: a {document['kind']} without a name"
            documents.append(document)
    return documents


def of_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in manifests if d["kind"] == kind}


def selects(selector: dict[str, str], deployment: dict[str, Any]) -> bool:
    """Whether a label selector picks the pods of ``deployment``."""
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return selector.items() <= labels.items()


def test_the_manifests_parse_and_agree(manifests: list[dict[str, Any]]) -> None:
    assert [p.name for p in MANIFESTS] == ["mcp.yaml", "redis.yaml"]
    deployments = of_kind(manifests, "Deployment")
    assert set(deployments) == {"mcp", "mcp-redis"}
    for name, deployment in deployments.items():
        assert selects(deployment["spec"]["selector"]["matchLabels"], deployment), name
    for name, service in of_kind(manifests, "Service").items():
        [target] = [d for d in deployments.values() if selects(service["spec"]["selector"], d)]
        ports = [p for c in target["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])]
        for port in service["spec"]["ports"]:
            wanted = port.get("targetPort", port["port"])
            assert any(wanted in (p.get("name"), p["containerPort"]) for p in ports), f"Service {name}: no port {wanted}"
    for name, budget in of_kind(manifests, "PodDisruptionBudget").items():
        selected = [d for d in deployments.values() if selects(budget["spec"]["selector"]["matchLabels"], d)]
        assert selected, f"PodDisruptionBudget {name} selects no Deployment"
        assert budget["spec"]["minAvailable"] < selected[0]["spec"]["replicas"]
    secrets = of_kind(manifests, "Secret")
    for deployment in deployments.values():
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            for variable in container.get("env", []):
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref is not None:
                    assert ref["key"] in secrets[ref["name"]]["stringData"], variable


def mcp_container(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = of_kind(manifests, "Deployment")["mcp"]["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def container_env(manifests: list[dict[str, Any]], container: dict[str, Any]) -> dict[str, str]:
    """The container's environment, secrets resolved from the manifests' Secret."""
    secrets = of_kind(manifests, "Secret")
    env = {}
    for variable in container["env"]:
        ref = variable.get("valueFrom", {}).get("secretKeyRef")
        env[variable["name"]] = secrets[ref["name"]]["stringData"][ref["key"]] if ref else variable["value"]
    return env


def run_app(environment: dict[str, str], port: int) -> Any:
    """deploy/app.py as the image's CMD runs it, with ``environment``, on ``port``. Without
    Redis here: REDIS_URL is dropped (one node), which changes no endpoint."""
    env = {k: v for k, v in environment.items() if k != "REDIS_URL"}
    env |= {"HOST": "127.0.0.1", "PORT": str(port), "PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    return listening([sys.executable, str(APP)], port, env=env, cwd=DEPLOY, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.timeout(60)
def test_the_app_answers_the_kubernetes_probes(manifests: list[dict[str, Any]]) -> None:
    container = mcp_container(manifests)
    ports = {p.get("name", str(p["containerPort"])): p["containerPort"] for p in container["ports"]}
    assert list(ports.values()) == [APP_PORT], ports
    port = free_port()  # the container's port 8000, here on a free one of loopback
    with run_app(container_env(manifests, container), port):
        for kind, expected in (("livenessProbe", "ok"), ("readinessProbe", "ready")):
            probe = container[kind]["httpGet"]
            assert ports.get(probe["port"], probe["port"]) == APP_PORT, f"{kind} probes port {probe['port']}"
            headers = {h["name"]: h["value"] for h in probe.get("httpHeaders", [])}
            answer = httpx.get(f"http://127.0.0.1:{port}{probe['path']}", headers=headers, timeout=10)
            assert (answer.status_code, answer.text.strip()) == (200, expected), f"{kind} {probe}: {answer}"
        # The probes' Host header is needed: the app refuses Hosts it does not serve, probes too.
        refused = httpx.get(f"http://127.0.0.1:{port}{container['livenessProbe']['httpGet']['path']}", timeout=10)
        assert refused.status_code == 403, refused


@pytest.mark.timeout(60)
def test_the_app_answers_the_compose_healthcheck(compose: dict[str, Any]) -> None:
    node = compose["services"]["node1"]
    command = node["healthcheck"]["test"]
    assert command[:3] == ["CMD", "python", "-c"], command
    [url] = [w.strip("'\"") for w in command[3].replace("(", " ").replace(")", " ").split() if "://" in w]
    parts = urlsplit(url)
    assert parts.port == APP_PORT, url
    environment = {k: str(v) for k, v in node["environment"].items()}
    environment["MCP_STATE_KEY"] = "a state key of 16 bytes or more"  # compose takes it from .env
    port = free_port()
    with run_app(environment, port):
        # urllib sends the URL's Host, as the healthcheck inside the container does.
        answer = httpx.get(f"http://127.0.0.1:{port}{parts.path}", headers={"Host": parts.netloc}, timeout=10)
        assert (answer.status_code, answer.text.strip()) == (200, "ok"), answer
