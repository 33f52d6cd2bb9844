"""Hourly prices from the AWS Price List API for ``plan --diff --prices-from-aws``, against a local stand-in that
answers ``GetProducts`` in its own protocol: one price, garbage, and two prices for one type."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from local_server import Answer, LocalServer

from neuron_constructs.tools.cli import main
from neuron_constructs.tools.prices import on_demand_prices

DATA = Path(__file__).parent / "data"
PINNED = "neuron/al2023-ami-ecs-neuron-hvm-2023.0.20260722-kernel-6.1-x86_64/image_id"
"""The AMI parameter of a pinned release, in place of the recommended one."""


def _product(usd: str) -> str:
    dimension = {"unit": "Hrs", "pricePerUnit": {"USD": usd}}
    return json.dumps({"terms": {"OnDemand": {"SKU.TERM": {"priceDimensions": {"SKU.TERM.RATE": dimension}}}}})


class PriceList(LocalServer):
    """A stand-in for the Price List API: ``answers`` by instance type, the requests it got."""

    def __init__(self) -> None:
        self.answers: dict[str, list[str]] = {}
        self.asked: list[dict[str, Any]] = []
        super().__init__(self._answer)

    def _answer(self, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        request = json.loads(body or b"{}")
        self.asked.append(request)
        wanted = {f["Field"]: f["Value"] for f in request.get("Filters", [])}
        answer = {"PriceList": self.answers.get(wanted.get("instanceType", ""), [])}
        return 200, "application/x-amz-json-1.1", json.dumps(answer).encode()


@pytest.fixture
def price_list(fake_aws_credentials: None) -> Iterator[PriceList]:
    server = PriceList()
    yield server
    server.close()


def test_one_price_per_type_is_read_and_anything_else_is_a_sentence(price_list: PriceList) -> None:
    import boto3

    price_list.answers = {
        "inf2.48xlarge": [_product("12.9813")],
        "trn1.32xlarge": ["{not json", _product("NaN")],
        "inf2.xlarge": [_product("0.7582"), _product("0.99")],
    }
    client = boto3.Session(region_name="us-east-1").client("pricing", endpoint_url=price_list.url)
    prices, said = on_demand_prices(client, "us-east-2", ["inf2.48xlarge", "trn1.32xlarge", "inf2.xlarge"])
    assert prices == {"inf2.48xlarge": 12.9813}
    assert [s.split(" in ")[0] for s in said] == [
        "no single On-Demand price of inf2.xlarge",
        "no single On-Demand price of trn1.32xlarge",
    ]
    (request,) = [
        r
        for r in price_list.asked
        if {"Field": "instanceType", "Type": "TERM_MATCH", "Value": "inf2.48xlarge"} in r["Filters"]
    ]
    assert request["ServiceCode"] == "AmazonEC2"
    assert {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-2"} in request["Filters"]


def test_plan_diff_prices_a_refresh_at_the_price_list_s_price_and_a_given_price_wins(
    price_list: PriceList, tmp_path: Path
) -> None:
    template = json.loads((DATA / "doctor-account.template.json").read_text())
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::AutoScaling::AutoScalingGroup":  # as AmiRollout writes it
            preferences = {"MinHealthyPercentage": 100, "MaxHealthyPercentage": 150, "InstanceWarmup": 600}
            resource["UpdatePolicy"] = {
                "AutoScalingInstanceRefresh": {"Strategy": "Rolling", "Preferences": preferences}
            }
    old, new = tmp_path / "old.template.json", tmp_path / "new.template.json"
    old.write_text(json.dumps(template))
    new.write_text(json.dumps(template).replace("neuron/recommended/image_id", PINNED))
    price_list.answers = {"inf2.48xlarge": [_product("12.98")]}
    argv = ["plan", "--diff", str(old), str(new), "--prices-from-aws", "--region", "us-east-2"]
    out = io.StringIO()
    assert main([*argv, "--endpoint-url", price_list.url], stdout=out, stderr=io.StringIO()) == 0
    assert "0.33 instance-hours of inf2.48xlarge = $4.33 at $12.98/h" in out.getvalue()
    out = io.StringIO()
    given = [*argv, "--endpoint-url", price_list.url, "--price", "inf2.48xlarge=10"]
    assert main(given, stdout=out, stderr=io.StringIO()) == 0
    assert "= $3.33 at $10/h" in out.getvalue()


def test_a_group_without_a_refresh_policy_keeps_its_running_instances_on_the_old_ami(tmp_path: Path) -> None:
    old = DATA / "doctor-account.template.json"
    new = tmp_path / "doctor-account.template.json"
    new.write_text(old.read_text().replace("neuron/recommended/image_id", PINNED))
    out = io.StringIO()
    assert main(["plan", "--diff", str(old), str(new)], stdout=out) == 0
    assert "no instance refresh (the group has no AutoScalingInstanceRefresh policy)" in out.getvalue()
    assert "  0 min: the refreshes, then the longest rollout" in out.getvalue()


@pytest.mark.parametrize(
    "document",
    [
        json.dumps({"terms": []}),
        json.dumps({"terms": {"OnDemand": []}}),
        json.dumps({"terms": {"OnDemand": {"A": {"priceDimensions": {"B": {"pricePerUnit": ["1"]}}}}}}),
        json.dumps(["a", "list"]),
        "x" * (2 << 20),
    ],
)
def test_a_product_document_of_any_other_shape_has_no_price_and_raises_nothing(document: str) -> None:
    from neuron_constructs.tools.prices import _price

    assert _price(document) is None
