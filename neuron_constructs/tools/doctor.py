"""``neuron-ecs doctor``: what would stop an app's Neuron capacity starting in one account and Region, found before
the deploy with read-only calls, each check answered ``ok``, ``problem`` (with the fix) or ``unknown`` (with the
permission it lacked, or why).

The checks, against what the templates will launch:

* **quota**: each Inf and Trn vCPU quota, On-Demand and Spot (Service Quotas ``GetServiceQuota``,
  :mod:`neuron_constructs.knowledge.quotas`), against the vCPUs the capacities need at a rollout's peak
  (:mod:`neuron_constructs.tools.quota_planning`);
* **zones**: each capacity's instance types offered in the zones of its subnets, compared by zone ID
  (``DescribeInstanceTypeOfferings`` by ``availability-zone-id``; zone names map to IDs per account,
  ``DescribeAvailabilityZones``; a subnet the template makes in ``Fn::Select`` of ``Fn::GetAZs`` is in the Region's
  zones in alphabetical order, as CloudFormation lists them);
* **reservation**: each On-Demand Capacity Reservation and Capacity Block the templates name: its state, instance
  type, zone and instances available against the capacity, and a block's window against now
  (``DescribeCapacityReservations``); a reservation group is said to be unread;
* **ami**: each public SSM parameter the templates resolve (the recommended or a pinned ECS Neuron AMI) published in
  the Region (``GetParameters``);
* **image**: each private ECR image the task definitions name, its repository and tag (``DescribeImages``);
* **pull path**: each capacity subnet's way to the registries: a NAT gateway or internet route, or VPC endpoints for
  ECR (API and Docker), S3 (gateway) and CloudWatch Logs, from the template or, for a subnet named by id, from
  ``DescribeRouteTables`` and ``DescribeVpcEndpoints``;
* **service-linked role**: those of ECS, Auto Scaling, Spot and AWS Batch the capacities need (``GetRole``);
* **bootstrap**: the CDK bootstrap version a cloud assembly requires against the account's
  (``/cdk-bootstrap/<qualifier>/version``).

Bounded: one deadline for the whole run (the checks after it are ``unknown``: not run), every paginated call capped,
each client with the command line's timeouts and retries (throttling retried with backoff); an AWS error is a
sentence on the check it stopped, never a traceback. Every call is one of
:data:`~neuron_constructs.knowledge.doctor_permissions.DOCTOR_PERMISSIONS`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from neuron_constructs.checks.cfn_template import EcsTemplate
from neuron_constructs.knowledge.quotas import quota_family, quota_of
from neuron_constructs.tools.planning import _name, app_model, read_app
from neuron_constructs.tools.quota_planning import QuotaResult, quota_templates

__all__ = ["CHECKS", "DEADLINE_S", "MAX_PAGES", "Finding", "Report", "run_doctor"]

Status = Literal["ok", "problem", "unknown"]
DEADLINE_S = 120.0
"""The whole run's deadline, by default."""
MAX_PAGES = 10
"""The most pages any paginated call reads."""
CHECKS = ("quota", "zones", "reservation", "ami", "image", "pull path", "service-linked role", "bootstrap")
"""The checks, in the order they run."""
SERVICE_LINKED_ROLES = {
    "ecs": ("AWSServiceRoleForECS", "ecs.amazonaws.com"),
    "auto-scaling": ("AWSServiceRoleForAutoScaling", "autoscaling.amazonaws.com"),
    "spot": ("AWSServiceRoleForEC2Spot", "spot.amazonaws.com"),
    "batch": ("AWSServiceRoleForBatch", "batch.amazonaws.com"),
}
"""Role name and AWS service name of each service-linked role a kind of capacity needs."""
ENDPOINT_SERVICES = ("ecr.api", "ecr.dkr", "s3", "logs")
"""The VPC endpoints a subnet without a NAT or internet route needs to pull an image and write its logs."""


@dataclass(frozen=True)
class Finding:
    """One check's answer about one subject."""

    check: str
    subject: str
    status: Status
    said: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "subject": self.subject, "status": self.status, "said": self.said, "fix": self.fix}


