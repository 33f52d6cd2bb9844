"""A local stand-in for what moto 5.2 does not model of ``neuron-ecs doctor``'s calls: Service Quotas' EC2 quotas
(moto knows only VPC quotas) and EC2 ``DescribeCapacityReservations``. It answers those in their own protocols and
passes every other request to a moto server behind it, unchanged; or, with no moto behind it, answers everything with
one canned response (an error, garbage, a slow drip) for the tests of what doctor does with a hostile endpoint."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from local_server import Answer, LocalServer

__all__ = ["StandIn"]


def _reservation_xml(item: Mapping[str, Any]) -> str:
    fields = "".join(f"<{k}>{v}</{k}>" for k, v in item.items())
    return f"<item>{fields}</item>"


class StandIn(LocalServer):
    """``url`` serves the stand-in; ``quotas`` (code -> vCPUs) and ``reservations`` (EC2's fields) are its state;
    ``canned`` (status, content type, body), when set, answers every request (``drip_s``: a byte at a time);
    ``calls`` records each operation."""

    def __init__(self, behind: str | None = None) -> None:
        self.behind = behind
        self.quotas: dict[str, float] = {}
        self.reservations: list[dict[str, Any]] = []
        self.canned: Answer | None = None
        self.calls: list[str] = []
        super().__init__(self._answer)

    def _answer(self, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        target = {k.lower(): v for k, v in headers.items()}.get("x-amz-target", "")
        form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
        operation = target.rsplit(".", 1)[-1] if target else form.get("Action", "?")
        self.calls.append(operation)
        if self.canned is not None:
            return self.canned
        if operation == "GetServiceQuota":
            return self._quota(json.loads(body or b"{}"))
        if operation == "DescribeCapacityReservations":
            return self._reservations(form)
        return self._forward(path, headers, body)

    def _quota(self, request: Mapping[str, Any]) -> Answer:
        code = request.get("QuotaCode")
        if code not in self.quotas:
            answer: dict[str, Any] = {"__type": "NoSuchResourceException", "message": f"no quota {code}"}
            return 400, "application/x-amz-json-1.1", json.dumps(answer).encode()
        answer = {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "Value": self.quotas[code], "Unit": "None"}}
        return 200, "application/x-amz-json-1.1", json.dumps(answer).encode()

    def _reservations(self, form: Mapping[str, str]) -> Answer:
        wanted = {v for k, v in form.items() if k.startswith("CapacityReservationId.")}
        items = "".join(_reservation_xml(r) for r in self.reservations if r["capacityReservationId"] in wanted)
        xml = (
            '<DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
            f"<requestId>1</requestId><capacityReservationSet>{items}</capacityReservationSet>"
            "</DescribeCapacityReservationsResponse>"
        )
        return 200, "text/xml", xml.encode()

    def _forward(self, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        assert self.behind is not None
        request = urllib.request.Request(self.behind + path, data=body, method="POST")
        for name, value in headers.items():
            if name.lower() not in ("host", "content-length"):
                request.add_header(name, value)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=30) as answer:
                return answer.status, answer.headers.get("content-type", ""), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("content-type", ""), error.read()
