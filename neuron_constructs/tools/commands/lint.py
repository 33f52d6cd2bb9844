"""``neuron-ecs lint``: CloudFormation templates checked against the Neuron rules, findings as cfn-lint prints
them, as JSON or one a line."""

from __future__ import annotations

import argparse

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.tools.commands.output import EXIT_CONFLICT, EXIT_OK, EXIT_USAGE, _Output, _UsageError


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
