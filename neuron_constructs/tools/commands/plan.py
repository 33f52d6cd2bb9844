"""``neuron-ecs plan``: the NeuronCores of one planned instance of every Neuron capacity in templates, and which
service's task holds each; with ``--rollout`` the peak of every service's next deployment, with ``--fetches`` what a
new instance fetches before its tasks start, with ``--startup`` the steps a new copy of every model takes before it
serves, with ``--quotas`` the EC2 vCPU quotas per family and purchase option the app needs."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.tools.commands.output import (
    EXIT_CONFLICT,
    EXIT_OK,
    EXIT_USAGE,
    _Output,
    _print_json,
    _UsageError,
)

if TYPE_CHECKING:
    from neuron_constructs.tools.rollout_result import RolloutResult
    from neuron_constructs.tools.startup_planning import StartupResult


def _plan(args: argparse.Namespace, out: _Output) -> int:
    if args.rollout:
        return _plan_rollout(args, out)
    if getattr(args, "quotas", False):
        return _plan_quotas(args, out)
    if getattr(args, "diff", False):
        return _plan_diff(args, out)
    if getattr(args, "startup", False):
        return _plan_startup(args, out)
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
        out.line(f"{terminal_safe(fetch.capacity)} ({how})")
        room = fetch.room
        sizes = {(f.kind, f.what): f for f in room.fetched} if room is not None else {}
        for kind, items in (("image", fetch.images), ("artifacts", fetch.artifacts)):
            for item in items:
                known = sizes.get((kind, item))
                size = f"  [{known.describe().removeprefix(item).strip(' ()')}]" if known is not None else ""
                later = (
                    "  (not fetched at warm-up: when its task is placed, NEURON124)"
                    if item in fetch.not_prefetched
                    else ""
                )
                out.line(f"  {kind:<9} {terminal_safe(item)}{terminal_safe(size)}{later}")
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


def _report(args: argparse.Namespace, out: _Output, result: Any, print_text: Any, conflict: bool) -> int:
    """One plan mode's answer: its unreadable files on stderr, ``result`` as JSON or by ``print_text``; exit status 2
    when a file was unreadable, 3 on ``conflict``."""
    for problem in result.unreadable:
        args.stderr.write(f"neuron-ecs plan: {terminal_safe(problem)}\n")
    if args.json:
        _print_json(result.to_json(), out)
    else:
        print_text(result, out)
    if result.unreadable:
        return EXIT_USAGE
    return EXIT_CONFLICT if conflict else EXIT_OK


def _plan_rollout(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.rollout_planning import rollout_paths

    result = rollout_paths(args.templates)
    return _report(args, out, result, _print_rollout, result.holds_a_core_twice or result.does_not_fit)


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
        out.line(f"  {terminal_safe(service.name)} on {terminal_safe(service.capacity)} ({service.instance_type})")
        if service.timeline:
            out.line(f"    {terminal_safe(service.timeline)}")
        for sentence in (*service.unknown, *service.problems):
            colour = "31" if sentence in service.problems else "33"
            out.line("    " + out.style(terminal_safe(sentence), colour))
        if service.room is not None:
            from neuron_constructs.tools.rollout_result import Peak

            out.line(f"    peak: {Peak.of(service.room).text()}")
            if service.green_instances:
                out.line(f"    green on {_instances_text(service.green_instances)}")
            colour = _VERDICT_COLOURS[service.fits]
            out.line("    " + out.style(terminal_safe(service.verdict), colour))
    for fleet in result.fleets:
        copies = sum(len(stage) for stage in fleet.stages)
        out.line(
            f"  fleet model {terminal_safe(fleet.name)} on {terminal_safe(fleet.capacity)} ({fleet.instance_type}): "
            f"{copies} copies"
        )
        for number, stage in enumerate(fleet.stages, 1):
            copies_text = ", ".join(name.removeprefix(fleet.name + "/").removesuffix("/Service") for name in stage)
            out.line(f"    stage {number}: {terminal_safe(copies_text)}")
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
        out.line("    " + out.style(terminal_safe(fleet.verdict), colour))
    for capacity in result.capacities:
        if capacity.rollouts > 1:
            colour = "32" if capacity.fits else "33"
            out.line("  " + out.style(terminal_safe(capacity.text), colour))
    if result.holds_a_core_twice:
        out.line(out.style("A NeuronCore is held twice (marked !)", "31") + ": see the drawing.")


def _instances_text(numbers: Sequence[int]) -> str:
    from neuron_constructs.knowledge.devices import format_index_runs

    return f"instance{'s' if len(numbers) > 1 else ''} {format_index_runs(numbers)}"


def _plan_startup(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.startup_planning import startup_paths

    result = startup_paths(args.templates)
    return _report(args, out, result, _print_startup, result.grace_too_short)


def _print_startup(result: StartupResult, out: _Output) -> None:
    from neuron_constructs.knowledge.startup import GRACE_SOURCE, duration_text
    from neuron_constructs.tools.startup_planning import STEP_NAMES

    if not result.models:
        out.line("No Neuron service in these templates, so no start to plan.")
        return
    out.line(out.style("What a new copy of each model does before it serves", "1"))
    references: list[str] = [GRACE_SOURCE]

    def cite(reference: str | None) -> str:
        if reference is None:
            return ""
        if reference not in references:
            references.append(reference)
        return f" [{references.index(reference) + 1}]"

    for model in result.models:
        out.line()
        copies = f", {model.copies} copies" if model.copies > 1 else ""
        where = f" on {terminal_safe(model.capacity)}" if model.capacity else ""
        out.line(f"{terminal_safe(model.name)}{where}{copies}")
        for step in model.steps:
            size = f" [{step.size_gib:g} GiB]" if step.size_gib is not None else ""
            if step.absent or step.ahead:
                duration = step.source
            elif step.seconds is not None:
                duration = f"{duration_text(step.seconds)}, {step.source}"
            else:
                duration = out.style(step.source, "33") + cite(step.reference)
            out.line(f"  {STEP_NAMES[step.step]:<11} {terminal_safe(step.what)}{size}: {duration}")
        colour = {True: "31", False: "32", None: "33"}[model.grace_short]
        out.line("  " + out.style(f"{'health':<11} {terminal_safe(model.verdict)}", colour) + " [1]")
        out.line(f"  {'to serve':<11} {model.to_serve}")
    out.line()
    out.line(
        "The grace period counts from the task's first start: the weights copy, the compile and the load run in it."
    )
    for number, reference in enumerate(references, 1):
        out.line(f"[{number}] {reference}")


def _plan_quotas(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.knowledge.quotas import quota_of
    from neuron_constructs.tools.quota_planning import quota_paths

    result = quota_paths(args.templates)
    for problem in result.unreadable:
        args.stderr.write(f"neuron-ecs plan: {terminal_safe(problem)}\n")
    if args.json:
        _print_json(result.to_json(), out)
        return EXIT_USAGE if result.unreadable else EXIT_OK
    if not result.needs:
        out.line("No Neuron capacity in these templates, so no Inf or Trn vCPU quota to ask for.")
        return EXIT_USAGE if result.unreadable else EXIT_OK

    def shown(value: int | None) -> str:
        return "unknown" if value is None else str(value)

    out.line(out.style("EC2 vCPU quotas the app needs in its account and Region (Service Quotas, service ec2)", "1"))
    totals = result.totals()
    out.table(result.TABLE_HEADERS, result.table_rows())
    out.line()
    out.line(out.style("Per capacity", "1"))
    for need in result.needs:
        out.line(
            f"  {terminal_safe(need.capacity)} ({need.kind}, {need.purchase} {need.family}): "
            f"{shown(need.vcpus)} vCPUs, {shown(need.peak_vcpus)} at the peak: {terminal_safe(need.how)}"
        )
    out.line()
    out.line(
        "To ask for one (the value is in vCPUs; the account's current value: aws service-quotas get-service-quota):"
    )
    for family, purchase, vcpus, peak in totals:
        wanted = peak if peak is not None else vcpus
        if wanted is not None:
            out.line(
                "  aws service-quotas request-service-quota-increase --service-code ec2 "
                f"--quota-code {quota_of(family, purchase).code} --desired-value {wanted}"
            )
    return EXIT_USAGE if result.unreadable else EXIT_OK


def _prices(given: Sequence[str]) -> dict[str, float]:
    prices: dict[str, float] = {}
    for item in given:
        kind, _, value = item.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = float("nan")
        if not kind or not price >= 0 or price > 10_000:
            raise _UsageError(f"--price {item!r} is not TYPE=USD_PER_HOUR (like trn1.32xlarge=21.50)")
        prices[kind] = price
    return prices


def _plan_diff(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.diff_planning import diff_paths

    prices = _prices(args.price or [])
    if getattr(args, "deployed", False):
        if len(args.templates) != 1:
            raise _UsageError("--diff --deployed takes one version, NEW: it is compared with the deployed stacks")
        import tempfile

        with tempfile.TemporaryDirectory(prefix="neuron-ecs-deployed-") as deployed:
            _read_deployed(args, args.templates[0], deployed)
            result = diff_paths([deployed], [args.templates[0]], prices)
    elif len(args.templates) != 2:
        raise _UsageError("--diff takes two versions: OLD NEW (each a template or a cdk.out), or NEW with --deployed")
    else:
        result = diff_paths([args.templates[0]], [args.templates[1]], prices)
    for problem in result.unreadable:
        args.stderr.write(f"neuron-ecs plan: {terminal_safe(problem)}\n")
    if getattr(args, "prices_from_aws", False):
        kinds = {c.instance_type for c in result.capacities} | {s.instance_type for s in result.services}
        result.prices = {**_prices_from_aws(args, kinds - {"", "?"}), **prices}  # a --price given wins
    if args.json:
        _print_json(_diff_json(result), out)
    else:
        _print_diff(result, out)
    if result.unreadable:
        return EXIT_USAGE
    return EXIT_OK if result.fits else EXIT_CONFLICT


def _prices_from_aws(args: argparse.Namespace, kinds: set[str]) -> dict[str, float]:
    """The hourly On-Demand prices of ``kinds`` (the instance types the change runs more of), from the Price List API;
    a type without one is said on stderr."""
    from neuron_constructs.tools.commands.aws import _region, _session
    from neuron_constructs.tools.inspection import client_config
    from neuron_constructs.tools.prices import PRICING_REGION, on_demand_prices

    session = _session(args)
    region = _region(session)
    client = session.client(
        "pricing", region_name=PRICING_REGION, endpoint_url=args.endpoint_url, config=client_config()
    )
    prices, said = on_demand_prices(client, region, kinds)
    for sentence in said:
        args.stderr.write(f"neuron-ecs plan: {terminal_safe(sentence)}\n")
    return prices


MAX_DEPLOYED_TEMPLATE_BYTES = 1 << 20
"""The largest template CloudFormation keeps (1 MB, from S3): a larger answer is not one."""


def _read_deployed(args: argparse.Namespace, new: str, into: str) -> None:
    """Each stack of ``new`` (by its manifest's name, a Stage's nested assembly included; a template alone by its file
    name) as deployed (CloudFormation ``GetTemplate``, the original template), written to ``into``; a stack not
    deployed is left out."""
    import json
    from pathlib import Path

    from botocore.exceptions import ClientError

    from neuron_constructs.checks.lint import LintUsageError, template_files
    from neuron_constructs.tools.commands.aws import _region, _session
    from neuron_constructs.tools.inspection import client_config

    source = Path(new)
    stacks = _stack_names(source)
    try:
        files = template_files([new])
    except LintUsageError as error:
        raise _UsageError(str(error)) from None
    session = _session(args)
    _region(session)
    cloudformation = session.client("cloudformation", endpoint_url=args.endpoint_url, config=client_config())
    for file in files:
        relative = file.relative_to(source).as_posix() if source.is_dir() else file.name
        stack = stacks.get(relative, file.name.removesuffix(".template.json"))
        try:
            body = cloudformation.get_template(StackName=stack, TemplateStage="Original").get("TemplateBody")
        except ClientError as error:
            if "does not exist" in str(error.response.get("Error", {}).get("Message", "")):
                continue
            raise
        text = body if isinstance(body, str) else json.dumps(body)
        if len(text) > MAX_DEPLOYED_TEMPLATE_BYTES:
            raise _UsageError(f"the deployed template of {stack} is larger than CloudFormation keeps: not a template")
        (Path(into) / file.name).write_text(text)


MAX_NESTED_ASSEMBLIES = 4
"""How deep ``--deployed`` follows the nested cloud assemblies of Stages (a Stage in a Stage in ...)."""


def _stack_names(assembly: Any) -> dict[str, str]:
    """A cloud assembly's template files by their path in it, their stacks' names as values (``manifest.json``: a
    stack named with ``stack_name=`` has a file named for its construct id), the stacks of its Stages' nested
    assemblies (``assembly-Prod/``) included; none for a template given alone."""
    names: dict[str, str] = {}
    if assembly.is_dir():
        _read_manifest(assembly, assembly, names, MAX_NESTED_ASSEMBLIES)
    return names


def _read_manifest(root: Any, directory: Any, names: dict[str, str], depth: int) -> None:
    import json

    manifest = directory / "manifest.json"
    if depth < 0 or not manifest.is_file() or manifest.stat().st_size > 16 << 20:
        return
    try:
        artifacts = json.loads(manifest.read_text()).get("artifacts") or {}
    except (OSError, ValueError, AttributeError):
        return
    for artifact in artifacts.values() if isinstance(artifacts, dict) else []:
        properties = artifact.get("properties") if isinstance(artifact, dict) else None
        if not isinstance(properties, dict):
            continue
        template, nested = properties.get("templateFile"), properties.get("directoryName")
        if isinstance(template, str) and template == template.rsplit("/", 1)[-1] and properties.get("stackName"):
            names[(directory / template).relative_to(root).as_posix()] = str(properties["stackName"])
        elif (
            artifact.get("type") == "cdk:cloud-assembly"
            and isinstance(nested, str)
            and nested.startswith("assembly-")
            and "/" not in nested
            and (directory / nested).is_dir()
        ):
            _read_manifest(root, directory / nested, names, depth - 1)


def _diff_json(result: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "capacities": [asdict(c) for c in result.capacities],
        "services": [asdict(s) for s in result.services],
        "removed": [asdict(r) for r in result.removed],
        "duration_terms": [{"term": t, "minutes": m, "complete": c} for t, m, c in result.duration_terms()],
        "least_minutes": result.least_minutes(),
        "instance_hours": [
            {"what": w, "instance_type": k, "instance_hours": h, "complete": c, "usd": _usd(result, k, h)}
            for w, k, h, c in result.instance_hours()
        ],
        "fits": result.fits,
        "unreadable": result.unreadable,
    }


def _usd(result: Any, kind: str, hours: float) -> float | None:
    price = result.prices.get(kind)
    return None if price is None else round(price * hours, 2)


def _print_diff(result: Any, out: _Output) -> None:
    safe = terminal_safe
    if not (result.capacities or result.services or result.removed):
        out.line("The change rolls no Neuron service, refreshes no capacity and removes nothing.")
        return
    if result.capacities:
        out.line(out.style("Capacities the change reaches", "1"))
        for c in result.capacities:
            out.line(f"  {safe(c.name)} ({c.instance_type}): {safe('; '.join(c.what))}")
            if not c.refreshed:
                out.line(
                    "    no instance refresh (the group has no AutoScalingInstanceRefresh policy): instances launched "
                    "from now on take it, the running ones keep the old until they are replaced"
                )
                continue
            first = "launched before the old one stops" if c.launch_first else "stopped before its replacement starts"
            above = f", {c.above} above the group's instances" if c.launch_first else ""
            reserved = (
                "; it launches into a reservation only: the reservation needs room for the batch"
                if c.launch_first and c.reservation_only
                else ""
            )
            warmup = "?" if c.warmup_s is None else f"{c.warmup_s / 60:g} min"
            out.line(
                f"    instance refresh of up to {c.instances} instances, {c.batch} at a time ({c.batches} batches), "
                f"{first}{above}; {warmup} warm-up each{reserved}"
            )
    if result.services:
        out.line(out.style("Services the change rolls", "1"))
        for s in result.services:
            out.line(f"  {safe(s.name)}: {safe('; '.join(s.what))}")
            peak = (
                f"; peak {s.extra_instances} instance{'s' if s.extra_instances != 1 else ''} and {s.extra_chips} "
                f"chip{'s' if s.extra_chips != 1 else ''} "
                "above the steady state"
                if s.extra_instances
                else ""
            )
            verdict = "" if s.fits is not False else "; the peak does NOT fit its capacity (plan --rollout)"
            out.line(f"    {safe(s.how)}{peak}{verdict}")
            for index, stage in enumerate(s.stages, 1):
                copies = ", ".join(safe(c.rsplit("/", 2)[-2] if c.endswith("/Service") else c) for c in stage)
                out.line(f"    stage {index}: {copies} out of service while they start")
    if result.removed:
        out.line(out.style("What the change removes", "1"))
        for r in result.removed:
            serving = (
                f": it forwards {safe(r.serves)}; clients still sent there get the listener's default answer"
                if r.serves
                else ""
            )
            flag = out.style("serves traffic", "31") + " " if r.serves else ""
            out.line(f"  {flag}{r.kind} {safe(r.name)}{serving}")
    out.line(out.style("How long it takes (each term; none invented)", "1"))
    for term, minutes, complete in result.duration_terms():
        more = "" if complete else " + what to measure"
        out.line(f"  {safe(term)}: {minutes:g} min{more}")
    every = all(complete for _, _, complete in result.duration_terms())
    out.line(f"  {'' if every else 'at least '}{result.least_minutes():g} min: the refreshes, then the longest rollout")
    hours = result.instance_hours()
    if hours:
        out.line(out.style("What it costs beyond the steady state", "1"))
        for what, kind, value, complete in hours:
            dollars = _usd(result, kind, value)
            price = (
                f" = ${dollars:.2f} at ${result.prices[kind]:g}/h"
                if dollars is not None
                else f" (--price {kind}=USD_PER_HOUR for dollars)"
            )
            more = "" if complete else ", + the time to measure"
            out.line(f"  {safe(what)}: {value:.2f} instance-hours of {kind}{price}{more}")
