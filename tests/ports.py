"""Ports for tests that need one nothing listens on yet: a server a test starts later, or a port that must refuse.

A port from ``bind(("127.0.0.1", 0))`` is an ephemeral port (``/proc/sys/net/ipv4/ip_local_port_range``, 32768 to
60999 on Linux). Once that probe socket closes, the kernel may hand the same port to any client socket that connects
meanwhile, and a client that connects to a closed port equal to its own ephemeral port connects to itself. With
concurrent peers and a subprocess that binds the port a moment later, either turns into a rare failure. These ports
come from below the ephemeral range, a block per pytest-xdist worker, so neither the kernel nor another worker hands
them out.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading

_BLOCK = 2_000
_FIRST = 20_000
"""Worker ``gwN`` uses ports ``20000 + 2000 * N`` onward, below the ephemeral range."""

_lock = threading.Lock()
_worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_candidates = itertools.cycle(range(_FIRST + _BLOCK * _worker, _FIRST + _BLOCK * (_worker + 1)))


def unused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now and that no client socket will be given."""
    with _lock:
        for _ in range(_BLOCK):
            port = next(_candidates)
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError(f"no unused port in this worker's block of {_BLOCK}")
