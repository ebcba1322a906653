"""A server whose lifespan fails to start, over real processes and sockets (issue 24,
findings 4 and 18): what its clients see, what it prints, and how it exits.

* Mounted without lifespan events (uvicorn ``lifespan="off"``, or in a host framework that
  never sends them), the lifespan starts with the first request and fails. Before: the
  503 of every request and ``/healthz/ready`` carried the exception's text (a file, a
  password). After: they say the server failed to start and give a reference id; the
  text is in the server's log, under that id.
* ``server.run("http")`` with that lifespan. Before: exit status 3 (uvicorn's) and the
  message printed twice, then uvicorn's own line. After: exit status 1 and one line, the
  same as ``server.run()`` over stdio prints.
"""

from __future__ import annotations

import re
import subprocess

import httpx
import pytest

from support.ports import free_port
from support.processes import listening, load_server, server_command
from support.wire import modern

pytestmark = pytest.mark.timeout(60)

SECRET = load_server("hostile_edge").SECRET
#: The one line a failed start prints, on every transport.
FAILED = f"edge: the server's lifespan failed to start: RuntimeError: {SECRET}"


@pytest.mark.parametrize("mode", ["broken-off", "broken-mounted"])
def test_a_failed_lazy_start_answers_a_reference_not_the_exception(mode: str) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with listening(server_command("hostile_edge", mode, str(port)), port, stderr=subprocess.PIPE) as proc:
        with httpx.Client(timeout=10) as http:
            body, headers = modern("tools/list")
            answers = [http.post(f"{url}/mcp", json=body, headers=headers) for _ in range(2)]
            answers.append(http.get(f"{url}/healthz/ready"))
        proc.terminate()
        _, log = proc.communicate(timeout=20)
    references = set()
    for answer in answers:
        assert answer.status_code == 503, answer.text
        for secret in ("secret", "password", "RuntimeError"):
            assert secret not in answer.text
        found = re.search(r"the server failed to start \(reference ([0-9a-f]{12})\)", answer.text)
        assert found is not None, answer.text
        references.add(found[1])
    assert len(references) == 1, references  # one failure, one reference, whoever asks
    text = log.decode(errors="replace")
    assert f"reference {references.pop()}" in text, text[-2000:]
    assert SECRET in text  # the cause is in the log, with its traceback
    assert text.count("the server failed to start (reference") == 1, text  # once, however many asked


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_failed_start_exits_1_with_one_line_on_every_transport(transport: str) -> None:
    args = ["broken-stdio"] if transport == "stdio" else ["broken-http", str(free_port())]
    command = server_command("hostile_edge", *args)
    proc = subprocess.run(command, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stderr.strip().splitlines()) == (1, [FAILED]), proc.stderr
