"""``neuron-ecs doctor``: what would stop an app's Neuron capacity starting in one account and Region, found before
the deploy with read-only calls, each check answered ``ok``, ``problem`` (with the fix) or ``unknown`` (with the
permission it lacked, or why).

The checks, against what the templates will launch:

* **quota**: each Inf and Trn vCPU quota, On-Demand and Spot (Service Quotas ``GetServiceQuota``,
  :mod:`neuron_constructs.knowledge.quotas`), against the vCPUs the capacities need at a rollout's peak
  (:mod:`neuron_constructs.tools.quota_planning`);
* **zones**: each capacity's instance types offered in the zones of its subnets, compared by zone ID
  (``DescribeInstanceTypeOfferings`` by ``availability-zone-id``; zone names map to IDs per account,
  ``DescribeAvailabilityZones``; a subnet the template makes in ``Fn::Select`` of ``Fn::GetAZs`` is in the zones
  CloudFormation lists, in alphabetical order: those with a default subnet, or every zone when none has one,
  ``DescribeSubnets``);
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

Bounded: one deadline for the whole run (a check still waiting on a slow answer then is ``unknown``, and the checks
after it are not run), every paginated call capped,
each client with the command line's timeouts and retries (throttling retried with backoff); an AWS error is a
sentence on the check it stopped, never a traceback. Every call is one of
:data:`~neuron_constructs.knowledge.doctor_permissions.DOCTOR_PERMISSIONS`.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from neuron_constructs.tools.doctor_capacity import check_quota, check_reservation, check_zones
from neuron_constructs.tools.doctor_findings import CheckedApp, Finding, Report, error_sentence
from neuron_constructs.tools.doctor_launch import check_ami, check_bootstrap, check_image, check_pull_path, check_roles
from neuron_constructs.tools.planning import app_model, read_app
from neuron_constructs.tools.quota_planning import quota_templates

__all__ = ["CHECKS", "DEADLINE_S", "Finding", "Report", "run_doctor"]

DEADLINE_S = 120.0
"""The whole run's deadline, by default."""
CHECKS = ("quota", "zones", "reservation", "ami", "image", "pull path", "service-linked role", "bootstrap")
"""The checks, in the order they run."""


_RUN: dict[str, tuple[str, Callable[[CheckedApp, Callable[[str], Any], datetime], list[Finding]]]] = {
    "quota": ("servicequotas:GetServiceQuota", check_quota),
    "zones": ("ec2:DescribeInstanceTypeOfferings", check_zones),
    "reservation": ("ec2:DescribeCapacityReservations", check_reservation),
    "ami": ("ssm:GetParameters", check_ami),
    "image": ("ecr:DescribeImages", check_image),
    "pull path": ("ec2:DescribeRouteTables", check_pull_path),
    "service-linked role": ("iam:GetRole", check_roles),
    "bootstrap": ("ssm:GetParameters", check_bootstrap),
}


def _within(seconds: float, work: Callable[[], list[Finding]]) -> list[Finding] | BaseException | None:
    """``work()``'s findings, or the exception it raised, if it ends within ``seconds``; ``None`` otherwise.

    botocore's timeouts bound each read of a socket, not an answer: an endpoint that sends a byte every few seconds
    holds a call for as long as it likes. So each check runs in a daemon thread, joined on the monotonic clock, and
    one that does not end in time is left to end with the process."""
    outcome: list[list[Finding] | BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as error:  # handed to the caller, which answers with a sentence
            outcome.append(error)

    worker = threading.Thread(target=run, name="neuron-ecs-doctor", daemon=True)
    worker.start()
    worker.join(seconds)
    return outcome[0] if outcome else None


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
    app = CheckedApp(
        app_model(loaded, construct_paths=paths_of),
        quota_templates(loaded, construct_paths=paths_of),
        _manifests(paths),
        region,
    )
    started, moment = clock(), now or datetime.now(UTC)
    for check in CHECKS:
        action, run = _RUN[check]
        left = deadline_s - (clock() - started)
        if left <= 0:
            report.findings.append(
                Finding(check, "-", "unknown", f"not run: the run passed its {deadline_s:g} s deadline")
            )
            continue
        progress(check)
        outcome = _within(left, functools.partial(run, app, clients, moment))
        if outcome is None:
            report.findings.append(
                Finding(
                    check, "-", "unknown", f"did not finish within the {deadline_s:g} s deadline: {action} was slow"
                )
            )
        elif isinstance(outcome, BaseException):
            sentence = error_sentence(outcome, action)
            if sentence is None:
                raise outcome
            report.findings.append(Finding(check, "-", "unknown", sentence))
        elif outcome:
            report.findings += outcome
        else:
            report.findings.append(Finding(check, "-", "ok", "nothing of the kind in these templates"))
    return report
