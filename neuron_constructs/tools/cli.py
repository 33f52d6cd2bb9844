"""``neuron-ecs``: the instance catalog, the recommended Neuron AMI, and where every Neuron device went.

Commands::

    neuron-ecs catalog [--json]
    neuron-ecs ami [--releases [--limit N]] [--region R] [--deadline SECONDS] [--json]
    neuron-ecs inspect --cluster NAME [--metrics] [--region R] [--json]
    neuron-ecs lint TEMPLATE_OR_DIR... [--json | --format parseable] [--ignore RULE]...
    neuron-ecs plan TEMPLATE_OR_DIR... [--rollout | --fetches] [--json]
    neuron-ecs digests [--endpoint-url URL] [--deadline SECONDS] [--json]

Exit status: 0 clean, 3 when ``inspect`` finds a NeuronCore held by two tasks on one instance,
``lint`` finds an error, ``plan`` holds a NeuronCore twice (with ``--rollout``: or a rollout's peak does
not fit its capacity, or ECS refuses its configuration) or ``digests`` finds a pinned tag that moved,
2 for usage errors (a malformed ``--region`` or ``--endpoint-url`` included), 1 when AWS or a
registry cannot answer (the message says why, in a sentence), 130 on Ctrl-C. Calls to AWS give up on
an endpoint that does not answer within about 30 s (5 s to connect, 10 s to read, 3 attempts); a
long ``inspect`` prints progress on stderr; ``ami --releases`` reads at most 40 pages within 60 s and says when
it stopped early; ``ami`` ends within one deadline for the whole command (120 s, ``--deadline``), and
``digests`` within one for the whole run (30 s, ``--deadline``); ``lint`` and ``plan`` read any file within 2 s
and 256 MB and answer a sentence, never a traceback. Tables are aligned text; on a terminal the headers are bold and
findings coloured (unless ``NO_COLOR`` is set); piped output is plain, and a closed pipe
(``| head``) keeps the exit status. ``catalog``, ``lint`` and ``plan`` import neither boto3 nor the
AWS CDK.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any

from neuron_constructs.checks.terminal import terminal_safe

if TYPE_CHECKING:
    from neuron_constructs.tools.inspection import ClusterInspection, ContainerInstance
    from neuron_constructs.tools.rollout_result import RolloutResult

__all__ = ["EXIT_AWS_ERROR", "EXIT_CONFLICT", "EXIT_OK", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_AWS_ERROR = 1
EXIT_USAGE = 2
EXIT_CONFLICT = 3

_REQUIRED_PERMISSIONS = {
    "inspect": "ecs:ListContainerInstances, ecs:DescribeContainerInstances, ecs:ListTasks, ecs:DescribeTasks "
    "and ecs:DescribeTaskDefinition",
    "ami": "ssm:GetParameters and ssm:GetParametersByPath on the public /aws/service/ecs/* parameters",
}
_FINDING_COLOURS = {"conflict": "31", "missing-device": "31", "malformed": "31", "unregistered": "33", "idle": "33"}
_REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+)+-\d+$")
EXIT_INTERRUPTED = 130
_PROGRESS_AFTER_S = 2.0


_SGR = re.compile(r"(\x1b\[[0-9;]*m)")
"""A Select Graphic Rendition sequence (bold, a colour, reset): the only escape the command line writes itself."""


class _Output:
    """Plain text, or bold headers and coloured findings on a terminal.

    Once the reader closes the pipe (``| head``), further lines are dropped: the command still
    finishes and returns its exit status. Whatever is written, no control character but the newline reaches the
    stream raw (:func:`~neuron_constructs.checks.terminal.terminal_safe`), nor any escape sequence but the colours
    and bold of :meth:`style` on a terminal; the commands also escape each untrusted value where they print it, so
    that a value cannot forge a line or a colour either.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.styled = stream.isatty() and not os.environ.get("NO_COLOR")
        self.closed = False

    def style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.styled else text

    def line(self, text: str = "") -> None:
        self.write(text + "\n")

    def write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.stream.write(self.safe(text))
            self.stream.flush()
        except BrokenPipeError:
            self.closed = True

    def safe(self, text: str) -> str:
        """``text`` with every control character but the newline escaped, the colours of :meth:`style` kept on a
        terminal."""
        parts = _SGR.split(text) if self.styled else [text]
        return "".join(
            part if index % 2 else "\n".join(terminal_safe(line) for line in part.split("\n"))
            for index, part in enumerate(parts)
        )

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
        rows = [tuple(terminal_safe(c) for c in r) for r in rows]  # cells hold what AWS, registries, templates said
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
        self.line(self.style("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(), "1"))
        for row in rows:
            self.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _compact(ids: Iterable[str]) -> str:
    """``0-3, 6`` for device ids that are indices; the ids as given otherwise; ``-`` for none."""
    from neuron_constructs.knowledge.devices import device_index, format_index_runs

    ids = list(ids)
    indices = [device_index(i) for i in ids]
    if not ids:
        return "-"
    if any(i is None for i in indices):
        return ", ".join(ids)
    return format_index_runs(i for i in indices if i is not None)


def _print_json(document: Any, out: _Output) -> None:
    out.line(json.dumps(document, indent=2, sort_keys=False))


# --- catalog -------------------------------------------------------------------------------------


def _catalog(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.knowledge.catalog import NeuronInstanceType
    from neuron_constructs.tools.tables import CATALOG_HEADERS, catalog_rows

    if args.json:
        _print_json([entry.to_json() for entry in NeuronInstanceType.all()], out)
    else:
        out.table(CATALOG_HEADERS, catalog_rows())
    return EXIT_OK


# --- ami -----------------------------------------------------------------------------------------


def _session(args: argparse.Namespace) -> Any:
    """A boto3 session in ``--region``, else ``AWS_REGION`` (as the AWS CLI reads it), else the SDK's default."""
    import boto3

    return boto3.Session(region_name=args.region or os.environ.get("AWS_REGION") or None)


def _region(session: Any) -> str:
    from botocore.exceptions import NoRegionError

    if not session.region_name:
        raise NoRegionError()
    return str(session.region_name)


def _ami(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.knowledge.ami import NEURON_AMI_PARAMETER_PATH, resolve_neuron_ami
    from neuron_constructs.tools.inspection import client_config

    session = _session(args)
    region = _region(session)
    ssm = session.client("ssm", endpoint_url=args.endpoint_url, config=client_config())
    if args.releases:
        return _ami_releases(ssm, region, args, out)
    ami = resolve_neuron_ami(ssm, region)
    if args.json:
        _print_json(ami.to_json(), out)
        return EXIT_OK
    out.line(f"{out.style('ECS-optimized Amazon Linux 2023 Neuron AMI', '1')} in {terminal_safe(region)}")
    out.line(f"  image id   {terminal_safe(ami.image_id)}")
    for key, value in ami.details.items():
        if key != "image_id":
            key, value = terminal_safe(key), terminal_safe(value)
            out.line(f"  {key:<10} {value}" if len(key) <= 10 else f"  {key}: {value}")
    if ami.parse_error:
        out.line(out.style(f"  note: {terminal_safe(ami.parse_error)}", "33"))
        out.line(out.style(f"  the image id above is from {NEURON_AMI_PARAMETER_PATH}/image_id", "33"))
    return EXIT_OK


AMI_DEADLINE_S = 120.0
"""How long ``ami`` may take in all, every call and retry together (``--deadline``): ``--releases`` stops asking for
pages after 60 s (``MAX_RELEASE_SECONDS``), and its last call gives up within about 30 s."""


def _ami_within_deadline(args: argparse.Namespace, out: _Output) -> int:
    """``ami`` under one deadline on the monotonic clock, whatever the endpoint does.

    botocore's timeouts bound each read of a socket, not an answer: an endpoint that sends a byte every few seconds
    holds a call forever. So the command runs in a worker thread whose output is held back; once ``--deadline``
    seconds have passed (``Thread.join`` waits on the monotonic clock) the command prints one sentence and exits 1,
    leaving the worker, a daemon thread, to end with the process."""
    import io
    import threading

    deadline = args.deadline or AMI_DEADLINE_S
    held = _Output(io.StringIO())
    held.styled = out.styled
    outcome: list[int | BaseException] = []

    def work() -> None:
        try:
            outcome.append(_ami(args, held))
        except BaseException as error:  # handed to the main thread, which answers with a sentence
            outcome.append(error)

    worker = threading.Thread(target=work, name="neuron-ecs-ami", daemon=True)
    worker.start()
    worker.join(deadline)
    if not outcome:
        endpoint = args.endpoint_url or "the SSM endpoint of the region"
        args.stderr.write(
            f"neuron-ecs ami: {terminal_safe(endpoint)} did not finish answering within the {deadline:g} s the command "
            "may take: check the network, the region or --endpoint-url\n"
        )
        return EXIT_AWS_ERROR
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    assert isinstance(held.stream, io.StringIO)
    out.write(held.stream.getvalue())
    return outcome[0]


def _release_limit(text: str) -> int:
    if not text.isdigit() or int(text) > 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count from 0 to 10000")
    return int(text)


def _printable(value: object, limit: int = 40) -> str:
    """A value from a parameter, as a table cell: at most ``limit`` characters of it, control characters escaped
    (:func:`~neuron_constructs.checks.terminal.terminal_safe`), ``?`` if none."""
    if value is None or value == "":
        return "?"
    return terminal_safe(value, limit=limit - 3) if len(str(value)) > limit else terminal_safe(value)


AMI_RELEASE_HEADERS = ("release", "image id", "ECS agent", "kernel", "Neuron driver", "pin it with")


def _release_driver(release: str) -> str:
    """The Neuron driver of AMI ``release`` as the library derives it from the release's date
    (:func:`~neuron_constructs.knowledge.neuron_releases.ami_driver`: ``2.31``, ``2.31 or 2.30`` near a driver
    release, ``2.31 or later`` where it is a floor, ``unknown``), the driver NEURON088 checks images against."""
    from neuron_constructs.knowledge.neuron_releases import ami_driver

    try:
        return ami_driver(release).describe()
    except ValueError:
        return "unknown"


def _ami_releases(ssm: Any, region: str, args: argparse.Namespace, out: _Output) -> int:
    """``ami --releases``: the region's releases of the ECS AL2023 Neuron AMI, newest first."""
    from neuron_constructs.knowledge.ami import NEURON_AMI_RELEASES_PATH, AmiNotPublishedError, list_neuron_ami_releases

    releases, note = list_neuron_ami_releases(ssm)
    if not releases and note is None:
        raise AmiNotPublishedError(region)
    shown = releases[: args.limit] if args.limit else releases
    if args.json:
        _print_json(
            {
                "region": region,
                "path": NEURON_AMI_RELEASES_PATH,
                "releases": [{**r.to_json(), "neuron_driver": _release_driver(r.release)} for r in shown],
                "note": note,
            },
            out,
        )
        return EXIT_OK
    title = out.style("ECS-optimized Amazon Linux 2023 Neuron AMI releases", "1")
    out.line(f"{title} in {terminal_safe(region)}, newest first")
    out.table(
        AMI_RELEASE_HEADERS,
        [
            (
                r.release,
                _printable(r.image_id),
                _printable(r.details.get("ecs_agent_version")),
                r.kernel,
                _release_driver(r.release),
                f"NeuronAmi.release({r.release!r}{'' if r.kernel == '6.1' else f', kernel={r.kernel!r}'})",
            )
            for r in shown
        ],
    )
    if len(shown) < len(releases):
        out.line(f"{len(releases) - len(shown)} older releases not shown (--limit 0 shows every one)")
    from neuron_constructs.knowledge.neuron_releases import INF1_AMI_DRIVER, INF1_DOWNGRADE_FROM

    out.line(
        "Neuron driver: derived from the release's date and the Neuron release table (knowledge.neuron_releases); "
        "'or later' is a floor (a newer release's driver is in no source); on Inf1, releases from "
        f"{INF1_DOWNGRADE_FROM.isoformat()} run driver {'.'.join(map(str, INF1_AMI_DRIVER))}"
    )
    if note:
        out.line(out.style(f"note: {terminal_safe(note)}", "33"))
    return EXIT_OK


# --- inspect -------------------------------------------------------------------------------------


class _Progress:
    """A progress line on stderr once an inspection has run for a while, at most once a second."""

    def __init__(self, stream: IO[str], *, after_s: float | None = None) -> None:
        self.stream = stream
        self.terminal = stream.isatty()
        self.started = time.monotonic()
        self.after_s = _PROGRESS_AFTER_S if after_s is None else after_s
        self.shown = 0.0
        self.last = ""

    def __call__(self, message: str) -> None:
        now = time.monotonic()
        if now - self.started < self.after_s or (self.shown and now - self.shown < 1.0):
            return
        self.shown, self.last = now, message
        end = "" if self.terminal else "\n"
        prefix = "\r\033[K" if self.terminal else ""
        self.stream.write(f"{prefix}neuron-ecs inspect: {terminal_safe(message)}{end}")
        self.stream.flush()

    def done(self) -> None:
        if self.terminal and self.last:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _inspect(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.inspection import ecs_client, inspect_cluster

    session = _session(args)
    _region(session)
    client = ecs_client(session=session, region=session.region_name, endpoint_url=args.endpoint_url)
    progress = _Progress(args.stderr)
    try:
        inspection = inspect_cluster(client, args.cluster, progress=progress)
    finally:
        progress.done()
    utilization: dict[str, float | None] | None = None
    per_task: dict[str, float | None] | None = None
    if args.metrics:
        from neuron_constructs.tools.inspection import client_config
        from neuron_constructs.tools.utilization import model_utilization, neuroncore_utilization

        cloudwatch = session.client("cloudwatch", endpoint_url=args.endpoint_url, config=client_config())
        ids = [i.ec2_instance_id for i in inspection.container_instances if i.ec2_instance_id]
        utilization = neuroncore_utilization(cloudwatch, args.cluster, ids)
        placed = _task_models(inspection)
        by_model = model_utilization(cloudwatch, args.cluster, list(placed.values()))
        per_task = {task: by_model[where] for task, where in placed.items()}
    if args.json:
        document = inspection.to_json()
        if utilization is not None:
            document["neuroncore_utilization"] = utilization
        if per_task is not None:
            document["task_neuroncore_utilization"] = per_task
        _print_json(document, out)
    else:
        _print_inspection(inspection, out, utilization=utilization, per_task=per_task)
    return EXIT_CONFLICT if inspection.has_conflict else EXIT_OK


def _task_models(inspection: ClusterInspection) -> dict[str, tuple[str, str]]:
    """Task ARN -> (its model, its EC2 instance id), for each task whose Neuron containers are tagged."""
    instances = {i.arn: i.ec2_instance_id for i in inspection.container_instances}
    placed = {}
    for task in inspection.tasks:
        instance = instances.get(task.container_instance_arn or "")
        if task.model and instance:
            placed[task.arn] = (task.model, instance)
    return placed


def _print_inspection(
    inspection: ClusterInspection,
    out: _Output,
    *,
    utilization: dict[str, float | None] | None = None,
    per_task: dict[str, float | None] | None = None,
) -> None:
    instances = {i.arn: i for i in inspection.container_instances}
    out.line(
        f"{out.style('Cluster ' + terminal_safe(inspection.cluster), '1')}: {len(instances)} container instances, "
        f"{len(inspection.tasks)} tasks"
    )
    out.line()
    if not instances:
        out.line("No container instances (capacity providers launch them when tasks need them).")
    else:
        _instance_table(inspection, out)
    out.line()
    _task_table(inspection, instances, out, per_task=per_task)
    if instances:
        from neuron_constructs.tools.device_map import CONFLICT, IDLE, render_device_map

        out.line()
        legend = f"(a cell per NeuronCore, a group per device: a letter per holder, {CONFLICT} held twice, {IDLE} idle)"
        out.line(f"{out.style('NeuronCores per instance', '1')} {legend}")
        for line in render_device_map(inspection, styled=out.styled, utilization=utilization):
            out.line(line)
    out.line()
    if not inspection.findings:
        out.line("No findings: no NeuronCore is held twice, every task's devices exist, nothing idle.")
    for finding in inspection.findings:
        kind = out.style(finding.kind, _FINDING_COLOURS.get(finding.kind, "0"))
        out.line(f"{kind}: {terminal_safe(finding.message)}")


def _instance_table(inspection: ClusterInspection, out: _Output) -> None:
    out.table(
        ("CONTAINER INSTANCE", "EC2 INSTANCE", "TYPE", "NEURON DEVICES REGISTERED", "REMAINING"),
        (
            (
                i.arn.rsplit("/", 1)[-1],
                i.ec2_instance_id or "-",
                i.instance_type or "-",
                _compact(i.neuron_devices.registered),
                _compact(i.neuron_devices.remaining),
            )
            for i in inspection.container_instances
        ),
    )


def _task_table(
    inspection: ClusterInspection,
    instances: dict[str, ContainerInstance],
    out: _Output,
    *,
    per_task: dict[str, float | None] | None = None,
) -> None:
    """A row per container: its task, where it runs, its Neuron devices and model; with ``per_task`` (``--metrics``)
    the model's NeuronCore utilization on that instance."""
    if not inspection.tasks:
        out.line("No running tasks.")
        return
    rows: list[tuple[str, ...]] = []
    for task in inspection.tasks:
        instance = instances.get(task.container_instance_arn or "")
        where = (instance.ec2_instance_id if instance else None) or (task.container_instance_arn or "-").rsplit("/")[-1]
        for container in task.containers or ():
            if container.neuron_device_ids:
                devices = f"neuronDeviceIds {_compact(container.neuron_device_ids)}"
            elif container.device_paths:
                devices = f"/dev/neuron {_compact(container.device_paths)} (mapped)"
            else:
                devices = "-"
            row = [
                task.arn.rsplit("/", 1)[-1],
                task.task_definition.rsplit("/", 1)[-1],
                where,
                container.name,
                devices,
                container.model or "-",
            ]
            if per_task is not None:
                value = per_task.get(task.arn) if container.model else None
                row.append("-" if value is None else f"{value:.1f}")
            rows.append(tuple(row))
    header = ("TASK", "TASK DEFINITION", "ON", "CONTAINER", "NEURON DEVICES", "MODEL")
    out.table((*header, "CORE UTIL %") if per_task is not None else header, rows)


# --- lint ----------------------------------------------------------------------------------------


def _lint(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.checks.lint import lint_paths, write_findings, write_rules

    if args.list_rules:
        write_rules(out)
        return EXIT_OK
    if not args.templates:
        raise _UsageError("lint needs at least one template file or directory")
    result = lint_paths(args.templates, ignore=args.ignore)
    write_findings(result.findings, out, form="json" if args.json else args.format)
    for problem in result.unreadable:
        args.stderr.write(f"neuron-ecs lint: {terminal_safe(problem)}\n")
    if not args.quiet:
        # After text findings on stdout; on stderr when stdout is JSON or one finding a line for a parser.
        summary = f"neuron-ecs lint: {result.summary()}\n"
        if args.json or args.format == "parseable":
            args.stderr.write(summary)
        else:
            out.write(summary)
    if result.unreadable:
        return EXIT_USAGE
    return EXIT_CONFLICT if any(f.finding.severity == "error" for f in result.findings) else EXIT_OK


# --- plan ----------------------------------------------------------------------------------------


def _plan(args: argparse.Namespace, out: _Output) -> int:
    if args.rollout:
        return _plan_rollout(args, out)
    from neuron_constructs.tools.planning import plan_paths

    result = plan_paths(args.templates)
    for problem in result.unreadable:
        args.stderr.write(f"neuron-ecs plan: {terminal_safe(problem)}\n")
    if getattr(args, "fetches", False):
        if args.json:
            _print_json({"fetches": [f.to_json() for f in result.fetches], "unreadable": result.unreadable}, out)
        else:
            _print_fetches(result.fetches, out)
        return EXIT_USAGE if result.unreadable else EXIT_OK
    if args.json:
        _print_json(result.to_json(), out)
    else:
        _print_plan(result.layouts, out)
    if result.unreadable:
        return EXIT_USAGE
    return EXIT_CONFLICT if result.holds_a_core_twice else EXIT_OK


def _print_fetches(fetches: Sequence[Any], out: _Output) -> None:
    if not fetches:
        out.line("No Neuron capacity in these templates, so nothing a new instance fetches.")
        return
    out.line(out.style("What a new instance fetches before its tasks start", "1"))
    for fetch in fetches:
        out.line()
        if fetch.kind == "managed-instances":
            kept = (
                ("never" if fetch.scale_in_after == -1 else f"{fetch.scale_in_after} s")
                if fetch.scale_in_after is not None
                else "ECS's default"
            )
            how = f"Managed Instances: a new instance fetches all of it; an idle one is kept {kept} and holds it"
        elif fetch.warm_pool is None:
            how = "no warm pool: a new instance pulls and copies all of it"
        else:
            how = f"warm pool of at least {fetch.warm_pool}: fetched at warm-up, before the instance is stopped"
        out.line(f"{fetch.capacity} ({how})")
        room = fetch.room
        sizes = {(f.kind, f.what): f for f in room.fetched} if room is not None else {}
        for kind, items in (("image", fetch.images), ("artifacts", fetch.artifacts)):
            for item in items:
                known = sizes.get((kind, item))
                size = f"  [{known.describe().removeprefix(item).strip(' ()')}]" if known is not None else ""
                out.line(f"  {kind:<9} {item}{size}")
        if not fetch.images and not fetch.artifacts:
            out.line("  nothing: no service of these templates lands on it")
        if room is not None:
            verdict = "fits" if room.fits else f"does NOT fit: needs root_volume_gib={room.needed_gib} or more"
            out.line(
                f"  root volume: {room.root_volume_gib} GiB; the AMI ({room.ami_gib} GiB) and the known sizes take "
                f"{room.known_gib:.1f} GiB on disk: {verdict}"
            )
            if room.unknown:
                out.line(
                    f"  sizes unknown for {len(room.unknown)} of {len(room.fetched)}: state image_size_gib= where the "
                    "container is added and ModelArtifacts(size_gib=) to count them"
                )


def _print_plan(layouts: Sequence[Any], out: _Output) -> None:
    from neuron_constructs.tools.device_map import CONFLICT, IDLE, render_layouts

    if not layouts:
        out.line(
            "No Neuron capacity in these templates: no Auto Scaling group of one Neuron instance type, and no "
            "Managed Instances capacity running a task that asks for NeuronDevice."
        )
        return
    legend = f"(a cell per NeuronCore, a group per device: a letter per service, {CONFLICT} held twice, {IDLE} idle)"
    out.line(f"{out.style('NeuronCores per planned instance', '1')} {legend}")
    for layout in layouts:
        out.line()
        for line in render_layouts([layout], styled=out.styled):
            out.line(line)
    out.line()
    idle_chips = sum(len(layout.idle_chips) for layout in layouts)
    idle_cores = sum(len(layout.idle_cores) for layout in layouts)
    twice = sum(len(layout.conflicts) for layout in layouts)

    def count(number: int, noun: str) -> str:
        return f"{number} {noun}{'' if number == 1 else 's'}"

    instances = count(len(layouts), "planned instance")
    out.line(f"Idle on {instances}: {count(idle_chips, 'chip')}, {count(idle_cores, 'NeuronCore')}.")
    if twice:
        out.line(
            out.style(f"{twice} NeuronCore{'s' if twice != 1 else ''} held twice", "31")
            + f" (marked {CONFLICT}): give the services disjoint devices or NEURON_RT_VISIBLE_CORES, or run them "
            "on different capacities."
        )
    else:
        out.line("No NeuronCore is held twice.")


def _plan_rollout(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.rollout_planning import rollout_paths

    result = rollout_paths(args.templates)
    for problem in result.unreadable:
        args.stderr.write(f"neuron-ecs plan: {terminal_safe(problem)}\n")
    if args.json:
        _print_json(result.to_json(), out)
    else:
        _print_rollout(result, out)
    if result.unreadable:
        return EXIT_USAGE
    return EXIT_CONFLICT if result.holds_a_core_twice or result.does_not_fit else EXIT_OK


_VERDICT_COLOURS: dict[bool | None, str] = {True: "32", False: "31", None: "33"}
"""A peak that fits green, one that does not red, one nothing in the template bounds yellow."""


def _print_rollout(result: RolloutResult, out: _Output) -> None:
    from neuron_constructs.tools.device_map import CONFLICT, IDLE, render_layouts

    if not result.layouts:
        out.line("No Neuron capacity in these templates, so no rollout to plan.")
        return
    legend = (
        f"(a cell per NeuronCore, a group per device: a letter per copy, {CONFLICT} held twice, {IDLE} idle; blue: "
        "the copies running now, green: the new revision's)"
    )
    out.line(f"{out.style('NeuronCores at the peak of every rollout', '1')} {legend}")
    for layout in result.layouts:
        out.line()
        for line in render_layouts([layout], styled=out.styled):
            out.line(line)
    out.line()
    out.line(out.style("Rollouts", "1"))
    for service in result.services:
        if service.fleet is not None and service.room is not None and not (service.problems or service.unknown):
            continue  # said with its fleet model
        out.line(f"  {service.name} on {service.capacity} ({service.instance_type})")
        if service.timeline:
            out.line(f"    {service.timeline}")
        for sentence in (*service.unknown, *service.problems):
            colour = "31" if sentence in service.problems else "33"
            out.line("    " + out.style(sentence, colour))
        if service.room is not None:
            from neuron_constructs.tools.rollout_result import Peak

            out.line(f"    peak: {Peak.of(service.room).text()}")
            if service.green_instances:
                out.line(f"    green on {_instances_text(service.green_instances)}")
            colour = _VERDICT_COLOURS[service.fits]
            out.line("    " + out.style(service.verdict, colour))
    for fleet in result.fleets:
        copies = sum(len(stage) for stage in fleet.stages)
        out.line(f"  fleet model {fleet.name} on {fleet.capacity} ({fleet.instance_type}): {copies} copies")
        for number, stage in enumerate(fleet.stages, 1):
            copies_text = ", ".join(name.removeprefix(fleet.name + "/").removesuffix("/Service") for name in stage)
            out.line(f"    stage {number}: {copies_text}")
        if fleet.peak is None:
            out.line("    " + out.style("peak unknown: a copy cannot be sized, or the peak is too large to draw", "33"))
            continue
        if fleet.peak_is_steady_state:
            out.line(f"    peak = steady state (copy by copy, rolling at most 100 %): {fleet.peak.text()}")
        else:
            out.line(f"    steady state: {fleet.steady.text() if fleet.steady else 'unknown'}")
            for number, peak in enumerate(fleet.stage_peaks, 1):
                out.line(f"    peak of stage {number}: {peak.text()}")
        colour = _VERDICT_COLOURS[fleet.fits]
        out.line("    " + out.style(fleet.verdict, colour))
    for capacity in result.capacities:
        if capacity.rollouts > 1:
            colour = "32" if capacity.fits else "33"
            out.line("  " + out.style(capacity.text, colour))
    if result.holds_a_core_twice:
        out.line(out.style("A NeuronCore is held twice (marked !)", "31") + ": see the drawing.")


def _instances_text(numbers: Sequence[int]) -> str:
    from neuron_constructs.knowledge.devices import format_index_runs

    return f"instance{'s' if len(numbers) > 1 else ''} {format_index_runs(numbers)}"


class _UsageError(ValueError):
    """A usage error found after parsing (exit status 2)."""


# --- errors --------------------------------------------------------------------------------------


def _explain(error: BaseException, command: str, args: argparse.Namespace) -> str | None:
    """A sentence for an AWS error, or ``None`` if ``error`` is not one."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ReadTimeoutError,
    )

    from neuron_constructs.knowledge.ami import AmiNotPublishedError, NotSsmAnswerError
    from neuron_constructs.tools.inspection import (
        CONNECT_TIMEOUT_S,
        MAX_ATTEMPTS,
        READ_TIMEOUT_S,
        UnexpectedResponseError,
    )

    region = (
        getattr(args, "region", None)
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or "your region"
    )
    if isinstance(error, AmiNotPublishedError):
        return str(error)
    if isinstance(error, UnexpectedResponseError | NotSsmAnswerError):
        return f"The endpoint answered, but {error}: check --endpoint-url and any proxy in between."
    if isinstance(error, ReadTimeoutError | ConnectTimeoutError):
        waited = CONNECT_TIMEOUT_S if isinstance(error, ConnectTimeoutError) else READ_TIMEOUT_S
        return (
            f"{error.kwargs.get('endpoint_url')} did not answer within {waited} s, {MAX_ATTEMPTS} times: "
            "check the network, the region or --endpoint-url."
        )
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return (
            "No AWS credentials were found: set AWS_PROFILE (and run aws sso login if it uses SSO), "
            "or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."
        )
    if isinstance(error, NoRegionError):
        return "No AWS region is set: pass --region or set AWS_REGION."
    if isinstance(error, EndpointConnectionError):
        return (
            f"Could not connect to {error.kwargs.get('endpoint_url')}: check the region, the network or --endpoint-url."
        )
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", "")
        operation = error.operation_name
        if code == "ClusterNotFoundException":
            return (
                f"Cluster {getattr(args, 'cluster', None)!r} was not found in {region}: check the name and region "
                f"(aws ecs list-clusters --region {region})."
            )
        if "AccessDenied" in code or code in ("UnauthorizedOperation", "UnrecognizedClientException"):
            return (
                f"Access denied for {operation} in {region}: neuron-ecs {command} needs "
                f"{_REQUIRED_PERMISSIONS.get(command, 'permission for it')}. AWS said: {message}"
            )
        if code in ("ExpiredTokenException", "ExpiredToken", "InvalidClientTokenId"):
            return f"Your AWS credentials were refused ({code}): refresh them and try again."
        if code in ("ThrottlingException", "TooManyRequestsException"):
            return f"AWS kept throttling {operation} after retries: try again in a minute."
        return f"AWS refused {operation} in {region} ({code}): {message}"
    if isinstance(error, BotoCoreError):
        return f"The AWS SDK could not complete the request: {error}"
    return None


# --- digests -------------------------------------------------------------------------------------


def _digests(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.digests import DEADLINE_S, DigestLookupError, check_library_images

    try:
        found = check_library_images(endpoint_url=args.endpoint_url, deadline_s=args.deadline or DEADLINE_S)
    except DigestLookupError as error:
        args.stderr.write(f"neuron-ecs digests: {terminal_safe(error)}\n")
        return EXIT_AWS_ERROR
    if args.json:
        _print_json({"images": [d.to_json() for d in found]}, out)
    else:
        out.table(
            ("IMAGE", "REFERENCE", "REGISTRY DIGEST", "STATUS"),
            ((d.name, d.uri, d.registry, d.status) for d in found),
        )
        for d in found:
            if d.status == "tag moved":
                out.line(f"{d.name}: pinned to {d.pinned}, but {d.uri} is now {d.registry}")
    return EXIT_CONFLICT if any(d.status == "tag moved" for d in found) else EXIT_OK


# --- entry point ---------------------------------------------------------------------------------


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The command line's parser, built once per process (parsing reads it and changes nothing)."""
    parser = argparse.ArgumentParser(
        prog="neuron-ecs",
        description="AWS Neuron on Amazon ECS: the instance catalog, the recommended Neuron AMI, "
        "and which task holds which Neuron device.",
        epilog="Exit status: 0 clean, 3 a NeuronCore held by two tasks on one instance (inspect, plan), a rollout "
        "whose peak does not fit or that ECS refuses (plan --rollout), a lint error or a pinned image whose tag moved "
        "(digests), 2 usage error, 1 AWS or registry error.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    catalog = commands.add_parser("catalog", help="the Neuron instance types: chips, devices, NeuronCores, topology")
    catalog.add_argument("--json", action="store_true", help="print JSON")

    def aws_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--region", type=_region_name, help="AWS region (default: from the environment or profile)")
        sub.add_argument(
            "--endpoint-url", type=_endpoint_url, help="a different endpoint, e.g. the local one of make deploy-local"
        )
        sub.add_argument("--json", action="store_true", help="print JSON")

    ami = commands.add_parser("ami", help="the recommended ECS Amazon Linux 2023 Neuron AMI in a region")
    ami.add_argument(
        "--releases",
        action="store_true",
        help="list the region's releases of that AMI, newest first (pin one with NeuronAmi.release)",
    )
    ami.add_argument(
        "--limit",
        type=_release_limit,
        default=10,
        help="with --releases: how many of the newest to show (default 10, 0 for every one read)",
    )
    aws_options(ami)
    ami.add_argument(
        "--deadline",
        type=_seconds,
        metavar="SECONDS",
        help=f"give up when the whole command has taken this long (default: {AMI_DEADLINE_S:g})",
    )

    inspect = commands.add_parser(
        "inspect", help="container instances, tasks and their Neuron devices; conflicts and idle devices"
    )
    inspect.add_argument("--cluster", required=True, help="cluster name or ARN")
    inspect.add_argument(
        "--metrics",
        action="store_true",
        help="add each instance's NeuronCore utilization, and each task's model's on its instance, from CloudWatch "
        "(NeuronMonitoring publishes them)",
    )
    aws_options(inspect)

    lint = commands.add_parser(
        "lint",
        help="check CloudFormation templates (JSON, YAML, or directories of *.template.json) against the Neuron rules",
    )
    lint.add_argument("templates", nargs="*", metavar="TEMPLATE", help="template files or directories")
    lint.add_argument("--json", action="store_true", help="print the findings as JSON")
    lint.add_argument(
        "--format", choices=("text", "parseable"), default="text", help="text (as cfn-lint prints) or parseable"
    )
    lint.add_argument(
        "--ignore", action="append", default=[], metavar="RULE", help="a rule id (NEURON109 or W9209) to skip"
    )
    lint.add_argument("--list-rules", action="store_true", help="list the rules lint checks and exit")
    lint.add_argument(
        "--quiet", "-q", action="store_true", help="no closing summary line (templates, resources, rules checked)"
    )

    plan = commands.add_parser(
        "plan",
        help="draw the NeuronCores of one planned instance of every Neuron capacity in templates or a cdk.out, "
        "and which service's task holds each",
    )
    plan.add_argument(
        "templates", nargs="+", metavar="TEMPLATE", help="template files or directories (cdk.out), planned as one app"
    )
    plan.add_argument("--json", action="store_true", help="print the planned instances as JSON")
    plan.add_argument(
        "--rollout",
        action="store_true",
        help="draw the peak of every Neuron service's next deployment: its blue copies, then the instances its green "
        "copies land on; per service its strategy, peak chips, cores, instances, CPU and memory, and whether the "
        "capacity holds it",
    )
    plan.add_argument(
        "--fetches",
        action="store_true",
        help="list, per Neuron capacity, the container images and model-artifact S3 prefixes a new instance fetches "
        "before its tasks start, whether a warm pool fetched them ahead, the sizes stated and the root volume's room",
    )

    digests = commands.add_parser(
        "digests",
        help="ask each image's registry for the digest of the tag the library runs: pinned ones must match, "
        "unpinned ones get the digest to pin",
    )
    digests.add_argument(
        "--endpoint-url", type=_endpoint_url, help="ask this registry instead of each image's own (a mirror)"
    )
    digests.add_argument(
        "--deadline",
        type=_seconds,
        metavar="SECONDS",
        help="give up when the whole run has taken this long (default: 30)",
    )
    digests.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds from 0 to 3600")
    return seconds


def _region_name(value: str) -> str:
    if not _REGION.match(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an AWS region name (like us-east-1)")
    return value


def _endpoint_url(value: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise argparse.ArgumentTypeError(f"{value!r} is not an http(s) URL (like http://127.0.0.1:5000)")
    from botocore.utils import is_valid_endpoint_url, is_valid_ipv6_endpoint_url

    # botocore refuses more at the first call (a space, _ or a non-ASCII host, an escape, a leading -): refuse it here.
    if not (is_valid_endpoint_url(value) or is_valid_ipv6_endpoint_url(value)):
        raise argparse.ArgumentTypeError(f"{value!r} is not a host name or address an AWS SDK accepts")
    return value


_COMMANDS: dict[str, Callable[[argparse.Namespace, _Output], int]] = {
    "catalog": _catalog,
    "ami": _ami_within_deadline,
    "inspect": _inspect,
    "lint": _lint,
    "plan": _plan,
    "digests": _digests,
}


def main(argv: Sequence[str] | None = None, *, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Run ``neuron-ecs``; returns the exit status."""
    out = _Output(stdout or sys.stdout)
    err = stderr or sys.stderr
    try:
        with contextlib.redirect_stdout(out.stream), contextlib.redirect_stderr(err):
            args = _parser().parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or a usage error (2)
        return int(exit_.code or 0)
    args.stderr = err
    try:
        return _COMMANDS[args.command](args, out)
    except KeyboardInterrupt:
        err.write(f"\nneuron-ecs {args.command}: interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as error:
        from neuron_constructs.checks.lint import LintUsageError

        if isinstance(error, _UsageError | LintUsageError):
            err.write(f"neuron-ecs {args.command}: {terminal_safe(error)}\n")
            return EXIT_USAGE
        if args.command in ("catalog", "lint", "plan"):
            if isinstance(error, RecursionError | MemoryError):  # the readers bound both: a last line of defence
                err.write(f"neuron-ecs {args.command}: the input is too large or nested too deeply to check\n")
                return EXIT_USAGE
            raise
        sentence = _explain(error, args.command, args)
        if sentence is None:
            raise
        err.write(f"neuron-ecs {args.command}: {terminal_safe(sentence)}\n")
        return EXIT_AWS_ERROR


def run() -> None:
    """Console-script entry point: exit with :func:`main`'s status, even once stdout is closed."""
    try:
        status = main()
    except KeyboardInterrupt:  # between commands, e.g. while importing
        sys.stderr.write("\nneuron-ecs: interrupted\n")
        status = EXIT_INTERRUPTED
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    # A reader that closed the pipe early must not turn the exit into a flush error at shutdown.
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), sys.stdout.fileno())
    sys.exit(status)


if __name__ == "__main__":
    run()
