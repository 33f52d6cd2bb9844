"""Deploy a CDK app with the real ``cdk`` CLI to a local AWS endpoint: a moto server on 127.0.0.1.

``python -m neuron_constructs.local_endpoint`` (``make deploy-local``) starts a fresh moto
server on a free loopback port, runs ``cdk bootstrap`` and ``cdk deploy --all`` against it,
prints what each stack created (:mod:`neuron_constructs.tools.deployment_report`) and stops the
server, also on failure, Ctrl-C or SIGTERM. No AWS account or credentials are needed.

Only 127.0.0.1 is contacted: the CLI and the SDKs get fake credentials, a fixed region, the
local endpoint for every service, no instance metadata lookups, no proxy for loopback (the readiness probe and this
module's own boto3 clients use no proxy at all, whatever ``HTTP(S)_PROXY`` say), and
neither telemetry, notices nor version checks. One quirk of the pair is handled here: the CLI
hands CloudFormation a template URL built from ``AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION``,
and moto reads the bucket from the host name of that URL unless the host is ``localhost``.

Each run needs a fresh server: moto mishandles change sets that update an existing stack. ``--serve`` keeps the
server up after deploying and prints its URL; ``--attach URL`` deploys another app against that server (a second app
on the first one's platform), bootstrapping only what is not bootstrapped yet, and refuses a stack the endpoint holds
already. Only a URL on 127.0.0.1 (or ``localhost``) is accepted.

Needs the ``local`` extra (``pip install 'neuron-constructs[local]'``) for ``moto[server]``.

This module deploys the app (:func:`deploy_app`: synth, bootstrap, deploy) and is the command (``main``); the
endpoint and its environment are :mod:`~neuron_constructs.local_endpoint.endpoint`, starting or attaching to it
:mod:`~neuron_constructs.local_endpoint.start_or_attach`, the cdk CLI :mod:`~neuron_constructs.local_endpoint.cdk_cli`
and :mod:`~neuron_constructs.local_endpoint.synth`, the pinned AMI releases
:mod:`~neuron_constructs.local_endpoint.ami_releases`, and what the command prints
:mod:`~neuron_constructs.local_endpoint.report`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from neuron_constructs.local_endpoint.ami_releases import publish_pinned_releases as publish_pinned_releases
from neuron_constructs.local_endpoint.cdk_cli import run_cdk as run_cdk
from neuron_constructs.local_endpoint.cdk_cli import run_cdk_summarised as run_cdk_summarised
from neuron_constructs.local_endpoint.endpoint import DEFAULT_ACCOUNT as DEFAULT_ACCOUNT
from neuron_constructs.local_endpoint.endpoint import DEFAULT_REGION as DEFAULT_REGION
from neuron_constructs.local_endpoint.endpoint import FAKE_CREDENTIALS as FAKE_CREDENTIALS
from neuron_constructs.local_endpoint.endpoint import LOOPBACK as LOOPBACK
from neuron_constructs.local_endpoint.endpoint import LocalAwsEndpoint as LocalAwsEndpoint
from neuron_constructs.local_endpoint.endpoint import LocalEndpointError as LocalEndpointError
from neuron_constructs.local_endpoint.endpoint import sealed_environment as sealed_environment
from neuron_constructs.local_endpoint.report import describe_deployed as describe_deployed
from neuron_constructs.local_endpoint.report import format_synth_warnings as format_synth_warnings
from neuron_constructs.local_endpoint.report import synth_warnings as synth_warnings
from neuron_constructs.local_endpoint.start_or_attach import attached_endpoint as attached_endpoint
from neuron_constructs.local_endpoint.start_or_attach import local_aws_endpoint as local_aws_endpoint
from neuron_constructs.local_endpoint.start_or_attach import parse_local_url as parse_local_url
from neuron_constructs.local_endpoint.synth import missing_lookups as missing_lookups
from neuron_constructs.local_endpoint.synth import synth

__all__ = ["DeployedStack", "deploy_app", "main", "stack_environments"]


@dataclass(frozen=True)
class DeployedStack:
    """A stack of the app and the account and region it deployed to."""

    name: str
    account: str
    region: str


def stack_environments(assembly: Path, endpoint: LocalAwsEndpoint) -> dict[str, tuple[str, str]]:
    """Stack name -> (account, region) from a cloud assembly; an environment-agnostic stack gets the endpoint's."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    found: dict[str, tuple[str, str]] = {}
    for artifact in (manifest.get("artifacts") or {}).values():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        environment = str(artifact.get("environment", "aws://unknown-account/unknown-region"))
        account, _, region = environment.removeprefix("aws://").partition("/")
        name = (artifact.get("properties") or {}).get("stackName") or artifact.get("displayName", "")
        found[str(name)] = (
            endpoint.account if account in ("", "unknown-account") else account,
            endpoint.region if region in ("", "unknown-region") else region,
        )
    return found


