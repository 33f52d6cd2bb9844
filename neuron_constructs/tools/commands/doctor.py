"""``neuron-ecs doctor [TEMPLATES_OR_CDK_OUT...]``: what would stop the app's Neuron capacity starting in one account
and Region, each check answered ok, problem (with the fix) or unknown (with the reason)
(:mod:`neuron_constructs.tools.doctor`).

Exit status: 0 when no check found a problem, 3 when one did, 2 for templates that cannot be read, 1 when AWS cannot be
reached at all. Read-only: every call is one of the doctor policy's (``DoctorPolicy``, or the file
``neuron_constructs/knowledge/doctor-policy.json``). Progress goes to stderr, one line a check.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.tools.commands.aws import _region, _session
from neuron_constructs.tools.commands.output import EXIT_CONFLICT, EXIT_OK, EXIT_USAGE, _Output, _print_json

__all__ = ["add_parser"]


_MARKS = {"ok": ("ok", "32"), "problem": ("problem", "31"), "unknown": ("unknown", "33")}


def _doctor(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.doctor import run_doctor
    from neuron_constructs.tools.inspection import client_config

    session = _session(args)
    region = _region(session)

    @functools.cache
    def clients(service: str) -> Any:
        return session.client(service, endpoint_url=args.endpoint_url, config=client_config())

    report = run_doctor(
        args.templates,
        clients,
        region=region,
        deadline_s=args.deadline,
        progress=lambda check: args.stderr.write(f"neuron-ecs doctor: checking {check}\n"),
    )
    for problem in report.unreadable:
        args.stderr.write(f"neuron-ecs doctor: {terminal_safe(problem)}\n")
    if args.json:
        _print_json(
            {"region": region, "findings": [f.to_json() for f in report.findings], "unreadable": report.unreadable},
            out,
        )
    else:
        out.line(out.style(f"What would stop this app's Neuron capacity starting in {region}", "1"))
        for finding in report.findings:
            word, colour = _MARKS[finding.status]
            out.line(
                f"{out.style(f'{word:<8}', colour)} {finding.check:<20} {terminal_safe(finding.subject)}: "
                f"{terminal_safe(finding.said)}"
            )
            if finding.fix:
                out.line(f"{'':<30}fix: {terminal_safe(finding.fix)}")
        counts = {s: sum(1 for f in report.findings if f.status == s) for s in _MARKS}
        out.line(f"{counts['ok']} ok, {counts['problem']} problems, {counts['unknown']} unknown")
    if report.unreadable:
        return EXIT_USAGE
    return EXIT_CONFLICT if report.problems else EXIT_OK


def add_parser(commands: Any, aws_options: Any, seconds: Any) -> None:
    """The ``doctor`` command's arguments."""
    doctor = commands.add_parser(
        "doctor",
        help="read-only checks of an account and Region against what the templates launch: quotas, zones, "
        "reservations, AMIs, images, the pull path, service-linked roles, the CDK bootstrap",
    )
    doctor.add_argument(
        "templates", nargs="+", metavar="TEMPLATE", help="template files or directories (cdk.out), checked as one app"
    )
    doctor.add_argument(
        "--deadline",
        type=seconds,
        default=120.0,
        metavar="SECONDS",
        help="give up on the checks not yet run when the run has taken this long (default: 120)",
    )
    doctor.add_argument("--profile", help="the named profile of your AWS configuration to check with")
    aws_options(doctor)
