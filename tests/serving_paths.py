"""Read from a synthesized template what a load balancer can reach, and what a deployment leaves serving.

No AWS CDK involved: the functions walk CloudFormation the way EC2, Elastic Load Balancing and ECS
read it, so the tests prove behaviour from the template rather than from the constructs' intent.

* :func:`paths` lists, for every ECS service registered with a target group, the security groups
  of the load balancer(s) in front of it, the groups its tasks sit behind (awsvpc: the service's
  own; bridge and host: the instances' launch template's or Managed Instances' groups) and the
  ports its tasks listen on (awsvpc and host: the container port; bridge: the host port, or the ECS
  dynamic range for ``hostPort`` 0).
* :func:`allowed` answers whether EC2 lets traffic from one group to another on a port range, with
  both the source's egress and the destination's ingress (a group with no egress rule at all keeps
  EC2's default allow-all egress; CloudFormation removes it once any egress rule exists).
* :func:`serving_during_deployments` simulates CloudFormation updating every service of a logical
  service (the services sharing a target group), in ``DependsOn`` order, and returns the fewest
  tasks left running.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DYNAMIC_PORTS = (32768, 65535)
"""What ECS may pick for a bridge ``hostPort`` 0: the kernel's ephemeral range or 49153-65535."""


@dataclass(frozen=True)
class Path:
    service: str
    target_group: str
    load_balancer_groups: tuple[str, ...]
    task_groups: tuple[str, ...]
    ports: tuple[int, int]


