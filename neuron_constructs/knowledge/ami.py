"""The ECS-optimized Amazon Linux 2023 Neuron AMI, as its public SSM parameters publish it.

``/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended`` holds a JSON object
(``image_id``, ``image_name``, ``ecs_agent_version``, ``ecs_runtime_version``, ``os``, ...);
``.../recommended/image_id`` holds the image id alone and is what the Auto Scaling capacity's
launch template resolves at deploy time. :func:`resolve_neuron_ami` reads both in one
``ssm:GetParameters`` call. Pure boto3, no AWS CDK import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NEURON_AMI_IMAGE_ID_PARAMETER",
    "NEURON_AMI_PARAMETERS",
    "NEURON_AMI_PARAMETER_PATH",
    "STANDARD_ECS_AMI_PARAMETERS",
    "AmiNotPublishedError",
    "NeuronAmi",
    "NotSsmAnswerError",
    "resolve_neuron_ami",
]

NEURON_AMI_PARAMETER_PATH = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended"
"""The SSM parameter whose JSON value describes the recommended ECS AL2023 Neuron AMI."""

NEURON_AMI_IMAGE_ID_PARAMETER = f"{NEURON_AMI_PARAMETER_PATH}/image_id"
"""The SSM parameter holding only that AMI's id."""

NEURON_AMI_PARAMETERS = re.compile(r"^/aws/service/ecs/optimized-ami/amazon-linux[^/]*/(neuron|inf)/")
"""Every SSM parameter of an ECS-optimized Amazon Linux Neuron (or Inferentia) AMI, of any generation."""
STANDARD_ECS_AMI_PARAMETERS = re.compile(
    r"^/aws/service/ecs/optimized-ami/amazon-linux[^/]*/(recommended|[^/]+/recommended)"
)
"""The SSM parameters of the standard (and other non-Neuron) ECS-optimized Amazon Linux AMIs."""


class NotSsmAnswerError(ValueError):
    """The endpoint answered GetParameters with something the SSM API never returns (a proxy's page, a wrong
    ``--endpoint-url``): SSM always answers with a ``Parameters`` list."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"GetParameters returned a response that is not the SSM API's: {detail}")


class AmiNotPublishedError(LookupError):
    """The region publishes neither Neuron AMI parameter."""

    def __init__(self, region: str) -> None:
        super().__init__(
            f"Region {region} does not publish {NEURON_AMI_PARAMETER_PATH}: the ECS-optimized Amazon Linux 2023 "
            "Neuron AMI exists only in regions that offer Inferentia or Trainium instances; pass --region with one."
        )
        self.region = region


@dataclass(frozen=True)
class NeuronAmi:
    """The recommended AMI in one region.

    ``details`` is the parsed JSON value of :data:`NEURON_AMI_PARAMETER_PATH` (empty when it
    could not be parsed, and ``parse_error`` then says why).
    """

    region: str
    image_id: str
    details: Mapping[str, Any] = field(default_factory=dict)
    parse_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "parameter": NEURON_AMI_PARAMETER_PATH,
            "image_id": self.image_id,
            "details": dict(self.details),
            "parse_error": self.parse_error,
        }


def _parse(value: str) -> tuple[dict[str, Any], str | None]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        excerpt = value if len(value) <= 60 else value[:57] + "..."
        return (
            {},
            f"the value of {NEURON_AMI_PARAMETER_PATH} is not JSON ({error.msg} at character {error.pos}): {excerpt}",
        )
    if not isinstance(parsed, dict):
        return {}, f"the value of {NEURON_AMI_PARAMETER_PATH} is JSON but not an object: {type(parsed).__name__}"
    return parsed, None


def resolve_neuron_ami(ssm: Any, region: str) -> NeuronAmi:
    """Read the recommended Neuron AMI through the SSM ``ssm`` client of ``region``.

    A value that is not a JSON object does not raise: the image id then comes from
    :data:`NEURON_AMI_IMAGE_ID_PARAMETER` and ``parse_error`` says what could not be parsed.
    Raises :class:`AmiNotPublishedError` when the region has neither parameter, :class:`NotSsmAnswerError` when the
    answer is not the SSM API's.
    """
    response = ssm.get_parameters(Names=[NEURON_AMI_PARAMETER_PATH, NEURON_AMI_IMAGE_ID_PARAMETER])
    found, invalid = (
        response.get(key) if isinstance(response, dict) else None for key in ("Parameters", "InvalidParameters")
    )
    if not isinstance(found, list) or not isinstance(invalid, list | None):
        raise NotSsmAnswerError("no Parameters list in it")
    if not all(isinstance(p, dict) and isinstance(p.get("Name"), str) and "Value" in p for p in found):
        raise NotSsmAnswerError("a parameter without its Name and Value")
    values = {p["Name"]: p["Value"] for p in found}
    if not values:
        raise AmiNotPublishedError(region)
    details: dict[str, Any] = {}
    error: str | None = None
    if NEURON_AMI_PARAMETER_PATH in values:
        details, error = _parse(values[NEURON_AMI_PARAMETER_PATH])
    else:
        error = f"{NEURON_AMI_PARAMETER_PATH} is not published in {region}"
    image_id = values.get(NEURON_AMI_IMAGE_ID_PARAMETER) or str(details.get("image_id", ""))
    if not image_id:
        raise AmiNotPublishedError(region)
    return NeuronAmi(region=region, image_id=image_id, details=details, parse_error=error)
