"""What the tests share (importable as ``support``: pytest puts ``tests/`` on ``sys.path``,
see ``pythonpath`` in pyproject.toml).

- :mod:`support.paths` — the repository's folders, the servers the tests run, the setup script;
- :mod:`support.eras` — the two protocol revisions the tests speak (``MODERN``, ``LEGACY``, ``ERAS``);
- :mod:`support.ports` — free loopback ports, from a range of this xdist worker's own;
- :mod:`support.processes` — spawning the servers of ``servers/`` (over stdio, or listening
  on a port), stopping them, their memory;
- :mod:`support.serving` — an ASGI app under uvicorn in a thread of the test process;
- :mod:`support.waiting` — waiting for a condition with a deadline, instead of sleeping;
- :mod:`support.clock` — a virtual clock for in-memory races between deadlines (the loop's
  time jumps to its next timer when idle);
- :mod:`support.transports` — the ``memory`` / ``stdio`` / ``http`` parameters of tests/unit/
  (the real ones marked ``e2e``);
- :mod:`support.wire` — raw JSON-RPC over Streamable HTTP: modern requests, legacy sessions,
  the messages of a JSON or SSE response;
- :mod:`support.faults` — fault injection: a TCP proxy that drops, delays or cuts, an ASGI
  wrapper that refuses;
- :mod:`support.resilient` — servers/resilient.py over HTTP in a process of its own, its log,
  and an ``on_event`` recorder;
- :mod:`support.auth` — a key set and introspection endpoint of the tests' own, the tokens
  it signs, a guarded server;
- :mod:`support.cli` — running the ``mcpkit`` command, captured or on a pseudo-terminal;
- :mod:`support.payloads` — recorded LLM API responses in which a model calls tools (OpenAI
  Chat Completions and Responses, Anthropic Messages), in ``payloads/``;
- :mod:`support.peers` — the npm peers of the interop tests (pins, and the fixtures that find them);
- :mod:`support.system` — the Debian programs some tests run (chromium, redis-server, haproxy);
- :mod:`support.nodes` — several nodes on a real redis-server behind a real HAProxy;
- ``servers/`` — the server programs the tests run (each one a script, or imported with
  :func:`support.processes.load_server`);
- ``public_api.json`` — the recorded public API (tests/unit/test_api_snapshot.py).

Nothing here installs anything: ``scripts/setup_tests.py`` does, once, before the suite; a
test that finds something missing fails and names that script.
"""
