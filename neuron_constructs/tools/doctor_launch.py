"""``neuron-ecs doctor``'s launch checks: the AMI parameters, private images, the pull path from the capacities'
subnets, the service-linked roles and the CDK bootstrap version (:mod:`neuron_constructs.tools.doctor` says what each
reads)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from neuron_constructs.tools.doctor_capacity import capacity_subnets
from neuron_constructs.tools.doctor_findings import CheckedApp, Finding, error_sentence, pages, properties_of, ref_of

__all__ = [
    "ENDPOINT_SERVICES",
    "SERVICE_LINKED_ROLES",
    "check_ami",
    "check_bootstrap",
    "check_image",
    "check_pull_path",
    "check_roles",
]

SERVICE_LINKED_ROLES = {
    "ecs": ("AWSServiceRoleForECS", "ecs.amazonaws.com"),
    "auto-scaling": ("AWSServiceRoleForAutoScaling", "autoscaling.amazonaws.com"),
    "spot": ("AWSServiceRoleForEC2Spot", "spot.amazonaws.com"),
    "batch": ("AWSServiceRoleForBatch", "batch.amazonaws.com"),
}
"""Role name and AWS service name of each service-linked role a kind of capacity needs."""
ENDPOINT_SERVICES = ("ecr.api", "ecr.dkr", "s3", "logs", "ecs", "ecs-agent", "ecs-telemetry")
"""The VPC endpoints a subnet without a NAT or internet route needs to pull an image and write its logs."""


def check_ami(app: CheckedApp, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
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
            text = part if isinstance(part, str) else pseudo.get(ref_of(part) or "")
            if text is None:
                return None
            parts.append(text)
        return str(join[0]).join(parts)
    return None


def _images(app: CheckedApp, region: str) -> list[tuple[str, str, str, str]]:
    """Each private ECR image of the task definitions: (image, registry account, repository, tag)."""
    found = set()
    for resource in app.model.resources.values():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::ECS::TaskDefinition":
            continue
        for container in properties_of(resource).get("ContainerDefinitions") or []:
            image = _text(
                container.get("Image") if isinstance(container, dict) else None, region, "aws", "amazonaws.com"
            )
            if not image or ".dkr.ecr." not in image or "@" in image:
                continue
            host, _, rest = image.partition("/")
            repository, _, tag = rest.rpartition(":") if ":" in rest else (rest, "", "latest")
            found.add((image, host.split(".", 1)[0], repository, tag))
    return sorted(found)


def check_image(app: CheckedApp, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    ecr = clients("ecr")
    findings = []
    for image, account, repository, tag in _images(app, app.region):
        registry_region = image.split(".dkr.ecr.", 1)[1].split(".", 1)[0] if ".dkr.ecr." in image else app.region
        if registry_region != app.region:
            findings.append(
                Finding("image", image, "unknown", f"a registry in {registry_region}: doctor reads {app.region}'s")
            )
            continue
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
            sentence = error_sentence(error, "ecr:DescribeImages")
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


def _template_routes(app: CheckedApp) -> tuple[dict[str, str], set[str], set[str]]:
    """The template's subnets' route table, the route tables with a NAT or internet route, and the VPC endpoint
    services it makes."""
    table_of: dict[str, str] = {}
    routed: set[str] = set()
    endpoints: set[str] = set()
    for resource in app.model.resources.values():
        kind = resource.get("Type") if isinstance(resource, dict) else None
        properties = properties_of(resource)
        if kind == "AWS::EC2::SubnetRouteTableAssociation":
            subnet, table = ref_of(properties.get("SubnetId")), ref_of(properties.get("RouteTableId"))
            if subnet and table:
                table_of[subnet] = table
        elif kind == "AWS::EC2::Route" and properties.get("DestinationCidrBlock") == "0.0.0.0/0":
            table = ref_of(properties.get("RouteTableId"))
            if table and (properties.get("NatGatewayId") or properties.get("GatewayId")):
                routed.add(table)
        elif kind == "AWS::EC2::VPCEndpoint":
            service = _endpoint_service(_text(properties.get("ServiceName"), "region", "aws", "amazonaws.com") or "")
            if service is not None:
                endpoints.add(service)
    return table_of, routed, endpoints


def _route_out(route: Any) -> bool:
    """An active default route through a NAT gateway, a NAT instance, a transit gateway or an internet gateway (the
    last reaches the registries only from an instance with a public address, which is not read here)."""
    if not isinstance(route, dict) or route.get("DestinationCidrBlock") != "0.0.0.0/0":
        return False
    if route.get("State", "active") != "active":  # a blackhole: its NAT gateway or instance is gone
        return False
    through = ("NatGatewayId", "TransitGatewayId", "InstanceId", "NetworkInterfaceId")
    return any(route.get(k) for k in through) or str(route.get("GatewayId", "")).startswith("igw-")


def _endpoint_service(name: str) -> str | None:
    """Which of :data:`ENDPOINT_SERVICES` a VPC endpoint's service name (``com.amazonaws.<region>.ecr.api``) is."""
    return next((s for s in ENDPOINT_SERVICES if name.endswith(f".{s}")), None)


def _route_tables(ec2: Any, subnet: str) -> list[dict[str, Any]]:
    """The route table a subnet named by id uses: its own association, else its VPC's main table (a subnet with no
    association of its own uses the main one, which the subnet-id filter does not return)."""
    own = list(
        pages(ec2.describe_route_tables, "RouteTables", Filters=[{"Name": "association.subnet-id", "Values": [subnet]}])
    )
    if own:
        return own
    vpcs = [s.get("VpcId") for s in pages(ec2.describe_subnets, "Subnets", SubnetIds=[subnet])]
    filters = [{"Name": "vpc-id", "Values": [v for v in vpcs if v]}, {"Name": "association.main", "Values": ["true"]}]
    return list(pages(ec2.describe_route_tables, "RouteTables", Filters=filters)) if any(vpcs) else []


def check_pull_path(app: CheckedApp, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
    table_of, routed, endpoints = _template_routes(app)
    findings = []
    for name, _, subnets, _ in capacity_subnets(app):
        blocked, unknown = [], []
        for subnet in subnets:
            logical = ref_of(subnet)
            if logical is not None:
                if table_of.get(logical) not in routed and not set(ENDPOINT_SERVICES) <= endpoints:
                    blocked.append(logical)
            elif isinstance(subnet, str):
                ec2 = clients("ec2")
                tables = _route_tables(ec2, subnet)
                out = any(_route_out(r) for t in tables for r in t.get("Routes") or [])
                if not out:
                    vpc = next((t.get("VpcId") for t in tables if t.get("VpcId")), None)
                    services = {
                        _endpoint_service(str(e.get("ServiceName", "")))
                        for e in pages(
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
                    "give the VPC a NAT gateway, or interface endpoints for ecr.api, ecr.dkr, logs, ecs, ecs-agent and "
                    "ecs-telemetry and a gateway endpoint for s3",
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


def _needed_roles(app: CheckedApp) -> list[str]:
    kinds = {"ecs"} if app.model.capacities or app.model.services else set()
    for capacity in app.model.capacities.values():
        if capacity.kind == "auto-scaling":
            kinds.add("auto-scaling")
    if any(n.purchase == "Spot" for n in app.quotas.needs):
        kinds.add("spot")
    if any(n.kind == "AWS Batch" for n in app.quotas.needs):
        kinds.add("batch")
    return [k for k in SERVICE_LINKED_ROLES if k in kinds]


def check_roles(app: CheckedApp, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
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


def check_bootstrap(app: CheckedApp, clients: Callable[[str], Any], now: datetime) -> list[Finding]:
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
