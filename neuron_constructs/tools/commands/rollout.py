"""``neuron-ecs rollout status|approve|rollback SERVICE_OR_STACK``: where a model's deployment stands, and a person's
answer to a paused one.

``SERVICE_OR_STACK`` is a service ARN (``arn:aws:ecs:...:service/CLUSTER/NAME``), ``CLUSTER/NAME``, a service name
with ``--cluster``, or the name of a deployed stack, whose ``AWS::ECS::Service`` resources are read from
CloudFormation (``ListStackResources``, at most :data:`MAX_STACK_PAGES` pages). For each service the command reads its
newest service deployment (``ListServiceDeployments``, ``DescribeServiceDeployments``):

* ``status`` prints the deployment's status and lifecycle stage, its strategy and bake time, when it started and last
  changed, each lifecycle hook (a pause waiting for an answer with its id and when it times out, and what happens
  then), the deployment alarms (those in alarm by name), the circuit breaker and a rollback under way.
* ``approve`` continues every deployment paused at an approval (``ContinueServiceDeployment`` CONTINUE on the hook
  whose status is ``AWAITING_ACTION``).
* ``rollback`` rolls a paused deployment back (``ContinueServiceDeployment`` ROLLBACK) and one in progress without a
  pause (``StopServiceDeployment`` ROLLBACK, which ECS takes "even if you didn't configure the service deployment for
  the rollback option").

Exit status: 0 when it printed or did what was asked, 3 when there was nothing to approve or roll back (no
deployment, one that ended or is already rolling back, or one in progress at no pause: the sentence says which, and
what to run instead), 2 for a stack without an ECS service, 1 for an AWS error. On a stack of several services each is
answered and its sentence printed before the next, an AWS error on one said and the others still answered; a rollback
there stops only deployments paused at an approval, unless the service is named.

Sources: ECS API reference (botocore 1.44.8): ``ListServiceDeployments``, ``DescribeServiceDeployments``
(``ServiceDeployment``: ``status``, ``lifecycleStage``, ``lifecycleHookDetails``, ``alarms``, ``rollback``),
``ContinueServiceDeployment``, ``StopServiceDeployment``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from neuron_constructs.tools.commands.aws import _explain, _region, _session
from neuron_constructs.tools.commands.output import (
    EXIT_AWS_ERROR,
    EXIT_CONFLICT,
    EXIT_OK,
    _Output,
    _print_json,
    _UsageError,
)

__all__ = ["IN_PROGRESS", "MAX_STACK_PAGES", "ServiceTarget", "act", "describe", "find_services"]

MAX_STACK_PAGES = 20
"""The most pages of a stack's resources read (100 resources a page)."""
IN_PROGRESS = ("PENDING", "IN_PROGRESS")
"""Deployment statuses a person can still continue or roll back."""
WINDING_DOWN = ("ROLLBACK_REQUESTED", "ROLLBACK_IN_PROGRESS", "STOP_REQUESTED")
"""Deployment statuses already on their way back or to a stop."""
MAX_DEPLOYMENT_PAGES = 10
"""The most pages of a service's deployments read (100 a page), looking for the newest."""
_SERVICE_ARN_PARTS = 3  # service/CLUSTER/NAME


@dataclass(frozen=True)
class ServiceTarget:
    """A service to read: its ARN or name, and its cluster (``None``: the default cluster, or the one in the ARN)."""

    service: str
    cluster: str | None = None

    @property
    def shown(self) -> str:
        name = self.service.rsplit("/", 1)[-1]
        return f"{self.cluster.rsplit('/', 1)[-1]}/{name}" if self.cluster else name


def _from_arn(value: str) -> ServiceTarget | None:
    if not value.startswith("arn:"):
        return None
    resource = value.split(":", 5)[-1]
    parts = resource.split("/")
    if len(parts) == _SERVICE_ARN_PARTS and parts[0] == "service":
        return ServiceTarget(value, parts[1])
    return ServiceTarget(value)


def find_services(cloudformation: Any, given: str, cluster: str | None) -> list[ServiceTarget]:
    """The services ``given`` names: an ARN, ``CLUSTER/NAME``, a name with ``cluster``, or a stack's services."""
    from_arn = _from_arn(given)
    if from_arn is not None:
        return [from_arn]
    if cluster is not None:
        return [ServiceTarget(given, cluster)]
    if given.count("/") == 1:
        cluster_name, name = given.split("/")
        return [ServiceTarget(name, cluster_name)]
    found: list[ServiceTarget] = []
    token: str | None = None
    for _ in range(MAX_STACK_PAGES):
        page = cloudformation.list_stack_resources(StackName=given, **({"NextToken": token} if token else {}))
        for resource in page.get("StackResourceSummaries") or []:
            physical = resource.get("PhysicalResourceId")
            if resource.get("ResourceType") == "AWS::ECS::Service" and isinstance(physical, str) and physical:
                found.append(_from_arn(physical) or ServiceTarget(physical))
        token = page.get("NextToken")
        if not token:
            break
    if not found:
        raise _UsageError(
            f"stack {given!r} has no ECS service (pass a service ARN, CLUSTER/SERVICE, or a service with --cluster)"
        )
    return found


