"""A stand-in AWS endpoint on 127.0.0.1 for the tests of calls moto does not model: a ``ThreadingHTTPServer`` that
hands every POST to ``answer`` and sends back what it returns."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Answer", "LocalServer"]

Answer = tuple[int, str, bytes]
"""The HTTP status, the content type and the body of an answer."""


class LocalServer:
    """``answer(path, headers, body)`` answers each POST; ``drip_s`` above 0 sends the body a byte at a time, that
    many seconds apart (an endpoint that never trips a socket timeout). ``url`` serves it; :meth:`close` stops it."""

    def __init__(self, answer: Callable[[str, Mapping[str, str], bytes], Answer]) -> None:
        self.drip_s = 0.0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                status, kind, data = answer(self.path, dict(self.headers.items()), body)
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                if not server.drip_s:
                    self.wfile.write(data)
                    return
                for byte in data:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(server.drip_s)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
