"""``neuron-ecs``: the instance catalog, the recommended Neuron AMI, and where every Neuron device went.

Commands::

    neuron-ecs catalog [--json]
    neuron-ecs ami [--releases [--limit N]] [--region R] [--deadline SECONDS] [--json]
    neuron-ecs inspect --cluster NAME [--metrics] [--region R] [--json]
    neuron-ecs lint TEMPLATE_OR_DIR... [--json | --format parseable] [--ignore RULE]...
    neuron-ecs plan TEMPLATE_OR_DIR... [--rollout | --fetches | --startup | --quotas] [--json]
    neuron-ecs plan --diff OLD NEW [--price TYPE=USD_PER_HOUR]... [--json]
    neuron-ecs plan --diff --deployed NEW [--region R] [--endpoint-url URL] [--price ...] [--json]
    neuron-ecs digests [--endpoint-url URL] [--deadline SECONDS] [--json]
    neuron-ecs precompile TEMPLATE [--model PATH] [--stack NAME] [--region R] [--endpoint-url URL] [--json]
    neuron-ecs rollout status|approve|rollback SERVICE_OR_STACK [--cluster C] [--region R] [--endpoint-url URL] [--json]
    neuron-ecs doctor TEMPLATE_OR_DIR... [--deadline SECONDS] [--region R] [--endpoint-url URL] [--json]

Exit status: 0 clean, 3 when ``inspect`` finds a NeuronCore held by two tasks on one instance,
``lint`` finds an error, ``plan`` holds a NeuronCore twice (with ``--rollout``: or a rollout's peak does
not fit its capacity, or ECS refuses its configuration; with ``--startup``: a health check grace period is shorter
than the start stated for its copies), ``digests`` finds a pinned tag that moved or ``rollout approve|rollback`` finds
nothing to answer or ``doctor`` a problem, 2 for usage errors (a malformed ``--region`` or ``--endpoint-url``
included), 1 when AWS or a
registry cannot answer (the message says why, in a sentence), 130 on Ctrl-C. Calls to AWS give up on
an endpoint that does not answer within about 30 s (5 s to connect, 10 s to read, 3 attempts); a
long ``inspect`` prints progress on stderr; ``ami --releases`` reads at most 40 pages within 60 s and says when
it stopped early; ``ami`` ends within one deadline for the whole command (120 s, ``--deadline``), and
``digests`` within one for the whole run (30 s, ``--deadline``); ``lint`` and ``plan`` read any file within 2 s
and 256 MB and answer a sentence, never a traceback. Tables are aligned text; on a terminal the headers are bold and
findings coloured (unless ``NO_COLOR`` is set); piped output is plain, and a closed pipe
(``| head``) keeps the exit status. ``catalog``, ``lint`` and ``plan`` import neither boto3 nor the
AWS CDK.

This module parses the command line and runs the command asked for; each command is a module of
:mod:`neuron_constructs.tools.commands`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import IO

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.tools.commands.ami import AMI_DEADLINE_S, _ami_within_deadline
from neuron_constructs.tools.commands.aws import _explain
from neuron_constructs.tools.commands.catalog import _catalog
from neuron_constructs.tools.commands.digests import _digests
from neuron_constructs.tools.commands.doctor import _doctor
from neuron_constructs.tools.commands.doctor import add_parser as add_doctor_parser
from neuron_constructs.tools.commands.inspect import _inspect
from neuron_constructs.tools.commands.lint import _lint
from neuron_constructs.tools.commands.output import EXIT_AWS_ERROR as EXIT_AWS_ERROR
from neuron_constructs.tools.commands.output import EXIT_CONFLICT as EXIT_CONFLICT
from neuron_constructs.tools.commands.output import EXIT_OK as EXIT_OK
from neuron_constructs.tools.commands.output import EXIT_USAGE as EXIT_USAGE
from neuron_constructs.tools.commands.output import _Output, _UsageError
from neuron_constructs.tools.commands.plan import _plan
from neuron_constructs.tools.commands.precompile import _precompile
from neuron_constructs.tools.commands.rollout import _rollout
from neuron_constructs.tools.commands.rollout import add_parser as add_rollout_parser

__all__ = ["main"]

_REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+)+-\d+$")
EXIT_INTERRUPTED = 130


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
        "(digests), a precompile job that failed or did not end in time (precompile), nothing to approve or roll back "
        "(rollout), 2 usage error, 1 AWS or registry error.",
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
    plan.add_argument(
        "--diff",
        action="store_true",
        help="with two versions, OLD NEW (templates or cdk.out directories): the services the change rolls and how, "
        "the capacities it refreshes, what it removes, how long it takes term by term and its instance-hours",
    )
    plan.add_argument(
        "--deployed",
        action="store_true",
        help="with --diff and one version, NEW: compare it with its stacks as deployed (CloudFormation GetTemplate)",
    )
    plan.add_argument(
        "--prices-from-aws",
        action="store_true",
        help="with --diff: the instance types' hourly On-Demand prices from the AWS Price List API, at the time of the "
        "run (a --price given wins)",
    )
    plan.add_argument(
        "--region", type=_region_name, help="with --deployed or --prices-from-aws: the AWS region of the stacks"
    )
    plan.add_argument(
        "--endpoint-url", type=_endpoint_url, help="with --deployed: a different endpoint, e.g. the local one"
    )
    plan.add_argument(
        "--price",
        action="append",
        metavar="TYPE=USD_PER_HOUR",
        help="with --diff: an instance type's hourly price, for the cost in dollars (repeat per type)",
    )
    plan.add_argument(
        "--quotas",
        action="store_true",
        help="the EC2 vCPU quotas (Inf, Trn; On-Demand, Spot) the app needs at its capacities' maximum and at a "
        "rollout's peak, with the Service Quotas codes to ask for them",
    )
    plan.add_argument(
        "--startup",
        action="store_true",
        help="list, per model, the steps a new copy takes before it serves (instance, image, weights, compile or "
        "compile-cache fetch, load, health check) with the sizes and durations stated, or 'measure it', and the "
        "service's health check grace period against them",
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

    precompile = commands.add_parser(
        "precompile",
        help="submit a synthesized model's precompile job (AWS Batch) in its deployed stack and wait for it, "
        "printing each state",
    )
    precompile.add_argument(
        "template", metavar="TEMPLATE", help="a template, or a cdk.out directory (every template in it is read)"
    )
    precompile.add_argument("--model", help="the model's construct path (needed when the template has several)")
    precompile.add_argument("--stack", help="the deployed stack's name (default: the template's file name)")
    precompile.add_argument(
        "--poll", type=_seconds, default=15.0, metavar="SECONDS", help="read the job's state this often (default 15)"
    )
    precompile.add_argument(
        "--timeout",
        type=_wait,
        default=3 * 3600.0,
        metavar="SECONDS",
        help="stop waiting after this long (default 10800; the job goes on)",
    )
    aws_options(precompile)
    add_rollout_parser(commands, aws_options)
    add_doctor_parser(commands, aws_options, _seconds)
    return parser


def _wait(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= 86_400:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds from 0 to 86400")
    return seconds


def _release_limit(text: str) -> int:
    if not text.isdigit() or int(text) > 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count from 0 to 10000")
    return int(text)


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
    "precompile": _precompile,
    "rollout": _rollout,
    "doctor": _doctor,
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
        asks_aws = getattr(args, "deployed", False) or getattr(args, "prices_from_aws", False)
        if args.command in ("catalog", "lint") or (args.command == "plan" and not asks_aws):
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
