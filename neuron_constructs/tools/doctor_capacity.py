"""``neuron-ecs doctor``'s capacity checks: the vCPU quotas, the zones that offer each capacity's instance types, and
the reservations and Capacity Blocks the templates name (:mod:`neuron_constructs.tools.doctor` says what each
reads)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from neuron_constructs.knowledge.quotas import quota_family, quota_of
from neuron_constructs.tools.doctor_findings import CheckedApp, Finding, error_sentence, pages, properties_of, ref_of
from neuron_constructs.tools.planning import _name

__all__ = [
    "availability_zones",
    "capacity_subnets",
    "check_quota",
    "check_reservation",
    "check_zones",
    "get_azs",
    "subnet_zone",
]


def subnet_zone(
    app: CheckedApp,
    subnet: object,
    zones_by_name: Mapping[str, str],
    ids: Mapping[str, str],
    get_azs: Sequence[str] | None = None,
) -> str | None:
    """The zone ID of a subnet a capacity names: one the template makes (its ``AvailabilityZone``, a name or
    ``Fn::Select`` of ``Fn::GetAZs``, whose zones are ``get_azs``: default every zone of the Region, by name), or one
    named by id (looked up)."""
    logical = ref_of(subnet)
    if logical is not None:
        zone = properties_of(app.model.resources.get(logical)).get("AvailabilityZone")
        if isinstance(zone, str):
            return zones_by_name.get(zone)
        index = _get_azs_index(zone)
        if index is not None:
            names = list(get_azs) if get_azs is not None else sorted(zones_by_name)
            return zones_by_name.get(names[index]) if 0 <= index < len(names) else None
        zone_id = properties_of(app.model.resources.get(logical)).get("AvailabilityZoneId")
        return zone_id if isinstance(zone_id, str) else None
    if isinstance(subnet, str):
        return ids.get(subnet)
    return None


def _get_azs_index(zone: object) -> int | None:
    """``i`` of a subnet's zone ``Fn::Select [i, Fn::GetAZs ""]`` (or of ``Ref AWS::Region``), else ``None``."""
    select = zone.get("Fn::Select") if isinstance(zone, dict) else None
    if not (isinstance(select, list) and len(select) == 2 and isinstance(select[0], int)):
        return None
    listed = select[1]
    region = listed.get("Fn::GetAZs") if isinstance(listed, dict) and len(listed) == 1 else None
    return select[0] if region == "" or region == {"Ref": "AWS::Region"} else None


def _listed_zones(app: CheckedApp, ec2: Any, zones_by_name: Mapping[str, str]) -> list[str] | None:
    """:func:`get_azs`, asked only when a subnet a capacity names is one the templates make in such a zone."""
    for _, _, subnets, _ in capacity_subnets(app):
        for subnet in subnets:
            zone = properties_of(app.model.resources.get(ref_of(subnet) or "")).get("AvailabilityZone")
            if _get_azs_index(zone) is not None:
                return get_azs(ec2, zones_by_name)
    return None


def get_azs(ec2: Any, zones_by_name: Mapping[str, str]) -> list[str]:
    """The zones ``Fn::GetAZs`` lists in this account and Region, by name: CloudFormation "returns only Availability
    Zones that have a default subnet unless none of the Availability Zones has a default subnet; in that case, all
    Availability Zones are returned", "in alphabetical order" (the ``Fn::GetAZs`` reference)
    (``DescribeSubnets``, filter ``default-for-az``)."""
    defaults = {
        s.get("AvailabilityZone")
        for s in pages(ec2.describe_subnets, "Subnets", Filters=[{"Name": "default-for-az", "Values": ["true"]}])
    }
    with_default = sorted(name for name in zones_by_name if name in defaults)
    return with_default or sorted(zones_by_name)


def capacity_subnets(app: CheckedApp) -> list[tuple[str, tuple[str, ...], tuple[Any, ...], str]]:
    """Each Neuron capacity: its name, instance types, subnets and kind (``auto-scaling``, ``managed-instances``,
    ``batch``)."""
    found: list[tuple[str, tuple[str, ...], tuple[Any, ...], str]] = []
    for capacity in app.model.capacities.values():
        if capacity.kind == "auto-scaling":
            types = tuple(sorted(capacity.instance_types or ()))
        else:
            types = tuple(sorted(t.name for t in capacity.admitted))
        if types and all(quota_family(t) for t in types):
            found.append((_name(app.model, capacity.logical_id), types, capacity.subnets, capacity.kind))
    for logical_id, resource in app.model.resources.items():
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Batch::ComputeEnvironment":
            compute = properties_of(resource).get("ComputeResources")
            if isinstance(compute, dict):
                types = tuple(t for t in compute.get("InstanceTypes") or [] if isinstance(t, str) and quota_family(t))
                subnets = compute.get("Subnets")
                if types:
                    found.append(
                        (
                            _name(app.model, logical_id),
                            types,
                            tuple(subnets) if isinstance(subnets, list) else (),
                            "batch",
                        )
                    )
    return found