def _time(value: Any) -> str:
    if not isinstance(value, datetime):
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _ago(value: Any, now: datetime) -> str:
    if not isinstance(value, datetime):
        return ""
    seconds = (now - value.astimezone(UTC)).total_seconds()
    word = "ago" if seconds >= 0 else "from now"
    minutes = abs(seconds) / 60
    shown = f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
    return f" ({shown} {word})"


def describe(ecs: Any, target: ServiceTarget) -> dict[str, Any] | None:
    """The newest service deployment of ``target``, or ``None`` when it has none."""
    options: dict[str, Any] = {"service": target.service, "maxResults": 100}
    if target.cluster:
        options["cluster"] = target.cluster
    briefs: list[Any] = []
    for _ in range(MAX_DEPLOYMENT_PAGES):  # the API names no order: read them all, within a bound
        page = ecs.list_service_deployments(**options)
        briefs += page.get("serviceDeployments") or []
        if not page.get("nextToken"):
            break
        options["nextToken"] = page["nextToken"]
    dated = [b for b in briefs if isinstance(b, dict) and b.get("serviceDeploymentArn")]
    if not dated:
        return None
    newest = max(dated, key=lambda b: b.get("createdAt") or b.get("startedAt") or datetime.min.replace(tzinfo=UTC))
    answer = ecs.describe_service_deployments(serviceDeploymentArns=[newest["serviceDeploymentArn"]])
    deployments = answer.get("serviceDeployments") or []
    return deployments[0] if deployments else None


def _paused(deployment: Mapping[str, Any]) -> list[dict[str, Any]]:
    hooks = deployment.get("lifecycleHookDetails") or []
    return [
        h
        for h in hooks
        if isinstance(h, dict) and h.get("targetType") == "PAUSE" and h.get("status") == "AWAITING_ACTION"
    ]


def status_lines(target: ServiceTarget, deployment: Mapping[str, Any] | None, now: datetime) -> list[str]:
    """What ``status`` prints for one service."""
    lines = [f"service     {target.shown}"]
    if deployment is None:
        return [*lines, "  no service deployment: the service was never deployed, or ECS keeps none of it"]
    config = deployment.get("deploymentConfiguration") or {}
    strategy = str(config.get("strategy") or "ROLLING")
    bake = config.get("bakeTimeInMinutes")
    status = str(deployment.get("status"))
    stage = deployment.get("lifecycleStage")
    lines.append(
        f"  deployment {deployment.get('serviceDeploymentArn')}: {status}"
        + (f", stage {stage}" if stage else "")
        + f"; {strategy}"
        + (f", bake {bake} min" if bake is not None and strategy != "ROLLING" else "")
    )
    started = deployment.get("startedAt") or deployment.get("createdAt")
    lines.append(f"  started    {_time(started)}{_ago(started, now)}")
    if deployment.get("finishedAt") or deployment.get("stoppedAt"):
        ended = deployment.get("finishedAt") or deployment.get("stoppedAt")
        lines.append(f"  ended      {_time(ended)}{_ago(ended, now)}")
    elif deployment.get("updatedAt"):
        lines.append(f"  changed    {_time(deployment['updatedAt'])}{_ago(deployment['updatedAt'], now)}")
    if stage == "BAKE_TIME" and bake is not None:
        lines.append(
            f"  bake       blue is kept {bake} min after the last traffic shift, then stopped; a deployment alarm "
            "rolls back until then"
        )
    if deployment.get("statusReason"):
        lines.append(f"  reason     {deployment['statusReason']}")
    for hook in deployment.get("lifecycleHookDetails") or []:
        if not isinstance(hook, dict):
            continue
        kind = "approval (pause)" if hook.get("targetType") == "PAUSE" else f"Lambda {hook.get('targetArn') or ''}"
        then = f", then {hook['timeoutAction']}" if hook.get("timeoutAction") else ""
        expires = (
            f"; times out {_time(hook['expiresAt'])}{_ago(hook['expiresAt'], now)}{then}"
            if hook.get("expiresAt")
            else ""
        )
        lines.append(f"  hook       {kind.strip()}: {hook.get('status')}{expires} [id {hook.get('hookId')}]")
    alarms = deployment.get("alarms") or {}
    if alarms:
        names = alarms.get("alarmNames") or []
        triggered = alarms.get("triggeredAlarmNames") or []
        lines.append(
            f"  alarms     {alarms.get('status')}: {len(names)} watched"
            + (f"; in alarm: {', '.join(map(str, triggered))}" if triggered else "; none in alarm")
        )
    breaker = deployment.get("deploymentCircuitBreaker") or {}
    if breaker:
        lines.append(
            f"  breaker    {breaker.get('status')}: {breaker.get('failureCount', 0)} of "
            f"{breaker.get('threshold', '?')} failed tasks"
        )
    rollback = deployment.get("rollback") or {}
    if rollback:
        lines.append(f"  rollback   {rollback.get('reason') or 'under way'} (since {_time(rollback.get('startedAt'))})")
    if _paused(deployment):
        lines.append("  next       neuron-ecs rollout approve ... (or rollback ...)")
    return lines