def deploy_app(
    endpoint: LocalAwsEndpoint,
    *,
    app_dir: Path,
    cdk: str = "cdk",
    output: Path | None = None,
    context: Mapping[str, str] | None = None,
    stacks: Sequence[str] = (),
    verbose: bool = True,
) -> list[DeployedStack]:
    """``cdk synth`` once, bootstrap every account and region its stacks name, then ``cdk deploy`` that
    cloud assembly (every stack unless ``stacks`` names some) to ``endpoint``.

    On an endpoint another app deployed to (``--attach``), an account and region bootstrapped already is not
    bootstrapped again, and a stack the endpoint holds already is refused before anything deploys: the endpoint
    cannot update a stack.

    A stack with an explicit ``env`` deploys to that account and region on the endpoint; the CLI
    works in each account through credentials the endpoint issues for it. The availability zones
    such a stack looks up are the endpoint's for that region, used for this synth only: the app's
    ``cdk.context.json`` is left as it was. An app that needs any other context lookup
    (``Vpc.from_lookup`` and the like, not recorded in ``cdk.context.json``) is refused before
    anything deploys: the endpoint would answer with made-up resources, and the CLI would record
    them in the app's ``cdk.context.json``. Every ECS Neuron AMI release the app's templates pin is published on the
    endpoint first, or the deploy refused with a sentence naming it (:func:`publish_pinned_releases`).

    ``verbose=False`` prints only the cdk CLI's outcome lines (each environment bootstrapped, each stack deployed
    or failed), and the end of its output when a command fails.

    Returns the stacks this call deployed (not those the endpoint held before): in the order of ``stacks``, else by
    creation time.
    """
    env = endpoint.environment()
    assembly = (output or app_dir / "cdk.out").resolve()
    synth(endpoint, cdk, app_dir, assembly, context or {})
    publish_pinned_releases(endpoint, assembly)
    environments = stack_environments(assembly, endpoint)
    chosen = {name: where for name, where in environments.items() if not stacks or name in stacks}
    common = ["--no-notices", "--app", str(assembly)]
    run = run_cdk if verbose else run_cdk_summarised
    before: dict[tuple[str, str], set[str]] = {}
    for account, region in sorted(set(environments.values())):
        existing = before[account, region] = _stack_names(endpoint, account, region)
        there = sorted(name for name, where in chosen.items() if where == (account, region) and name in existing)
        if there:
            raise LocalEndpointError(
                f"the endpoint holds stack {', '.join(there)} in aws://{account}/{region} already, and a local "
                "endpoint cannot update a stack: deploy this app to a fresh endpoint, or give it other stack names."
            )
        if "CDKToolkit" not in existing:  # an endpoint another app deployed to is bootstrapped already
            bootstrap = ["bootstrap", *common, f"aws://{account}/{region}"]
            run(cdk, bootstrap, env=endpoint.environment(account=account), cwd=app_dir)
    selection = list(stacks) or ["--all"]
    run(cdk, ["deploy", *common, *selection, "--require-approval", "never"], env=env, cwd=app_dir)
    deployed: list[tuple[Any, DeployedStack]] = []
    for account, region in sorted(set(environments.values())):
        cloudformation = endpoint.client("cloudformation", account=account, region=region)
        for stack in cloudformation.describe_stacks()["Stacks"]:
            if stack["StackName"] not in before[account, region] | {"CDKToolkit"}:  # not another app's stacks
                deployed.append((stack["CreationTime"], DeployedStack(stack["StackName"], account, region)))
    ordered = [d for _, d in sorted(deployed, key=lambda item: (item[0], item[1].name))]
    if stacks:
        return [d for name in stacks for d in ordered if d.name == name]
    return ordered


