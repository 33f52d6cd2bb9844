"""A local stand-in for what moto 5.2 does not model of ``neuron-ecs doctor``'s calls: Service Quotas' EC2 quotas
(moto knows only VPC quotas) and EC2 ``DescribeCapacityReservations``. It answers those in their own protocols and
passes every other request to a moto server behind it, unchanged; or, with no moto behind it, answers everything with
one canned response (an error, garbage, a slow drip) for the tests of what doctor does with a hostile endpoint."""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

__all__ = ["StandIn"]


def _reservation_xml(item: Mapping[str, Any]) -> str:
    fields = "".join(f"<{k}>{v}</{k}>" for k, v in item.items())
    return f"<item>{fields}</item>"


class StandIn:
    """``url`` serves the stand-in; ``quotas`` (code -> vCPUs) and ``reservations`` (EC2's fields) are its state;
    ``canned`` (status, content type, body), when set, answers every request; ``calls`` records each operation."""

    def __init__(self, behind: str | None = None) -> None:
        self.behind = behind
        self.quotas: dict[str, float] = {}
        self.reservations: list[dict[str, Any]] = []
        self.canned: tuple[int, str, bytes] | None = None
        self.drip_s: float = 0.0
        self.calls: list[str] = []
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                target = self.headers.get("x-amz-target", "")
                form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
                operation = target.rsplit(".", 1)[-1] if target else form.get("Action", "?")
                stand_in.calls.append(operation)
                if stand_in.canned is not None:
                    status, kind, canned = stand_in.canned
                    return self._send(status, kind, canned)
                if operation == "GetServiceQuota":
                    return self._quota(json.loads(body or b"{}"))
                if operation == "DescribeCapacityReservations":
                    return self._reservations(form)
                self._forward(body)

            def _send(self, status: int, kind: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                if stand_in.drip_s:
                    for byte in body:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(stand_in.drip_s)
                else:
                    self.wfile.write(body)

            def _quota(self, request: Mapping[str, Any]) -> None:
                code = request.get("QuotaCode")
                if code not in stand_in.quotas:
                    answer = {"__type": "NoSuchResourceException", "message": f"no quota {code}"}
                    return self._send(400, "application/x-amz-json-1.1", json.dumps(answer).encode())
                quota = {"ServiceCode": "ec2", "QuotaCode": code, "Value": stand_in.quotas[code], "Unit": "None"}
                self._send(200, "application/x-amz-json-1.1", json.dumps({"Quota": quota}).encode())

            def _reservations(self, form: Mapping[str, str]) -> None:
                wanted = {v for k, v in form.items() if k.startswith("CapacityReservationId.")}
                items = "".join(
                    _reservation_xml(r) for r in stand_in.reservations if r["capacityReservationId"] in wanted
                )
                xml = (
                    '<DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
                    f"<requestId>1</requestId><capacityReservationSet>{items}</capacityReservationSet>"
                    "</DescribeCapacityReservationsResponse>"
                )
                self._send(200, "text/xml", xml.encode())

            def _forward(self, body: bytes) -> None:
                assert stand_in.behind is not None
                request = urllib.request.Request(stand_in.behind + self.path, data=body, method="POST")
                for name, value in self.headers.items():
                    if name.lower() not in ("host", "content-length"):
                        request.add_header(name, value)
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                try:
                    with opener.open(request, timeout=30) as answer:
                        status, kind, data = answer.status, answer.headers.get("content-type", ""), answer.read()
                except urllib.error.HTTPError as error:
                    status, kind, data = error.code, error.headers.get("content-type", ""), error.read()
                self._send(status, kind, data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