def act(
    ecs: Any, action: str, target: ServiceTarget, deployment: Mapping[str, Any] | None, *, stop_running: bool = True
) -> tuple[bool, str]:
    """``approve`` or ``rollback`` ``target``'s ``deployment``: whether it acted, and the sentence saying what it did
    or why it did nothing. ``stop_running``: a rollback may stop a deployment in progress that waits for no one (the
    service was named, or is its stack's only one)."""
    if deployment is None:
        return False, f"{target.shown}: no service deployment to {action}"
    arn = str(deployment.get("serviceDeploymentArn"))
    status = str(deployment.get("status"))
    paused = _paused(deployment) if status in IN_PROGRESS else []
    if paused:
        hook_id = paused[0].get("hookId")
        if not isinstance(hook_id, str) or not hook_id:
            return False, f"{target.shown}: ECS shows a paused approval without its hook id; nothing was answered"
        answer = "CONTINUE" if action == "approve" else "ROLLBACK"
        ecs.continue_service_deployment(serviceDeploymentArn=arn, hookId=hook_id, action=answer)
        done = "continued past" if action == "approve" else "rolled back at"
        return True, f"{target.shown}: {done} the approval at {deployment.get('lifecycleStage')} ({arn})"
    if status in WINDING_DOWN:
        return False, f"{target.shown}: the deployment is already {status}: nothing to {action}"
    if status not in IN_PROGRESS:
        ended = _time(deployment.get("finishedAt") or deployment.get("stoppedAt"))
        fix = (
            "deploy the previous version again (cdk deploy of it) to go back"
            if action == "rollback"
            else "nothing waits for an approval"
        )
        return False, f"{target.shown}: the newest deployment ended {status} at {ended}: {fix}"
    if action == "approve":
        return False, (
            f"{target.shown}: the deployment is {status} at stage {deployment.get('lifecycleStage')}, with no "
            "approval waiting: it goes on by itself (neuron-ecs rollout status shows where)"
        )
    if not stop_running:
        return False, (
            f"{target.shown}: the deployment is {status} at stage {deployment.get('lifecycleStage')} with no approval "
            "waiting; the stack holds several services, so name this one (CLUSTER/SERVICE) to roll it back"
        )
    ecs.stop_service_deployment(serviceDeploymentArn=arn, stopType="ROLLBACK")
    return True, f"{target.shown}: rollback asked of the deployment in progress ({arn})"


def _plain(value: Any) -> Any:
    """``value`` with its times as ISO 8601 text, for JSON."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _rollout(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.inspection import client_config

    session = _session(args)
    _region(session)
    cloudformation = session.client("cloudformation", endpoint_url=args.endpoint_url, config=client_config())
    ecs = session.client("ecs", endpoint_url=args.endpoint_url, config=client_config())
    targets = find_services(cloudformation, args.target, args.cluster)
    now = datetime.now(UTC)
    if args.action == "status":
        read = [(t, describe(ecs, t)) for t in targets]
        if args.json:
            _print_json([{"service": t.shown, "deployment": _plain(d)} for t, d in read], out)
        else:
            for target, deployment in read:
                for line in status_lines(target, deployment, now):
                    out.line(line)
        return EXIT_OK
    named = _from_arn(args.target) is not None or args.cluster is not None or args.target.count("/") == 1
    results: list[dict[str, Any]] = []
    for target in targets:  # each answered and said before the next: an error later leaves the earlier on record
        try:
            acted, said = act(ecs, args.action, target, describe(ecs, target), stop_running=named or len(targets) == 1)
        except Exception as error:
            sentence = _explain(error, "rollout", args)
            if sentence is None:
                raise
            acted, said, failed = False, f"{target.shown}: {sentence}", True
        else:
            failed = False
        results.append({"service": target.shown, "acted": acted, "said": said, "failed": failed})
        if not args.json:
            out.line(said)
    if args.json:
        _print_json(results, out)
    if any(r["failed"] for r in results):
        return EXIT_AWS_ERROR
    return EXIT_OK if any(r["acted"] for r in results) else EXIT_CONFLICT


def add_parser(commands: Any, aws_options: Any) -> None:
    """The ``rollout`` command's arguments."""
    rollout = commands.add_parser(
        "rollout",
        help="where a service's deployment stands (stage, bake, hooks, alarms), and approve or roll back a paused one",
    )
    rollout.add_argument("action", choices=("status", "approve", "rollback"), help="what to do")
    rollout.add_argument(
        "target",
        metavar="SERVICE_OR_STACK",
        help="a service ARN, CLUSTER/SERVICE, a service name with --cluster, or a deployed stack's name",
    )
    rollout.add_argument("--cluster", help="the service's cluster, for a service given by name")
    aws_options(rollout)
