"""``python -m neuron_constructs.tools.deployment_report STACK... [--region R] [--verbose]``: read the stacks and
print the report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from neuron_constructs.tools.deployment_report.rendering import endpoint_label, format_reports
from neuron_constructs.tools.deployment_report.stacks import describe_stacks

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m neuron_constructs.tools.deployment_report",
        description="Print what deployed CloudFormation stacks created: ECS clusters, capacity, "
        "task definitions with their Neuron settings, services.",
    )
    parser.add_argument("stacks", nargs="+", help="stack names")
    parser.add_argument("--region", help="AWS region (default: from the environment)")
    parser.add_argument("--verbose", "-v", action="store_true", help="every resource's settings and every gap")
    args = parser.parse_args(argv)

    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    session = boto3.Session(region_name=args.region)
    try:
        cloudformation = session.client("cloudformation")
        label = endpoint_label(cloudformation.meta.endpoint_url, cloudformation.meta.region_name)
        reports = describe_stacks(session.client, args.stacks)
        print(format_reports(reports, endpoint=label, verbose=args.verbose))
    except (BotoCoreError, ClientError) as error:
        print(f"could not read the stacks: {error}", file=sys.stderr)
        return 1
    return 0
