"""``neuron-ecs precompile``: submit a synthesized model's precompile job (the AWS Batch job ``Precompile`` made) and
wait for it, printing each state it reaches.

For a team's pipeline: fill a model's compile cache before a deployment, or again after a change that the
deployment itself would not compile for. The command reads the synthesized templates (a ``*.template.json``, or
every one of a ``cdk.out`` directory), finds the precompile job definitions and queues by their ``aws:cdk:path``
(``<model>/Precompile/JobDefinition`` and ``<model>/Precompile/Queue``), picks the model's (``--model``, the construct
path; needed when the template holds several), asks CloudFormation for their physical ids in the deployed stack
(``DescribeStackResource``; the stack is ``--stack``, default the file name of the template that holds the job, without
``.template.json``),
submits the job (``batch:SubmitJob``) and reads its state (``batch:DescribeJobs``) every ``--poll`` seconds until it
ends or ``--timeout`` passes.

Exit status: 0 when the job succeeded, 3 when it failed (its status reason printed) or did not end within
``--timeout``, 2 for a template with no precompile job or an ambiguous ``--model``, 1 for an AWS error. No construct is
imported: the command reads templates and calls AWS only.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.tools.commands.aws import _region, _session
from neuron_constructs.tools.commands.output import EXIT_CONFLICT, EXIT_OK, _Output, _print_json, _UsageError

__all__ = ["ENDED", "PrecompileTarget", "find_targets", "submit_and_wait"]

ENDED = ("SUCCEEDED", "FAILED")
_DEFINITION = re.compile(r"^(?P<model>.+)/Precompile/JobDefinition(?:/Resource)?$")
_QUEUE = re.compile(r"^(?P<model>.+)/Precompile/Queue(?:/Resource)?$")
_JOB_NAME = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class PrecompileTarget:
    """A model's precompile job in a template: the model's construct path and the logical ids of its job definition
    and job queue."""

    model: str
    job_definition: str
    job_queue: str


def _paths(template: dict[str, Any], kind: str) -> dict[str, str]:
    """Logical id -> ``aws:cdk:path`` of the resources of ``kind``."""
    found: dict[str, str] = {}
    for logical_id, resource in (template.get("Resources") or {}).items():
        if isinstance(resource, dict) and resource.get("Type") == kind:
            path = (resource.get("Metadata") or {}).get("aws:cdk:path")
            if isinstance(path, str):
                found[logical_id] = path
    return found


def find_targets(template: dict[str, Any]) -> list[PrecompileTarget]:
    """Every precompile job of ``template``, by model."""
    queues: dict[str, str] = {}
    for logical_id, path in _paths(template, "AWS::Batch::JobQueue").items():
        match = _QUEUE.match(path)
        if match:
            queues[match["model"]] = logical_id
    targets = []
    for logical_id, path in _paths(template, "AWS::Batch::JobDefinition").items():
        match = _DEFINITION.match(path)
        if match and match["model"] in queues:
            targets.append(PrecompileTarget(match["model"], logical_id, queues[match["model"]]))
    return sorted(targets, key=lambda t: t.model)


def _template_files(given: str) -> list[Path]:
    """``given``, or the ``*.template.json`` of the cloud assembly directory ``given``."""
    path = Path(given)
    if path.is_dir():
        files = sorted(path.glob("*.template.json"))
        if not files:
            raise _UsageError(f"{given} holds no *.template.json (give a cdk.out or a template)")
        return files
    return [path]


def _targets_of(files: list[Path]) -> list[tuple[PrecompileTarget, Path]]:
    """Every precompile job of ``files``, with the template that holds it."""
    from neuron_constructs.checks.template_loading import TemplateError, load_template

    found: list[tuple[PrecompileTarget, Path]] = []
    for file in files:
        try:
            template = load_template(file).template
        except (TemplateError, OSError) as error:
            raise _UsageError(f"{file}: {error}") from None
        found.extend((target, file) for target in find_targets(template))
    return found


def _choose(
    targets: list[tuple[PrecompileTarget, Path]], model: str | None, source: str
) -> tuple[PrecompileTarget, Path]:
    if not targets:
        raise _UsageError(
            f"{source} has no precompile job (NeuronService(precompile=...) makes one; the command finds it by the "
            "aws:cdk:path metadata cdk synth writes)"
        )
    models = ", ".join(t.model for t, _ in targets)
    if model is not None:
        chosen = [(t, f) for t, f in targets if t.model == model or t.model.endswith(f"/{model}")]
        if len(chosen) != 1:
            raise _UsageError(f"--model {model!r} names {len(chosen)} of the models {models}")
        return chosen[0]
    if len(targets) > 1:
        raise _UsageError(f"{source} precompiles {models}: pass --model")
    return targets[0]


def _physical_id(cloudformation: Any, stack: str, logical_id: str) -> str:
    answer = cloudformation.describe_stack_resource(StackName=stack, LogicalResourceId=logical_id)
    return str(answer["StackResourceDetail"]["PhysicalResourceId"])


def submit_and_wait(
    batch: Any,
    *,
    job_queue: str,
    job_definition: str,
    model: str,
    poll_s: float,
    timeout_s: float,
    report: Callable[[str, dict[str, Any]], None],
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Submit the job and read its state until it ends or ``timeout_s`` passes; ``report`` gets each new status with
    the job's description. Returns the last description (``status`` ``TIMED_OUT`` when it did not end in time)."""
    name = _JOB_NAME.sub("-", f"precompile-{model}").strip("-_")[:128]
    submitted = batch.submit_job(jobName=name, jobQueue=job_queue, jobDefinition=job_definition)
    job_id = str(submitted["jobId"])
    started = clock()
    last: dict[str, Any] = {"jobId": job_id, "jobName": name, "status": "SUBMITTED"}
    report("SUBMITTED", last)
    seen = "SUBMITTED"
    while True:
        jobs = batch.describe_jobs(jobs=[job_id]).get("jobs") or []
        if jobs:
            last = jobs[0]
            status = str(last.get("status"))
            if status != seen:
                seen = status
                report(status, last)
            if status in ENDED:
                return last
        if clock() - started >= timeout_s:
            return {**last, "status": "TIMED_OUT"}
        sleep(poll_s)


