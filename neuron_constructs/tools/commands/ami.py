"""``neuron-ecs ami``: the recommended ECS Amazon Linux 2023 Neuron AMI in a region, or (``--releases``) its
releases, newest first, within one deadline for the whole command."""

from __future__ import annotations

import argparse
from typing import Any

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.tools.commands.aws import _region, _session
from neuron_constructs.tools.commands.output import EXIT_AWS_ERROR, EXIT_OK, _Output, _print_json


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
