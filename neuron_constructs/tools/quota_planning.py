"""``neuron-ecs plan --quotas``: the EC2 vCPUs an app's Neuron capacity needs, per family and purchase option, at its
maximum and at a rollout's peak: the numbers to put in a quota request
(:mod:`neuron_constructs.knowledge.quotas` names the quotas and their codes).

Read from the templates, as untrusted input (a value the template does not give as a number is said, never
guessed):

* an Auto Scaling capacity: its instance type's vCPUs times its ``MaxSize``; at the peak, the instances
  ``plan --rollout`` places when every service on it rolls out at once (blue and green together), which the group's
  ``MaxSize`` caps in practice and ``plan --rollout`` flags when it does not hold; Spot when its launch template asks
  for Spot (``InstanceMarketOptions``) or its mixed-instances policy runs no On-Demand above its base;
* a Managed Instances capacity (``CapacityOptionType`` ``ON_DEMAND`` or ``SPOT``) has no maximum: ECS launches an
  instance per task as tasks need them, so its need is its services' most tasks (their desired count or scaling
  maximum) on the largest type the capacity admits for each task, and at the peak their rollout's blue and green;
* an AWS Batch compute environment (a training queue): its ``MaxvCpus`` (``Type`` ``SPOT`` counts as Spot); jobs
  do not roll out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.checks.cfn_template import Capacity, EcsTemplate
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.quotas import ON_DEMAND, SPOT, Purchase, quota_family, quota_of
from neuron_constructs.tools.planning import _name, app_model, read_app
from neuron_constructs.tools.rollout_planning import rollout_templates

__all__ = ["QuotaNeed", "QuotaResult", "quota_paths", "quota_templates"]


@dataclass(frozen=True)
class QuotaNeed:
    """What one Neuron capacity needs of one vCPU quota."""

    capacity: str
    kind: str
    """``Auto Scaling``, ``Managed Instances`` or ``AWS Batch``."""
    family: str
    purchase: str
    instance_types: tuple[str, ...]
    vcpus: int | None
    """At the capacity's maximum; ``None`` when the template does not say."""
    peak_vcpus: int | None
    """At a rollout's peak (blue and green together); the same as ``vcpus`` where nothing rolls out."""
    how: str
    """How the numbers were found, in words."""

    def to_json(self) -> dict[str, Any]:
        quota = quota_of(self.family, self.purchase)
        return {
            "capacity": self.capacity,
            "kind": self.kind,
            "family": self.family,
            "purchase": self.purchase,
            "quota": quota.name,
            "quota_code": quota.code,
            "instance_types": list(self.instance_types),
            "vcpus": self.vcpus,
            "peak_vcpus": self.peak_vcpus,
            "how": self.how,
        }


@dataclass
class QuotaResult:
    """Every Neuron capacity's need, and the files that could not be read."""

    needs: list[QuotaNeed] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def totals(self) -> list[tuple[str, str, int | None, int | None]]:
        """Per quota (family, purchase): the vCPUs at the maximum and at the peak, summed over the capacities
        (``None`` when one of them is unknown)."""
        sums: dict[tuple[str, str], list[int | None]] = {}
        for need in self.needs:
            entry = sums.setdefault((need.family, need.purchase), [0, 0])
            entry[0] = None if entry[0] is None or need.vcpus is None else entry[0] + need.vcpus
            entry[1] = None if entry[1] is None or need.peak_vcpus is None else entry[1] + need.peak_vcpus
        return [(family, purchase, v[0], v[1]) for (family, purchase), v in sorted(sums.items())]

    TABLE_HEADERS = ("quota", "code", "at its maximum", "at a rollout's peak")

    def table_rows(self) -> list[tuple[str, str, str, str]]:
        """The summary table's rows: each quota's name, code, and vCPUs at the maximum and at the peak."""
        return [
            (
                quota_of(family, purchase).name,
                quota_of(family, purchase).code,
                "unknown" if vcpus is None else str(vcpus),
                "unknown" if peak is None else str(peak),
            )
            for family, purchase, vcpus, peak in self.totals()
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "quotas": [
                {
                    "family": family,
                    "purchase": purchase,
                    "quota": quota_of(family, purchase).name,
                    "quota_code": quota_of(family, purchase).code,
                    "vcpus": vcpus,
                    "peak_vcpus": peak,
                }
                for family, purchase, vcpus, peak in self.totals()
            ],
            "capacities": [n.to_json() for n in self.needs],
            "unreadable": self.unreadable,
        }


def quota_paths(paths: Sequence[str]) -> QuotaResult:
    """:func:`quota_templates` of the templates ``paths`` name, read as ``neuron-ecs plan`` reads them."""
    loaded, paths_of, unreadable = read_app(paths)
    result = quota_templates(loaded, construct_paths=paths_of) if loaded else QuotaResult()
    result.unreadable = unreadable
    return result


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _props(resource: object) -> dict[str, Any]:
    properties = resource.get("Properties") if isinstance(resource, dict) else None
    return properties if isinstance(properties, dict) else {}