@dataclass
class Report:
    """Every finding, in check order, and the files that could not be read."""

    findings: list[Finding] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "problem"]


@dataclass
class _App:
    """What the checks read of the templates."""

    model: EcsTemplate
    quotas: QuotaResult
    manifests: list[dict[str, Any]]
    region: str


def _props(resource: object) -> dict[str, Any]:
    properties = resource.get("Properties") if isinstance(resource, dict) else None
    return properties if isinstance(properties, dict) else {}


def _ref(value: object) -> str | None:
    return value.get("Ref") if isinstance(value, dict) and isinstance(value.get("Ref"), str) else None


def _pages(call: Callable[..., Any], key: str, **request: Any) -> Iterator[Any]:
    """The items under ``key`` of at most :data:`MAX_PAGES` pages of ``call``."""
    for _ in range(MAX_PAGES):
        page = call(**request)
        yield from page.get(key) or []
        token = page.get("NextToken") or page.get("nextToken")
        if not token:
            return
        request["NextToken"] = token


def _error_sentence(error: BaseException, action: str) -> str | None:
    """``unknown``'s reason for an AWS error, or ``None`` if ``error`` is not one."""
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(error, ClientError):
        action = f"{action.split(':', 1)[0]}:{error.operation_name}" if error.operation_name else action
        code = str(error.response.get("Error", {}).get("Code", ""))
        message = str(error.response.get("Error", {}).get("Message", ""))[:300]
        if "AccessDenied" in code or code in ("UnauthorizedOperation", "AccessDeniedException"):
            return f"not allowed to call {action} (the doctor policy allows it): {message}"
        if code in ("Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"):
            return f"AWS kept throttling {action} after retries: run doctor again in a minute"
        return f"AWS refused {action} ({code}): {message}"
    from botocore.parsers import ResponseParserError

    if isinstance(error, BotoCoreError):
        return f"{action} did not complete: {error}"
    if isinstance(error, (ResponseParserError, ValueError, KeyError, IndexError, TypeError, AttributeError)):
        return f"{action} answered something that is not the AWS answer it should be ({type(error).__name__})"
    return None


# --- the subnets and zones of each capacity ----------------------------------------------------------------------


def _subnet_zone(app: _App, subnet: object, zones_by_name: Mapping[str, str], ids: Mapping[str, str]) -> str | None:
    """The zone ID of a subnet a capacity names: one the template makes (its ``AvailabilityZone``, a name or
    ``Fn::Select`` of ``Fn::GetAZs``), or one named by id (looked up)."""
    logical = _ref(subnet)
    if logical is not None:
        zone = _props(app.model.resources.get(logical)).get("AvailabilityZone")
        if isinstance(zone, str):
            return zones_by_name.get(zone)
        select = zone.get("Fn::Select") if isinstance(zone, dict) else None
        if isinstance(select, list) and len(select) == 2 and isinstance(select[0], int):
            names = sorted(zones_by_name)  # Fn::GetAZs lists the Region's zones in alphabetical order
            return zones_by_name[names[select[0]]] if 0 <= select[0] < len(names) else None
        zone_id = _props(app.model.resources.get(logical)).get("AvailabilityZoneId")
        return zone_id if isinstance(zone_id, str) else None
    if isinstance(subnet, str):
        return ids.get(subnet)
    return None


def _capacity_subnets(app: _App) -> list[tuple[str, tuple[str, ...], tuple[Any, ...], str]]:
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
            compute = _props(resource).get("ComputeResources")
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


