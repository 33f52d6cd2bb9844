"""Hourly On-Demand prices of instance types from the AWS Price List API (``pricing:GetProducts``), for ``neuron-ecs
plan --diff --prices-from-aws``: read at the time of the run, never kept in a table that would pretend to be current.

The query is the one the Price List API documents for a Linux On-Demand instance of a Region: ``ServiceCode``
``AmazonEC2`` with ``TERM_MATCH`` filters on ``instanceType``, ``regionCode``, ``operatingSystem`` Linux, ``tenancy``
Shared, ``preInstalledSw`` NA and ``capacitystatus`` Used; the price is the ``OnDemand`` term's ``pricePerUnit`` in
USD. The API answers from ``us-east-1`` (and a few other Regions) for every Region. Each answer is untrusted input:
bounded in size, and a price that is not one number in USD is left out with a sentence.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_PRODUCT_BYTES", "PRICING_REGION", "on_demand_prices"]

PRICING_REGION = "us-east-1"
"""Where the Price List API answers."""
MAX_PRODUCT_BYTES = 1 << 20
"""The largest product document read."""


def _filters(instance_type: str, region: str) -> list[dict[str, str]]:
    wanted = {
        "instanceType": instance_type,
        "regionCode": region,
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
    }
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in wanted.items()]


def _price(document: str) -> float | None:
    """The one hourly USD price of a product document, ``None`` for anything else (any shape it may have)."""
    try:
        return _read_price(document)
    except (AttributeError, TypeError, KeyError):
        return None


def _read_price(document: str) -> float | None:
    if not isinstance(document, str) or len(document) > MAX_PRODUCT_BYTES:
        return None
    try:
        product = json.loads(document)
    except ValueError:
        return None
    prices = []
    for term in ((product.get("terms") or {}).get("OnDemand") or {}).values() if isinstance(product, dict) else []:
        for dimension in (term.get("priceDimensions") or {}).values() if isinstance(term, dict) else []:
            usd = (dimension.get("pricePerUnit") or {}).get("USD") if isinstance(dimension, dict) else None
            try:
                value = float(str(usd))
            except ValueError:
                continue
            if math.isfinite(value) and 0 < value < 10_000 and dimension.get("unit") in ("Hrs", "Hours", None):
                prices.append(value)
    return prices[0] if len(set(prices)) == 1 else None


def on_demand_prices(client: Any, region: str, instance_types: Iterable[str]) -> tuple[dict[str, float], list[str]]:
    """The hourly Linux On-Demand price in USD of each of ``instance_types`` in ``region``, by type, and a sentence
    for each type without one."""
    prices: dict[str, float] = {}
    said: list[str] = []
    for instance_type in sorted(set(instance_types)):
        answer = client.get_products(
            ServiceCode="AmazonEC2", Filters=_filters(instance_type, region), FormatVersion="aws_v1", MaxResults=10
        )
        found = {p for p in (_price(d) for d in answer.get("PriceList") or []) if p is not None}
        if len(found) == 1:
            prices[instance_type] = found.pop()
        else:
            said.append(
                f"no single On-Demand price of {instance_type} in {region} in the Price List answer: "
                "pass --price TYPE=USD_PER_HOUR"
            )
    return prices, said
