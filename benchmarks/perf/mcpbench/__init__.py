"""mcpbench: the benchmark harness of mcpkit (run it with ``python benchmarks/perf/run.py``).

It speaks raw JSON-RPC, with no MCP SDK, so that it measures every server the same way:

- ``wire``: the requests it sends and how each answer is judged;
- ``procs``: spawning servers, their memory and CPU time;
- ``stdio`` and ``http``: the two transports (many requests in flight on one pipe; one
  request at a time per keep-alive HTTP/1.1 connection, both protocol eras);
- ``load``: a timed phase of requests, and one measurement of one server;
- ``servers``: the servers under test and the virtual environments they run in;
- ``workloads``: what the table measures, and the issue's targets;
- ``table``: interleaved rounds, ratios, the Markdown table and the chart;
- ``check``: the short regression check CI runs (tests/perf/test_perf_regression.py);
- ``scale``: thousands of sessions and idle streams;
- ``profile``: py-spy profiles of mcpkit's hot paths, summarised.
"""