def _stack_names(endpoint: LocalAwsEndpoint, account: str, region: str) -> set[str]:
    """The stacks the endpoint holds in ``account`` and ``region``."""
    cloudformation = endpoint.client("cloudformation", account=account, region=region)
    pages = cloudformation.get_paginator("describe_stacks").paginate()
    return {s["StackName"] for page in pages for s in page["Stacks"] if s.get("StackStatus") != "DELETE_COMPLETE"}


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m neuron_constructs.local_endpoint",
        description="Deploy a CDK app with the cdk CLI to a fresh local moto server on 127.0.0.1, "
        "print what each stack created, and stop the server (--serve: keep it up; --attach URL: deploy to the one "
        "a --serve run keeps).",
    )
    parser.add_argument("stacks", nargs="*", help="stacks to deploy (default: all)")
    parser.add_argument("--app-dir", type=Path, default=Path.cwd(), help="directory with cdk.json (default: .)")
    parser.add_argument("--cdk", default="cdk", help="the cdk CLI to run (default: cdk on PATH)")
    parser.add_argument("--region", default=DEFAULT_REGION, help=f"region to deploy to (default: {DEFAULT_REGION})")
    parser.add_argument("--output", type=Path, help="cloud assembly directory (default: cdk.json's)")
    parser.add_argument("--context", "-c", action="append", default=[], metavar="KEY=VALUE", help="CDK context")
    parser.add_argument("--server-log", type=Path, help="append the moto server's request log to this file")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="after deploying, keep the endpoint running (Ctrl-C stops it) and print how to reach it",
    )
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="print the cdk CLI's whole output, and every resource's settings and every gap in the report",
    )
    parser.add_argument(
        "--attach",
        metavar="URL",
        help="deploy to the endpoint a --serve run keeps at URL (http://127.0.0.1:PORT) instead of a fresh one; "
        "it keeps running afterwards",
    )
    args = parser.parse_args(argv)
    context = dict(item.split("=", 1) for item in args.context if "=" in item)
    if len(context) != len(args.context):
        parser.error("--context takes KEY=VALUE")
    if args.attach is not None and (args.serve or args.server_log):
        parser.error("--attach deploys to the endpoint a --serve run keeps (and logs): drop --serve and --server-log")

    from neuron_constructs.tools.deployment_report.rendering import format_reports

    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with SIGINT ignored (`cmd &`)
    try:
        endpoints = (
            attached_endpoint(args.attach, region=args.region)
            if args.attach is not None
            else local_aws_endpoint(region=args.region, log=args.server_log)
        )
        with endpoints as endpoint:
            print(f"local AWS endpoint (moto): {endpoint.url}", flush=True)
            deployed = deploy_app(
                endpoint,
                app_dir=args.app_dir,
                cdk=args.cdk,
                output=args.output,
                context=context,
                stacks=args.stacks,
                verbose=args.verbose,
            )
            if not args.verbose:
                assembly = (args.output or args.app_dir / "cdk.out").resolve()
                warnings = synth_warnings(assembly, [stack.name for stack in deployed])
                if warnings:
                    print(f"warnings at synth ({len(warnings)}; --verbose prints each in full):", flush=True)
                    print("\n".join(format_synth_warnings(warnings)), flush=True)
            reports = describe_deployed(endpoint, deployed)
            print(format_reports(reports, endpoint=endpoint.label, verbose=args.verbose), flush=True)
            if args.serve:
                print(f"\nThe endpoint stays up at {endpoint.url} until Ctrl-C. Deploy another app to it:", flush=True)
                print(
                    f"  python -m neuron_constructs.local_endpoint --attach {endpoint.url} --app-dir <app>", flush=True
                )
                print("or, in another shell, talk to it with the AWS CLI, boto3 or neuron-ecs:", flush=True)
                environment = endpoint.environment()
                for key in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION"):
                    print(f"  export {key}={environment[key]}", flush=True)
                for account in sorted({endpoint.account, *(d.account for d in deployed)}):
                    print(f"  # to act in account {account}:", flush=True)
                    for key, value in endpoint.credentials(account).items():
                        print(f"  export {key}={value}", flush=True)
                with contextlib.suppress(KeyboardInterrupt):
                    while True:
                        time.sleep(3600)
    except LocalEndpointError as error:
        print(f"deploy-local failed: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopped; the local endpoint is shut down.", file=sys.stderr)
        return 130
    if args.attach is not None:
        print(f"The endpoint at {args.attach} keeps running: Ctrl-C in its --serve shell stops it.")
        return 0
    print("The local endpoint is shut down; every run starts from an empty one.")
    return 0
