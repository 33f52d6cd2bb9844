"""The ECS Neuron AMI releases an app pins, and their publication on the local endpoint.

A capacity pinned to a release (``NeuronAmi.release('2023.0.YYYYMMDD')``) resolves the release's public parameter
(``/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/`` followed by
``al2023-ami-ecs-neuron-hvm-<release>-kernel-<k>-x86_64/image_id``) when its stack deploys. moto answers these
parameters from a copy it ships, which ends with the releases of its own date; a release it lacks makes CloudFormation's
parameter resolution fail on the endpoint, and the cdk CLI says only ``XML parse error``. Before anything deploys,
:func:`pinned_releases` reads every release the app's templates name (their text, so a parameter's ``Default`` and a
``{{resolve:ssm:...}}`` alike), and the deploy asks the endpoint's server to publish each one (:data:`PUBLISH_PATH`; the
server's side is :func:`neuron_constructs.local_endpoint.moto_server.publish_pinned_neuron_amis`) with a stand-in image
id (:func:`stand_in_image_id`; a real one differs by Region). A release AWS cannot have published is refused with a
sentence naming it (:func:`refusal`): one that is not a release name (``2023.0.YYYYMMDD`` of a calendar date, on a
kernel ``NeuronAmi.release`` accepts), or one dated after the day of the deploy.
"""

from __future__ import annotations

import datetime
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

from neuron_constructs.local_endpoint.endpoint import DIRECT, LocalAwsEndpoint, LocalEndpointError

__all__ = [
    "PUBLISH_PATH",
    "pinned_releases",
    "publish_pinned_releases",
    "refusal",
    "release_parameters",
    "stand_in_image_id",
]

PUBLISH_PATH = "/moto-api/neuron-constructs/neuron-ami-releases"
"""The local endpoint's route that publishes releases: ``POST`` a JSON list of ``[release, kernel]`` pairs."""

_PINNED = re.compile(
    r"/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/al2023-ami-ecs-neuron-hvm-"
    r"(?P<release>[0-9.]{1,20})-kernel-(?P<kernel>[0-9.]{1,10})-x86_64/image_id"
)
_MAX_TEMPLATE_BYTES = 64 * 1024 * 1024
"""A template larger than this is not read (CloudFormation takes templates of 1 MB from S3)."""


def stand_in_image_id(release: str) -> str:
    """The image id the endpoint gives release ``release`` (``2023.0.20261113`` -> ``ami-0202611130000000f``)."""
    return f"ami-0{release.rsplit('.', 1)[-1]}0000000f"


def pinned_releases(assembly: Path) -> dict[tuple[str, str], list[str]]:
    """Every ECS Neuron AMI release (release, kernel) a template of the cloud assembly ``assembly`` names (stages'
    nested assemblies and nested stacks included), with the templates that name it (file names without
    ``.template.json``)."""
    found: dict[tuple[str, str], list[str]] = {}
    for template in sorted(assembly.rglob("*.template.json")):
        if template.stat().st_size > _MAX_TEMPLATE_BYTES:
            continue
        text = template.read_text(errors="replace")
        stack = template.name.removesuffix(".template.json")
        for match in _PINNED.finditer(text):
            where = found.setdefault((match["release"], match["kernel"]), [])
            if stack not in where:
                where.append(stack)
    return found


def refusal(release: str, kernel: str, stacks: Iterable[str], today: datetime.date) -> str | None:
    """Why the endpoint does not publish ``release`` on ``kernel``, which ``stacks`` pin: a sentence naming it; ``None``
    when it publishes it."""
    from neuron_constructs.knowledge.ami import kernel_line, release_date

    where = ", ".join(stacks)
    fix = "pin a release AWS published (neuron-ecs ami --releases lists a Region's)"
    dated = release_date(release)
    if dated is None or not kernel_line(kernel):
        return (
            f"stack {where} pins ECS Neuron AMI {release!r} on kernel {kernel!r}, which is not a release "
            f"(2023.0.YYYYMMDD of a calendar date, on a kernel NeuronAmi.release accepts): {fix}."
        )
    if dated > today:
        return (
            f"stack {where} pins ECS Neuron AMI release {release}, dated after today ({today.isoformat()}): AWS has "
            f"not published it, and a deploy in AWS would fail to resolve its parameter; {fix}."
        )
    return None


def release_parameters(release: str, kernel: str) -> Mapping[str, str]:
    """The two public parameters AWS publishes for a release: its JSON description and its ``/image_id``."""
    from neuron_constructs.knowledge.ami import NeuronAmi

    ami = NeuronAmi.release(release, kernel=kernel)
    image_id = stand_in_image_id(release)
    details = {
        "image_id": image_id,
        "image_name": ami.image_name,
        "image_version": release,
        "os": "Amazon Linux 2023",
        "schema_version": 1,
    }
    return {ami.details_parameter: json.dumps(details), ami.parameter_name: image_id}


def publish_pinned_releases(endpoint: LocalAwsEndpoint, assembly: Path, today: datetime.date | None = None) -> None:
    """Have the endpoint publish every ECS Neuron AMI release the templates of ``assembly`` pin, or refuse the deploy
    with a sentence naming each release it does not publish (:mod:`neuron_constructs.local_endpoint.ami_releases`)."""
    pinned = pinned_releases(assembly)
    today = today or datetime.datetime.now(datetime.UTC).date()
    refused = [
        r for (release, kernel), stacks in sorted(pinned.items()) if (r := refusal(release, kernel, stacks, today))
    ]
    if refused:
        raise LocalEndpointError(" ".join(refused))
    if not pinned:
        return
    request = urllib.request.Request(
        endpoint.url + PUBLISH_PATH,
        data=json.dumps(sorted(pinned)).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with DIRECT.open(request, timeout=30) as response:
            response.read(65536)
    except urllib.error.HTTPError as error:
        said = error.read(2000).decode(errors="replace")
        raise LocalEndpointError(f"the endpoint did not publish the pinned ECS Neuron AMI releases: {said}") from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        raise LocalEndpointError(
            f"the endpoint did not answer the request to publish the pinned ECS Neuron AMI releases: {error}"
        ) from None