def _ref(value: object) -> str | None:
    return value.get("Ref") if isinstance(value, dict) and isinstance(value.get("Ref"), str) else None


def _auto_scaling_purchase(t: EcsTemplate, capacity: Capacity) -> Purchase:
    group = _props(t.resources.get(capacity.group or ""))
    mixed = group.get("MixedInstancesPolicy")
    if isinstance(mixed, dict):
        distribution = mixed.get("InstancesDistribution")
        if isinstance(distribution, dict) and distribution.get("OnDemandPercentageAboveBaseCapacity") == 0:
            return SPOT
        template = (mixed.get("LaunchTemplate") or {}).get("LaunchTemplateSpecification")
    else:
        template = group.get("LaunchTemplate")
    logical_id = _ref(template.get("LaunchTemplateId")) if isinstance(template, dict) else None
    data = _props(t.resources.get(logical_id or "")).get("LaunchTemplateData")
    market = data.get("InstanceMarketOptions") if isinstance(data, dict) else None
    spot = isinstance(market, dict) and str(market.get("MarketType", "")).lower() == "spot"
    return SPOT if spot else ON_DEMAND


def _managed_purchase(t: EcsTemplate, capacity: Capacity) -> Purchase:
    provider = _props(t.resources.get(capacity.logical_id)).get("ManagedInstancesProvider")
    launch = provider.get("InstanceLaunchTemplate") if isinstance(provider, dict) else None
    option = launch.get("CapacityOptionType") if isinstance(launch, dict) else None
    return SPOT if option == "SPOT" else ON_DEMAND


def quota_templates(templates: Mapping[str, Any], *, construct_paths: Any = None) -> QuotaResult:
    """The vCPU quota needs of the Neuron capacity of one app's templates (by name)."""
    model = app_model(templates, construct_paths=construct_paths)
    rollout = rollout_templates(templates, construct_paths=construct_paths)
    peaks = {p.capacity: p for p in rollout.capacities}
    result = QuotaResult()
    for capacity in model.capacities.values():
        name = _name(model, capacity.logical_id)
        if capacity.kind == "auto-scaling":
            entry = NeuronInstanceType.find(capacity.single_type or "")
            family = quota_family(entry.name) if entry is not None else None
            if entry is None or family is None:
                continue
            peak = peaks.get(name)
            vcpus = capacity.max_size * entry.vcpus if capacity.max_size is not None else None
            # the group launches at most MaxSize, whatever a rollout asks (plan --rollout flags a peak beyond it)
            peak_instances = capacity.max_size if capacity.max_size is not None else (peak.instances if peak else None)
            result.needs.append(
                QuotaNeed(
                    name,
                    "Auto Scaling",
                    family,
                    _auto_scaling_purchase(model, capacity),
                    (entry.name,),
                    vcpus,
                    peak_instances * entry.vcpus if peak_instances is not None else None,
                    f"{capacity.max_size if capacity.max_size is not None else 'an unknown MaxSize of'} x "
                    f"{entry.name} ({entry.vcpus} vCPUs)"
                    + (
                        f"; every rollout at once asks {peak.instances} instances, which MaxSize caps"
                        if peak is not None and capacity.max_size is not None and peak.instances > capacity.max_size
                        else f"; every rollout at once: {peak.instances} instances"
                        if peak is not None
                        else ""
                    ),
                )
            )
            continue
        on = [s for s in rollout.services if s.capacity == name and s.room is not None]
        for service in on:
            entry = NeuronInstanceType.find(service.instance_type)
            family = quota_family(service.instance_type) if entry is not None else None
            if entry is None or family is None or service.room is None:
                continue
            largest = max(
                (t for t in capacity.admitted if quota_family(t.name) == family), key=lambda t: t.vcpus, default=entry
            )
            steady = service.blue_tasks or 0
            result.needs.append(
                QuotaNeed(
                    f"{name} for {service.name}",
                    "Managed Instances",
                    family,
                    _managed_purchase(model, capacity),
                    tuple(sorted(t.name for t in capacity.admitted)),
                    steady * largest.vcpus,
                    service.room.instances * largest.vcpus,
                    f"{steady} task{'s' if steady != 1 else ''}, one instance each, of at most {largest.name} "
                    f"({largest.vcpus} vCPUs); a rollout's peak: {service.room.instances}",
                )
            )
    for logical_id, resource in model.resources.items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Batch::ComputeEnvironment":
            continue
        compute = _props(resource).get("ComputeResources")
        if not isinstance(compute, dict):
            continue
        types = [t for t in compute.get("InstanceTypes") or [] if isinstance(t, str) and quota_family(t)]
        if not types:
            continue
        family = quota_family(types[0]) or "Trn"
        maximum = _int(compute.get("MaxvCpus"))
        result.needs.append(
            QuotaNeed(
                _name(model, logical_id),
                "AWS Batch",
                family,
                SPOT if compute.get("Type") in ("SPOT", "FARGATE_SPOT") else ON_DEMAND,
                tuple(types),
                maximum,
                maximum,
                f"MaxvCpus {maximum if maximum is not None else 'not a number in the template'}; jobs do not roll out",
            )
        )
    return result