def _id(value: Any) -> str | None:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` names."""
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _forwarded(action: dict[str, Any]) -> list[str]:
    groups = [_id(action.get("TargetGroupArn"))]
    groups += [_id(g.get("TargetGroupArn")) for g in action.get("ForwardConfig", {}).get("TargetGroups", [])]
    return [g for g in groups if g]


def load_balancer_groups(template: dict[str, Any], target_group: str) -> tuple[str, ...]:
    """The security groups of every load balancer with a listener (or listener rule) forwarding to ``target_group``."""
    resources = template["Resources"]
    listeners = {
        k
        for k, v in _of_type(template, "AWS::ElasticLoadBalancingV2::Listener").items()
        if any(target_group in _forwarded(a) for a in v["Properties"].get("DefaultActions", []))
    }
    listeners |= {
        str(_id(v["Properties"]["ListenerArn"]))
        for v in _of_type(template, "AWS::ElasticLoadBalancingV2::ListenerRule").values()
        if any(target_group in _forwarded(a) for a in v["Properties"].get("Actions", []))
    }
    groups: list[str] = []
    for listener in sorted(listeners):
        balancer = resources[str(_id(resources[listener]["Properties"]["LoadBalancerArn"]))]
        groups += [str(_id(g)) for g in balancer["Properties"].get("SecurityGroups", [])]
    return tuple(groups)


def capacity_groups(template: dict[str, Any], service: dict[str, Any]) -> tuple[str, ...]:
    resources = template["Resources"]
    groups: list[str] = []
    for item in service["Properties"].get("CapacityProviderStrategy", []):
        provider = resources[str(_id(item["CapacityProvider"]))]["Properties"]
        if "AutoScalingGroupProvider" in provider:
            group = resources[str(_id(provider["AutoScalingGroupProvider"]["AutoScalingGroupArn"]))]
            template_id = str(_id(group["Properties"]["LaunchTemplate"]["LaunchTemplateId"]))
            data = resources[template_id]["Properties"]["LaunchTemplateData"]
            groups += [str(_id(g)) for g in data.get("SecurityGroupIds", [])]
        else:
            network = provider["ManagedInstancesProvider"]["InstanceLaunchTemplate"]["NetworkConfiguration"]
            groups += [str(_id(g)) for g in network.get("SecurityGroups", [])]
    return tuple(groups)


def paths(template: dict[str, Any]) -> list[Path]:
    """Every (service, target group) pair of the template, with who must reach whom on which ports."""
    resources = template["Resources"]
    found = []
    for name, service in sorted(_of_type(template, "AWS::ECS::Service").items()):
        for registration in service["Properties"].get("LoadBalancers", []):
            task = resources[str(_id(service["Properties"]["TaskDefinition"]))]["Properties"]
            mode = task.get("NetworkMode", "bridge")
            container = next(c for c in task["ContainerDefinitions"] if c["Name"] == registration["ContainerName"])
            port = int(registration["ContainerPort"])
            mapping = next(m for m in container.get("PortMappings", []) if int(m["ContainerPort"]) == port)
            if mode == "awsvpc":
                network = service["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]
                task_groups = tuple(str(_id(g)) for g in network.get("SecurityGroups", []))
                ports = (port, port)
            else:
                task_groups = capacity_groups(template, service)
                host = int(mapping.get("HostPort", 0))
                ports = (port, port) if mode == "host" else (host, host) if host else DYNAMIC_PORTS
            target_group = str(_id(registration["TargetGroupArn"]))
            found.append(Path(name, target_group, load_balancer_groups(template, target_group), task_groups, ports))
    return found


def _rules(template: dict[str, Any], group: str, direction: str) -> list[dict[str, Any]] | None:
    """The ingress or egress rules of ``group`` (inline and separate resources); ``None``: EC2's allow-all egress."""
    resources = template["Resources"]
    inline = resources[group]["Properties"].get(f"SecurityGroup{direction}")
    kind = f"AWS::EC2::SecurityGroup{direction}"
    separate = [v["Properties"] for v in _of_type(template, kind).values() if _id(v["Properties"]["GroupId"]) == group]
    if direction == "Egress" and inline is None and not separate:
        return None
    return [*(inline or []), *separate]


def _covers(rule: dict[str, Any], ports: tuple[int, int]) -> bool:
    if str(rule.get("IpProtocol")) == "-1":
        return True
    return rule.get("IpProtocol") == "tcp" and rule["FromPort"] <= ports[0] and ports[1] <= rule["ToPort"]


def allowed(template: dict[str, Any], source: str, destination: str, ports: tuple[int, int]) -> bool:
    """Whether EC2 lets TCP traffic from group ``source`` to group ``destination`` on every port of ``ports``."""
    egress = _rules(template, source, "Egress")
    out = egress is None or any(
        _covers(r, ports)
        and (_id(r.get("DestinationSecurityGroupId")) == destination or r.get("CidrIp") == "0.0.0.0/0")
        for r in egress
    )
    inbound = any(
        _covers(r, ports) and _id(r.get("SourceSecurityGroupId")) == source
        for r in _rules(template, destination, "Ingress") or []
    )
    return out and inbound


def ingress(template: dict[str, Any], group: str) -> list[dict[str, Any]]:
    return _rules(template, group, "Ingress") or []


def egress(template: dict[str, Any], group: str) -> list[dict[str, Any]] | None:
    return _rules(template, group, "Egress")


def _waves(services: dict[str, dict[str, Any]]) -> list[list[str]]:
    """The services in the order CloudFormation can update them: each wave depends only on earlier ones."""
    left, done, waves = dict(services), set(), []
    while left:
        wave = sorted(n for n, s in left.items() if not (set(_depends_on(s)) & set(left)))
        assert wave, "a dependency cycle"
        waves.append(wave)
        done.update(wave)
        for n in wave:
            del left[n]
    return waves


def _depends_on(resource: dict[str, Any]) -> list[str]:
    depends = resource.get("DependsOn", [])
    return [depends] if isinstance(depends, str) else list(depends)


def serving_during_deployments(template: dict[str, Any], services: list[str]) -> int:
    """The fewest tasks of ``services`` left running while CloudFormation deploys a change to all of them.

    Services of one wave deploy at once; a deploying service keeps ``ceil(desired * minimumHealthyPercent
    / 100)`` tasks running (ECS rounds up), the others keep all of theirs.
    """
    resources = {n: template["Resources"][n] for n in services}
    desired = {n: int(r["Properties"].get("DesiredCount", 1)) for n, r in resources.items()}
    minimum = {
        n: math.ceil(desired[n] * int(r["Properties"]["DeploymentConfiguration"]["MinimumHealthyPercent"]) / 100)
        for n, r in resources.items()
    }
    return min(sum(minimum[n] if n in wave else desired[n] for n in services) for wave in _waves(resources))
