"""The app's synthesis for a local endpoint: ``cdk synth`` without lookups, the availability-zone lookups answered
from the endpoint for this synth only (the app's ``cdk.context.json`` is left as it was), any other lookup refused
with what to do."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from neuron_constructs.local_endpoint.cdk_cli import run_cdk
from neuron_constructs.local_endpoint.endpoint import LocalAwsEndpoint, LocalEndpointError

__all__ = ["missing_lookups", "synth"]


_ANSWERED_LOOKUPS = ("availability-zones",)
"""Context lookups the endpoint answers: the zone names of a region are the same in every account."""
_LOOKUP_ROUNDS = 5


def _missing(assembly: Path) -> list[dict[str, Any]]:
    manifest_path = assembly / "manifest.json"
    if not manifest_path.exists():
        return []
    missing = json.loads(manifest_path.read_text()).get("missing") or []
    return [m for m in missing if isinstance(m, dict)]


def missing_lookups(assembly: Path) -> list[str]:
    """The context lookups (``from_lookup``) the app asked for and the assembly could not answer."""
    return [f"{m.get('provider')} ({m.get('key')})" for m in _missing(assembly)]


@contextlib.contextmanager
def _context_file_with(app_dir: Path, values: Mapping[str, Any]) -> Iterator[None]:
    """The app's ``cdk.context.json`` with ``values`` added while the block runs, then exactly as it was."""
    path = app_dir / "cdk.context.json"
    original = path.read_bytes() if path.exists() else None
    if not values:
        yield
        return
    try:
        recorded = json.loads(original) if original else {}
    except json.JSONDecodeError as error:
        raise LocalEndpointError(f"{path} is not valid JSON: {error}") from error
    path.write_text(json.dumps({**recorded, **values}, indent=2))
    try:
        yield
    finally:
        if original is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(original)


def _availability_zones(endpoint: LocalAwsEndpoint, props: Mapping[str, Any]) -> list[str]:
    """What the CLI's availability-zones provider records: the available zone names of that account and region."""
    ec2 = endpoint.client("ec2", account=str(props.get("account")), region=str(props.get("region")))
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    return [str(z["ZoneName"]) for z in zones if z.get("State") == "available"]


def synth(endpoint: LocalAwsEndpoint, cdk: str, app_dir: Path, assembly: Path, context: Mapping[str, str]) -> None:
    """``cdk synth`` without lookups, answering availability-zone lookups from the endpoint (the app's
    ``cdk.context.json`` is left as it was); any other lookup is refused with what to do."""
    synth = ["synth", "--quiet", "--no-notices", "--no-lookups", "--output", str(assembly)]
    for key, value in context.items():
        synth += ["--context", f"{key}={value}"]
    answers: dict[str, Any] = {}
    for _round in range(_LOOKUP_ROUNDS):
        with _context_file_with(app_dir, answers):
            result = run_cdk(cdk, synth, env=endpoint.environment(), cwd=app_dir, capture=True)
        missing = _missing(assembly)
        unanswerable = [m for m in missing if m.get("provider") not in _ANSWERED_LOOKUPS]
        if unanswerable:
            raise LocalEndpointError(
                "the app needs context lookups a local endpoint cannot answer: "
                + "; ".join(f"{m.get('provider')} ({m.get('key')})" for m in unanswerable)
                + ". Run `cdk synth` once against your AWS account to record them in cdk.context.json (commit "
                "it), or give the constructs their values instead of looking them up "
                "(e.g. ec2.Vpc.from_vpc_attributes)."
            )
        fresh = [m for m in missing if m.get("key") not in answers]
        if not fresh:
            break
        for lookup in fresh:
            answers[str(lookup["key"])] = _availability_zones(endpoint, lookup.get("props") or {})
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise LocalEndpointError(f"cdk synth exited with status {result.returncode}.")