def _precompile(args: argparse.Namespace, out: _Output) -> int:
    target, file = _choose(_targets_of(_template_files(args.template)), args.model, args.template)
    stack = args.stack or file.name.removesuffix(".template.json")
    from neuron_constructs.tools.inspection import client_config

    session = _session(args)
    _region(session)
    cloudformation = session.client("cloudformation", endpoint_url=args.endpoint_url, config=client_config())
    batch = session.client("batch", endpoint_url=args.endpoint_url, config=client_config())
    job_queue = _physical_id(cloudformation, stack, target.job_queue)
    job_definition = _physical_id(cloudformation, stack, target.job_definition)
    began = time.monotonic()

    def report(status: str, job: dict[str, Any]) -> None:
        if args.json:
            return
        reason = f": {job['statusReason']}" if job.get("statusReason") else ""
        out.line(
            f"{time.monotonic() - began:6.0f} s  {terminal_safe(target.model)}  job {terminal_safe(job['jobId'])}  "
            f"{terminal_safe(status)}{terminal_safe(reason)}"
        )

    job = submit_and_wait(
        batch,
        job_queue=job_queue,
        job_definition=job_definition,
        model=target.model,
        poll_s=args.poll,
        timeout_s=args.timeout,
        report=report,
    )
    status = str(job.get("status"))
    if args.json:
        _print_json(
            {
                "model": target.model,
                "stack": stack,
                "jobQueue": job_queue,
                "jobDefinition": job_definition,
                "jobId": job.get("jobId"),
                "status": status,
                "statusReason": job.get("statusReason"),
            },
            out,
        )
    elif status == "TIMED_OUT":
        out.line(f"the job did not end within {args.timeout:g} s; it goes on running (aws batch describe-jobs)")
    return EXIT_OK if status == "SUCCEEDED" else EXIT_CONFLICT
