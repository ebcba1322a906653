"""stdio: JSON-RPC messages over a pair of pipes, newline-delimited — both sides.

:mod:`.server` is the server's side (this process's stdin and stdout), :mod:`.process`
the client's (a spawned server process, supervised), :mod:`.pipes` what both share: the
pipes' tuning and the flow control of a pipe transport.
"""