# --- the checks --------------------------------------------------------------------------------------------------


def check_quota(app: CheckedApp, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    client = clients("service-quotas")
    findings = []
    for family, purchase, vcpus, peak in app.quotas.totals():
        quota = quota_of(family, purchase)
        needed = peak if peak is not None else vcpus
        subject = f"{quota.name} ({quota.code})"
        try:
            value = client.get_service_quota(ServiceCode="ec2", QuotaCode=quota.code)["Quota"]["Value"]
        except Exception as error:
            sentence = error_sentence(error, "servicequotas:GetServiceQuota")
            if sentence is None:
                raise
            findings.append(Finding("quota", subject, "unknown", sentence))
            continue
        if needed is None:
            findings.append(Finding("quota", subject, "unknown", f"{value:g} vCPUs; the templates do not say how many"))
        elif value >= needed:
            findings.append(
                Finding("quota", subject, "ok", f"{value:g} vCPUs, the app needs {needed} at a rollout's peak")
            )
        else:
            findings.append(
                Finding(
                    "quota",
                    subject,
                    "problem",
                    f"{value:g} vCPUs, the app needs {needed} at a rollout's peak ({vcpus} at its maximum): "
                    "instances beyond it do not launch",
                    "aws service-quotas request-service-quota-increase --service-code ec2 "
                    f"--quota-code {quota.code} --desired-value {needed}",
                )
            )
    return findings


def check_zones(app: CheckedApp, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    ec2 = clients("ec2")
    by_name = availability_zones(ec2)
    literal = sorted({s for _, _, subnets, _ in capacity_subnets(app) for s in subnets if isinstance(s, str)})
    ids: dict[str, str] = {}
    for subnet in literal:  # one at a time: a subnet that does not exist fails a call of several
        try:
            ids.update(
                {
                    s["SubnetId"]: s["AvailabilityZoneId"]
                    for s in pages(ec2.describe_subnets, "Subnets", SubnetIds=[subnet])
                }
            )
        except ClientError as error:
            if not str(error.response.get("Error", {}).get("Code", "")).startswith("InvalidSubnetID"):
                raise
    listed = _listed_zones(app, ec2, by_name)
    findings = []
    for name, types, subnets, _ in capacity_subnets(app):
        offered: dict[str, set[str]] = {}
        for offer in pages(
            ec2.describe_instance_type_offerings,
            "InstanceTypeOfferings",
            LocationType="availability-zone-id",
            Filters=[{"Name": "instance-type", "Values": list(types)}],
        ):
            offered.setdefault(offer["InstanceType"], set()).add(offer["Location"])
        anywhere = sorted(set().union(*offered.values())) if offered else []
        placed = [subnet_zone(app, s, by_name, ids, listed) for s in subnets]
        known = sorted({z for z in placed if z is not None})
        shown = ", ".join(types) if len(types) <= 3 else f"{types[0]} and {len(types) - 1} more"
        if not anywhere:
            findings.append(
                Finding(
                    "zones",
                    name,
                    "problem",
                    f"no zone of the Region offers {shown}",
                    "deploy in a Region that offers it",
                )
            )
        elif not known:
            findings.append(
                Finding(
                    "zones",
                    name,
                    "unknown",
                    f"its subnets' zones are not known before the deploy; {shown} is offered in {', '.join(anywhere)}",
                )
            )
        else:
            missing = [z for z in known if not any(z in offered.get(t, set()) for t in types)]
            if not missing:
                findings.append(
                    Finding("zones", name, "ok", f"{shown} offered in its subnets' zones {', '.join(known)}")
                )
            else:
                findings.append(
                    Finding(
                        "zones",
                        name,
                        "problem",
                        f"{shown} is not offered in {', '.join(missing)}, a zone of its subnets; it is in "
                        f"{', '.join(anywhere)}",
                        f"place the capacity's subnets in {', '.join(anywhere)} (the VPC's availability_zones, or "
                        "capacity_subnets=)",
                    )
                )
    return findings


def _reservations(app: CheckedApp) -> list[tuple[str, str, str | None, int | None, tuple[Any, ...]]]:
    """Each reservation the templates name: (where, id or group ARN, instance type, the capacity's maximum, its
    subnets)."""
    found: list[tuple[str, str, str | None, int | None, tuple[Any, ...]]] = []
    groups = {c.group: c for c in app.model.capacities.values() if c.group}
    for logical_id, resource in app.model.resources.items():
        kind = resource.get("Type") if isinstance(resource, dict) else None
        properties = properties_of(resource)
        if kind == "AWS::AutoScaling::AutoScalingGroup":
            target = (properties.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget") or {}
            capacity = groups.get(logical_id)
            instance_type = capacity.single_type if capacity is not None else None
            maximum = capacity.max_size if capacity is not None else None
            subnets = capacity.subnets if capacity is not None else ()
            for key in ("CapacityReservationIds", "CapacityReservationResourceGroupArns"):
                for value in target.get(key) or []:
                    if isinstance(value, str):
                        found.append((_name(app.model, logical_id), value, instance_type, maximum, subnets))
        elif kind == "AWS::EC2::LaunchTemplate":
            data = properties.get("LaunchTemplateData") or {}
            target = (data.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget") or {}
            for key in ("CapacityReservationId", "CapacityReservationResourceGroupArn"):
                value = target.get(key)
                if isinstance(value, str):
                    instance_type = data.get("InstanceType") if isinstance(data.get("InstanceType"), str) else None
                    found.append((_name(app.model, logical_id), value, instance_type, None, ()))
    return found


def availability_zones(ec2: Any) -> dict[str, str]:
    """The Region's Availability Zones (not Local or Wavelength Zones) by name, their zone IDs as values."""
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    return {z["ZoneName"]: z["ZoneId"] for z in zones if z.get("ZoneType", "availability-zone") == "availability-zone"}


def _described_reservations(ec2: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The reservations among ``ids`` that exist, by id: all at once, else one at a time when EC2 refuses the call for
    one it does not know (which fails a call of several)."""
    try:
        items = list(pages(ec2.describe_capacity_reservations, "CapacityReservations", CapacityReservationIds=ids))
    except ClientError as error:
        if not str(error.response.get("Error", {}).get("Code", "")).startswith("InvalidCapacityReservationId"):
            raise
        items = []
        for one in ids:
            try:
                items += pages(ec2.describe_capacity_reservations, "CapacityReservations", CapacityReservationIds=[one])
            except ClientError as inner:
                if not str(inner.response.get("Error", {}).get("Code", "")).startswith("InvalidCapacityReservationId"):
                    raise
    return {item["CapacityReservationId"]: item for item in items}


def check_reservation(app: CheckedApp, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    named = _reservations(app)
    ids = sorted({r for _, r, _, _, _ in named if r.startswith("cr-")})
    described: dict[str, dict[str, Any]] = {}
    by_name: dict[str, str] = {}
    listed: list[str] | None = None
    if ids:
        by_name = availability_zones(clients("ec2"))
        listed = _listed_zones(app, clients("ec2"), by_name)
        described = _described_reservations(clients("ec2"), ids)
    findings = []
    for where, reservation, instance_type, maximum, subnets in named:
        subject = f"{reservation} ({where})"
        if not reservation.startswith("cr-"):
            findings.append(
                Finding(
                    "reservation",
                    subject,
                    "unknown",
                    "a reservation group: its reservations are not read here "
                    "(aws resource-groups list-group-resources)",
                )
            )
            continue
        item = described.get(reservation)
        if item is None:
            findings.append(
                Finding(
                    "reservation",
                    subject,
                    "problem",
                    "no such reservation in this account and Region",
                    "name a reservation of this account and Region",
                )
            )
            continue
        problems = []
        state = item.get("State")
        if state not in ("active", "scheduled", "payment-pending"):
            problems.append(f"it is {state}")
        if instance_type and item.get("InstanceType") != instance_type:
            problems.append(f"it is for {item.get('InstanceType')}, the capacity launches {instance_type}")
        placed = sorted({z for z in (subnet_zone(app, s, by_name, {}, listed) for s in subnets) if z is not None})
        if placed and item.get("AvailabilityZoneId") and item["AvailabilityZoneId"] not in placed:
            problems.append(f"it is in {item['AvailabilityZoneId']}, the capacity's subnets in {', '.join(placed)}")
        available, total = item.get("AvailableInstanceCount"), item.get("TotalInstanceCount")
        if maximum is not None and isinstance(total, int) and total < maximum:  # the group's own instances count
            problems.append(f"it holds {total} instances, the capacity launches up to {maximum}")
        end, start = item.get("EndDate"), item.get("StartDate")
        if isinstance(end, datetime) and end <= now:
            problems.append(f"it ended {end:%Y-%m-%d %H:%M} UTC")
        window = ""
        if item.get("ReservationType") == "capacity-block" and isinstance(start, datetime):
            window = (
                f"; Capacity Block {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
                if isinstance(end, datetime)
                else ""
            )
            if start > now:
                problems.append(f"the block starts {start:%Y-%m-%d %H:%M} UTC: nothing launches before")
        zone = item.get("AvailabilityZoneId") or item.get("AvailabilityZone")
        described_as = f"{state}, {item.get('InstanceType')} in {zone}, {available} available{window}"
        if problems:
            findings.append(
                Finding(
                    "reservation",
                    subject,
                    "problem",
                    f"{described_as}: " + "; ".join(problems),
                    "reserve the capacity's instance type in its subnets' zones for its maximum, or change the "
                    "capacity to fit the reservation",
                )
            )
        else:
            findings.append(Finding("reservation", subject, "ok", described_as))
    return findings