def _quota(app: _App, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    client = clients("service-quotas")
    findings = []
    for family, purchase, vcpus, peak in app.quotas.totals():
        quota = quota_of(family, purchase)
        needed = peak if peak is not None else vcpus
        subject = f"{quota.name} ({quota.code})"
        try:
            value = client.get_service_quota(ServiceCode="ec2", QuotaCode=quota.code)["Quota"]["Value"]
        except Exception as error:
            sentence = _error_sentence(error, "servicequotas:GetServiceQuota")
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


def _zones(app: _App, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    ec2 = clients("ec2")
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    by_name = {
        z["ZoneName"]: z["ZoneId"] for z in zones if z.get("ZoneType", "availability-zone") == "availability-zone"
    }
    literal = sorted({s for _, _, subnets, _ in _capacity_subnets(app) for s in subnets if isinstance(s, str)})
    ids = (
        {s["SubnetId"]: s["AvailabilityZoneId"] for s in _pages(ec2.describe_subnets, "Subnets", SubnetIds=literal)}
        if literal
        else {}
    )
    findings = []
    for name, types, subnets, _ in _capacity_subnets(app):
        offered: dict[str, set[str]] = {}
        for offer in _pages(
            ec2.describe_instance_type_offerings,
            "InstanceTypeOfferings",
            LocationType="availability-zone-id",
            Filters=[{"Name": "instance-type", "Values": list(types)}],
        ):
            offered.setdefault(offer["InstanceType"], set()).add(offer["Location"])
        anywhere = sorted(set().union(*offered.values())) if offered else []
        placed = [_subnet_zone(app, s, by_name, ids) for s in subnets]
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


def _reservations(app: _App) -> list[tuple[str, str, str | None, int | None, tuple[Any, ...]]]:
    """Each reservation the templates name: (where, id or group ARN, instance type, the capacity's maximum, its
    subnets)."""
    found: list[tuple[str, str, str | None, int | None, tuple[Any, ...]]] = []
    groups = {c.group: c for c in app.model.capacities.values() if c.group}
    for logical_id, resource in app.model.resources.items():
        kind = resource.get("Type") if isinstance(resource, dict) else None
        properties = _props(resource)
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


def _reservation(app: _App, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    named = _reservations(app)
    ids = sorted({r for _, r, _, _, _ in named if r.startswith("cr-")})
    described: dict[str, dict[str, Any]] = {}
    by_name: dict[str, str] = {}
    if ids:
        zones = clients("ec2").describe_availability_zones()["AvailabilityZones"]
        by_name = {z["ZoneName"]: z["ZoneId"] for z in zones}
        for item in _pages(
            clients("ec2").describe_capacity_reservations, "CapacityReservations", CapacityReservationIds=ids
        ):
            described[item["CapacityReservationId"]] = item
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
        placed = sorted({z for z in (_subnet_zone(app, s, by_name, {}) for s in subnets) if z is not None})
        if placed and item.get("AvailabilityZoneId") and item["AvailabilityZoneId"] not in placed:
            problems.append(f"it is in {item['AvailabilityZoneId']}, the capacity's subnets in {', '.join(placed)}")
        available = item.get("AvailableInstanceCount")
        if maximum is not None and isinstance(available, int) and available < maximum:
            problems.append(f"{available} of its instances are available, the capacity launches up to {maximum}")
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


def _ami(app: _App, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    names = sorted(
        {
            p["Default"]
            for p in app.model.parameters.values()
            if isinstance(p, dict)
            and "AWS::SSM::Parameter::Value" in str(p.get("Type"))
            and isinstance(p.get("Default"), str)
            and p["Default"].startswith("/aws/service/")
        }
    )
    findings = []
    ssm = clients("ssm")
    for start in range(0, len(names), 10):  # GetParameters takes ten names
        answer = ssm.get_parameters(Names=names[start : start + 10])
        invalid = set(answer.get("InvalidParameters") or [])
        found = {p.get("Name") for p in answer.get("Parameters") or [] if isinstance(p, dict)}
        for name in names[start : start + 10]:
            if name in invalid:
                findings.append(
                    Finding(
                        "ami",
                        name,
                        "problem",
                        "not published in this Region",
                        "pin a release the Region publishes: neuron-ecs ami --releases --region <this Region>",
                    )
                )
            elif name in found:
                findings.append(Finding("ami", name, "ok", "published in this Region"))
            else:
                findings.append(Finding("ami", name, "unknown", "the answer names it neither found nor invalid"))
    return findings


def _text(value: object, region: str, partition: str, suffix: str) -> str | None:
    """A template value as text, when it is a literal or a join of literals and the Region's pseudo parameters."""
    if isinstance(value, str):
        return value
    pseudo = {"AWS::Region": region, "AWS::Partition": partition, "AWS::URLSuffix": suffix}
    join = value.get("Fn::Join") if isinstance(value, dict) else None
    if isinstance(join, list) and len(join) == 2 and isinstance(join[1], list):
        parts = []
        for part in join[1]:
            text = part if isinstance(part, str) else pseudo.get(_ref(part) or "")
            if text is None:
                return None
            parts.append(text)
        return str(join[0]).join(parts)
    return None


def _images(app: _App, region: str) -> list[tuple[str, str, str, str]]:
    """Each private ECR image of the task definitions: (image, registry account, repository, tag)."""
    found = set()
    for resource in app.model.resources.values():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::ECS::TaskDefinition":
            continue
        for container in _props(resource).get("ContainerDefinitions") or []:
            image = _text(
                container.get("Image") if isinstance(container, dict) else None, region, "aws", "amazonaws.com"
            )
            if not image or ".dkr.ecr." not in image or "@" in image:
                continue
            host, _, rest = image.partition("/")
            repository, _, tag = rest.rpartition(":") if ":" in rest else (rest, "", "latest")
            found.add((image, host.split(".", 1)[0], repository, tag))
    return sorted(found)


def _image(app: _App, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    ecr = clients("ecr")
    findings = []
    for image, account, repository, tag in _images(app, app.region):
        try:
            answer = ecr.describe_images(registryId=account, repositoryName=repository, imageIds=[{"imageTag": tag}])
        except Exception as error:
            from botocore.exceptions import ClientError

            code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
            if code in ("ImageNotFoundException", "RepositoryNotFoundException"):
                what = "tag" if code == "ImageNotFoundException" else "repository"
                findings.append(
                    Finding(
                        "image",
                        image,
                        "problem",
                        f"no such {what} in the registry of {account}",
                        "push the image, or name one that exists",
                    )
                )
                continue
            sentence = _error_sentence(error, "ecr:DescribeImages")
            if sentence is None:
                raise
            findings.append(
                Finding("image", image, "unknown", f"{sentence}; the task's execution role pulls it, not you")
            )
            continue
        tags = {t for d in answer.get("imageDetails") or [] if isinstance(d, dict) for t in d.get("imageTags") or []}
        if tag in tags:
            findings.append(Finding("image", image, "ok", "the tag is in the repository"))
        else:
            findings.append(Finding("image", image, "unknown", "the answer does not list the tag"))
    return findings


def _template_routes(app: _App) -> tuple[dict[str, str], set[str], set[str]]:
    """The template's subnets' route table, the route tables with a NAT or internet route, and the VPC endpoint
    services it makes."""
    table_of: dict[str, str] = {}
    routed: set[str] = set()
    endpoints: set[str] = set()
    for resource in app.model.resources.values():
        kind = resource.get("Type") if isinstance(resource, dict) else None
        properties = _props(resource)
        if kind == "AWS::EC2::SubnetRouteTableAssociation":
            subnet, table = _ref(properties.get("SubnetId")), _ref(properties.get("RouteTableId"))
            if subnet and table:
                table_of[subnet] = table
        elif kind == "AWS::EC2::Route" and properties.get("DestinationCidrBlock") == "0.0.0.0/0":
            table = _ref(properties.get("RouteTableId"))
            if table and (properties.get("NatGatewayId") or properties.get("GatewayId")):
                routed.add(table)
        elif kind == "AWS::EC2::VPCEndpoint":
            service = _endpoint_service(_text(properties.get("ServiceName"), "region", "aws", "amazonaws.com") or "")
            if service is not None:
                endpoints.add(service)
    return table_of, routed, endpoints


def _endpoint_service(name: str) -> str | None:
    """Which of :data:`ENDPOINT_SERVICES` a VPC endpoint's service name (``com.amazonaws.<region>.ecr.api``) is."""
    return next((s for s in ENDPOINT_SERVICES if name.endswith(f".{s}")), None)


def _route_tables(ec2: Any, subnet: str) -> list[dict[str, Any]]:
    """The route table a subnet named by id uses: its own association, else its VPC's main table (a subnet with no
    association of its own uses the main one, which the subnet-id filter does not return)."""
    own = list(
        _pages(
            ec2.describe_route_tables, "RouteTables", Filters=[{"Name": "association.subnet-id", "Values": [subnet]}]
        )
    )
    if own:
        return own
    vpcs = [s.get("VpcId") for s in _pages(ec2.describe_subnets, "Subnets", SubnetIds=[subnet])]
    filters = [{"Name": "vpc-id", "Values": [v for v in vpcs if v]}, {"Name": "association.main", "Values": ["true"]}]
    return list(_pages(ec2.describe_route_tables, "RouteTables", Filters=filters)) if any(vpcs) else []


def _pull_path(app: _App, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    table_of, routed, endpoints = _template_routes(app)
    findings = []
    for name, _, subnets, _ in _capacity_subnets(app):
        blocked, unknown = [], []
        for subnet in subnets:
            logical = _ref(subnet)
            if logical is not None:
                if table_of.get(logical) not in routed and not set(ENDPOINT_SERVICES) <= endpoints:
                    blocked.append(logical)
            elif isinstance(subnet, str):
                ec2 = clients("ec2")
                tables = _route_tables(ec2, subnet)
                out = any(
                    r.get("DestinationCidrBlock") == "0.0.0.0/0"
                    and (r.get("NatGatewayId") or str(r.get("GatewayId", "")).startswith("igw-"))
                    for t in tables
                    for r in t.get("Routes") or []
                )
                if not out:
                    vpc = next((t.get("VpcId") for t in tables if t.get("VpcId")), None)
                    services = {
                        _endpoint_service(str(e.get("ServiceName", "")))
                        for e in _pages(
                            ec2.describe_vpc_endpoints,
                            "VpcEndpoints",
                            Filters=[{"Name": "vpc-id", "Values": [vpc or ""]}],
                        )
                    }
                    if not set(ENDPOINT_SERVICES) <= services:
                        blocked.append(subnet)
            else:
                unknown.append(str(subnet)[:80])
        if blocked:
            findings.append(
                Finding(
                    "pull path",
                    name,
                    "problem",
                    f"subnets {', '.join(blocked)} have no NAT or internet route, and the VPC no endpoints for "
                    f"{', '.join(ENDPOINT_SERVICES)}: no image is pulled",
                    "give the VPC a NAT gateway, or interface endpoints for ecr.api, ecr.dkr and logs and a gateway "
                    "endpoint for s3",
                )
            )
        elif unknown or not subnets:
            findings.append(
                Finding("pull path", name, "unknown", "its subnets are not in the template nor named by id")
            )
        else:
            findings.append(
                Finding("pull path", name, "ok", "every subnet reaches the registries (a route out, or the endpoints)")
            )
    return findings


def _needed_roles(app: _App) -> list[str]:
    kinds = {"ecs"} if app.model.capacities or app.model.services else set()
    for capacity in app.model.capacities.values():
        if capacity.kind == "auto-scaling":
            kinds.add("auto-scaling")
    if any(n.purchase == "Spot" for n in app.quotas.needs):
        kinds.add("spot")
    if any(n.kind == "AWS Batch" for n in app.quotas.needs):
        kinds.add("batch")
    return [k for k in SERVICE_LINKED_ROLES if k in kinds]


def _roles(app: _App, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    from botocore.exceptions import ClientError

    iam = clients("iam")
    findings = []
    for kind in _needed_roles(app):
        role, service = SERVICE_LINKED_ROLES[kind]
        try:
            iam.get_role(RoleName=role)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise
            findings.append(
                Finding(
                    "service-linked role",
                    role,
                    "problem",
                    "absent: AWS creates it at first use only if the deploying role may iam:CreateServiceLinkedRole",
                    f"aws iam create-service-linked-role --aws-service-name {service}",
                )
            )
            continue
        findings.append(Finding("service-linked role", role, "ok", "present"))
    return findings


def _bootstrap(app: _App, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    wanted: dict[str, int] = {}
    for manifest in app.manifests:
        for artifact in (manifest.get("artifacts") or {}).values():
            properties = artifact.get("properties") if isinstance(artifact, dict) else None
            if not isinstance(properties, dict):
                continue
            version, parameter = (
                properties.get("requiresBootstrapStackVersion"),
                properties.get("bootstrapStackVersionSsmParameter"),
            )
            if isinstance(version, int) and isinstance(parameter, str):
                wanted[parameter] = max(version, wanted.get(parameter, 0))
    findings = []
    for parameter, version in sorted(wanted.items()):
        answer = clients("ssm").get_parameters(Names=[parameter])
        values = [p.get("Value") for p in answer.get("Parameters") or [] if isinstance(p, dict)]
        have = int(str(values[0])) if values and str(values[0]).isdigit() else None
        if have is None and parameter not in (answer.get("InvalidParameters") or []):
            findings.append(Finding("bootstrap", parameter, "unknown", "the answer holds no version and no refusal"))
        elif have is None:
            findings.append(
                Finding(
                    "bootstrap",
                    parameter,
                    "problem",
                    "the account and Region are not bootstrapped for the CDK",
                    "cdk bootstrap aws://<account>/<region>",
                )
            )
        elif have < version:
            findings.append(
                Finding(
                    "bootstrap",
                    parameter,
                    "problem",
                    f"version {have}, the assembly requires {version}",
                    "cdk bootstrap aws://<account>/<region> (with the CLI the app uses)",
                )
            )
        else:
            findings.append(Finding("bootstrap", parameter, "ok", f"version {have}, the assembly requires {version}"))
    return findings


_RUN: dict[str, tuple[str, Callable[[_App, Callable[[str], Any], datetime], list[Finding]]]] = {
    "quota": ("servicequotas:GetServiceQuota", _quota),
    "zones": ("ec2:DescribeInstanceTypeOfferings", _zones),
    "reservation": ("ec2:DescribeCapacityReservations", _reservation),
    "ami": ("ssm:GetParameters", _ami),
    "image": ("ecr:DescribeImages", _image),
    "pull path": ("ec2:DescribeRouteTables", _pull_path),
    "service-linked role": ("iam:GetRole", _roles),
    "bootstrap": ("ssm:GetParameters", _bootstrap),
}


def _manifests(paths: Sequence[str]) -> list[dict[str, Any]]:
    found = []
    for path in paths:
        manifest = Path(path) / "manifest.json"
        if Path(path).is_dir() and manifest.is_file() and manifest.stat().st_size < 16 << 20:
            try:
                loaded = json.loads(manifest.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(loaded, dict):
                found.append(loaded)
    return found


def run_doctor(
    paths: Sequence[str],
    clients: Callable[[str], Any],
    *,
    region: str,
    deadline_s: float = DEADLINE_S,
    progress: Callable[[str], None] = lambda _: None,
    now: datetime | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Report:
    """Every check of the templates ``paths`` name against the account and ``region`` the boto3 clients
    ``clients(service)`` reach, within ``deadline_s`` seconds."""
    loaded, paths_of, unreadable = read_app(paths)
    report = Report(unreadable=unreadable)
    if not loaded:
        return report
    app = _App(
        app_model(loaded, construct_paths=paths_of),
        quota_templates(loaded, construct_paths=paths_of),
        _manifests(paths),
        region,
    )
    started, moment = clock(), now or datetime.now(UTC)
    for check in CHECKS:
        action, run = _RUN[check]
        if clock() - started > deadline_s:
            report.findings.append(
                Finding(check, "-", "unknown", f"not run: the run passed its {deadline_s:g} s deadline")
            )
            continue
        progress(check)
        try:
            report.findings += run(app, clients, moment)
        except Exception as error:
            sentence = _error_sentence(error, action)
            if sentence is None:
                raise
            report.findings.append(Finding(check, "-", "unknown", sentence))
    return report
