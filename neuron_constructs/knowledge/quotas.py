"""The EC2 quotas Neuron capacity counts against: vCPUs per instance family and purchase option.

EC2 limits running On-Demand Instances and Spot Instance requests "in terms of the number of virtual central
processing units (vCPUs)" per family (Amazon EC2 User Guide, "On-Demand Instance quotas" and "Spot Instance quotas"),
so an app's Neuron capacity needs, in each account and Region, as many vCPUs of the Inf or Trn quota as the
instances it may run at once. New accounts start low (often at 0 for these families), and a launch beyond the
quota fails quietly: an Auto Scaling activity, a task left in ``PROVISIONING``. The Service Quotas codes (service
``ec2``) are those ``aws service-quotas list-service-quotas --service-code ec2`` lists under these names; no AWS
page lists the codes, so the names are printed beside them. Capacity Blocks have no quota code: "you can have up to
256 instances across Capacity Blocks" (EC2 User Guide, "Purchase Capacity Blocks").

Plain Python, no AWS CDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ON_DEMAND", "QUOTAS", "SPOT", "Purchase", "VcpuQuota", "quota_family", "quota_of"]

Purchase = Literal["On-Demand", "Spot"]
ON_DEMAND: Purchase = "On-Demand"
SPOT: Purchase = "Spot"


@dataclass(frozen=True)
class VcpuQuota:
    """One EC2 vCPU quota: the family and purchase option it counts, its name and its Service Quotas code."""

    family: str
    purchase: Purchase
    name: str
    code: str


QUOTAS: tuple[VcpuQuota, ...] = (
    VcpuQuota("Inf", ON_DEMAND, "Running On-Demand Inf instances", "L-1945791B"),
    VcpuQuota("Trn", ON_DEMAND, "Running On-Demand Trn instances", "L-2C3B7624"),
    VcpuQuota("Inf", SPOT, "All Inf Spot Instance Requests", "L-B5D1601B"),
    VcpuQuota("Trn", SPOT, "All Trn Spot Instance Requests", "L-6B0D517C"),
)
"""The quotas of the Inf (inf1, inf2) and Trn (trn1, trn1n, trn2) families, On-Demand and Spot."""


def quota_family(instance_type: str) -> str | None:
    """``Inf`` or ``Trn`` for a Neuron instance type (``inf2.48xlarge``), ``None`` for any other."""
    prefix = instance_type.split(".", 1)[0].lower()
    if prefix.startswith("inf"):
        return "Inf"
    if prefix.startswith("trn"):
        return "Trn"
    return None


def quota_of(family: str, purchase: str) -> VcpuQuota:
    """The quota that counts ``family``'s vCPUs bought ``purchase`` (``On-Demand`` or ``Spot``)."""
    for quota in QUOTAS:
        if quota.family == family and quota.purchase == purchase:
            return quota
    raise ValueError(f"no vCPU quota of family {family!r} bought {purchase!r}")
