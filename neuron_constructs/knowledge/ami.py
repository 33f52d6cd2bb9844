"""The ECS-optimized Amazon Linux 2023 Neuron AMI, as its public SSM parameters publish it.

``/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended`` holds a JSON object
(``image_id``, ``image_name``, ``ecs_agent_version``, ``ecs_runtime_version``, ``os``, ...);
``.../recommended/image_id`` holds the image id alone and is what the Auto Scaling capacity's
launch template resolves at deploy time. :func:`resolve_neuron_ami` reads both in one
``ssm:GetParameters`` call.

Every release has parameters of its own beside ``recommended``, named after the AMI:
``.../neuron/al2023-ami-ecs-neuron-hvm-2023.0.<YYYYMMDD>-kernel-6.1-x86_64`` (JSON, as ``recommended``) and the same
with ``/image_id`` (ECS guide: "Retrieving Amazon ECS-optimized Linux AMI metadata", which gives the
``amazon-linux-2023/<variant>/<image name>`` form for a specific version; the AMI name is
``${ami_name_prefix_al2023}-neuron-hvm-2023.0.${ami_version_al2023}${kernel_version_al2023}-x86_64`` in
aws/amazon-ecs-ami ``al2023neu.pkr.hcl``, with the prefix ``al2023-ami-ecs`` and the kernel ``-kernel-6.1``).
:class:`NeuronAmi` names one of them (or ``recommended``); :func:`list_neuron_ami_releases` lists them.
Pure boto3, no AWS CDK import.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.knowledge import rules

__all__ = [
    "NEURON_AMI_IMAGE_ID_PARAMETER",
    "NEURON_AMI_PARAMETERS",
    "NEURON_AMI_PARAMETER_PATH",
    "NEURON_AMI_RELEASES_PATH",
    "STANDARD_ECS_AMI_PARAMETERS",
    "AmiNotPublishedError",
    "AmiRelease",
    "NeuronAmi",
    "NotSsmAnswerError",
    "PublishedNeuronAmi",
    "kernel_line",
    "list_neuron_ami_releases",
    "release_date",
    "resolve_neuron_ami",
    "today",
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


NEURON_AMI_RELEASES_PATH = NEURON_AMI_PARAMETER_PATH.rsplit("/", 1)[0]
"""The SSM path under which ``recommended`` and every release of the ECS AL2023 Neuron AMI have their parameters."""

_RELEASE = re.compile(r"^2023\.0\.(?P<date>20\d{6})$")
_KERNEL = re.compile(r"^\d{1,2}\.\d{1,3}$")
_RELEASE_NAME = re.compile(
    r"^al2023-ami-ecs-neuron-hvm-(?P<release>2023\.0\.20\d{6})-kernel-(?P<kernel>\d{1,2}\.\d{1,3})-x86_64$"
)


def _valid_date(digits: str) -> bool:
    return _date(digits) is not None


def _date(digits: str) -> datetime.date | None:
    try:
        return datetime.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except ValueError:
        return None


def release_date(version: object) -> datetime.date | None:
    """The calendar date an ECS AL2023 Neuron AMI release is named for (``2023.0.YYYYMMDD``), or ``None`` for anything
    that is no release's name."""
    match = _RELEASE.match(version) if isinstance(version, str) else None
    return _date(match["date"]) if match is not None else None


def kernel_line(kernel: object) -> bool:
    """Whether ``kernel`` is a Linux kernel line as an AMI release's name carries it (``"6.1"``)."""
    return isinstance(kernel, str) and _KERNEL.match(kernel) is not None


def today() -> datetime.date:
    """Today's date in UTC, the calendar AMI release dates are written in (the clock :meth:`NeuronAmi.release` reads;
    tests replace it)."""
    return datetime.datetime.now(datetime.UTC).date()


@dataclass(frozen=True)
class NeuronAmi:
    """Which ECS AL2023 Neuron AMI Auto Scaling capacity launches: one release, or whatever is recommended.

    * :meth:`release` - one release, ``NeuronAmi.release("2023.0.20261113")``: the launch template resolves that
      release's own SSM parameter (:attr:`parameter_name`), whose value never changes, so a deploy changes the image
      only when you change the release; a new release is rolled out over the group
      (``add_ec2_capacity(ami_rollout=)``).
    * :meth:`recommended` - the default: the ``recommended/image_id`` parameter, resolved by CloudFormation at every
      deploy. Once AWS publishes a new AMI (about weekly), the next deploy writes a new launch template version:
      instances launched after it run the new AMI - a new Neuron driver - while those running keep the old one
      (NEURON125).

    ``version`` is ``None`` for :meth:`recommended`. Build one with the class methods.
    """

    version: str | None = None
    kernel: str = "6.1"

    @classmethod
    def release(cls, version: str, *, kernel: str = "6.1") -> NeuronAmi:
        """The release ``version`` (``"2023.0.YYYYMMDD"``, as ``neuron-ecs ami --releases`` lists them) on Linux
        kernel ``kernel`` (the ``-kernel-6.1`` of the AMI's name): NEURON086 otherwise, and for a date after today
        (UTC, :func:`today`), whose release's SSM parameter does not exist yet."""
        where = f"NeuronAmi.release({version!r})"
        match = _RELEASE.match(version) if isinstance(version, str) else None
        if match is None or not _valid_date(match["date"]):
            raise rules.AMI_RELEASE.error(where, f"{version!r} is not an ECS AL2023 AMI release")
        built, now = _date(match["date"]), today()
        if built is not None and built > now:
            # The release's SSM parameter cannot exist yet: CloudFormation would fail to resolve it at deploy.
            raise rules.AMI_RELEASE.error(
                where,
                f"{version!r} is dated {built.isoformat()}, after today ({now.isoformat()} UTC): no such release yet",
            )
        if not kernel_line(kernel):
            raise rules.AMI_RELEASE.error(where, f"kernel={kernel!r} is not a kernel line such as '6.1'")
        return cls(version=version, kernel=kernel)

    @classmethod
    def recommended(cls) -> NeuronAmi:
        """The ``recommended`` AMI, resolved at every deploy: what ``add_ec2_capacity`` launches by default."""
        return cls()

    @property
    def pinned(self) -> bool:
        """Whether this is one release (its image changes only when you change it)."""
        return self.version is not None

    @property
    def image_name(self) -> str | None:
        """The release's AMI name (``None`` for :meth:`recommended`)."""
        if self.version is None:
            return None
        return f"al2023-ami-ecs-neuron-hvm-{self.version}-kernel-{self.kernel}-x86_64"

    @property
    def details_parameter(self) -> str:
        """The SSM parameter whose value is the JSON object describing this AMI."""
        return NEURON_AMI_PARAMETER_PATH if self.image_name is None else f"{NEURON_AMI_RELEASES_PATH}/{self.image_name}"

    @property
    def parameter_name(self) -> str:
        """The SSM parameter holding only the image id: what the launch template resolves at deploy time."""
        return f"{self.details_parameter}/image_id"

    def describe(self) -> str:
        return f"release {self.version}" if self.version else "the recommended AMI"


@dataclass(frozen=True)
class AmiRelease:
    """One release of the ECS AL2023 Neuron AMI a region publishes (``list_neuron_ami_releases``)."""

    release: str
    kernel: str
    parameter: str
    image_id: str | None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "kernel": self.kernel,
            "parameter": self.parameter,
            "image_id": self.image_id,
            "details": dict(self.details),
        }


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
class PublishedNeuronAmi:
    """The recommended AMI in one region, as ``resolve_neuron_ami`` read it.

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


def resolve_neuron_ami(ssm: Any, region: str) -> PublishedNeuronAmi:
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
    return PublishedNeuronAmi(region=region, image_id=image_id, details=details, parse_error=error)


MAX_RELEASE_PAGES = 40
"""``list_neuron_ami_releases`` reads at most this many pages of 10 parameters (ten years of weekly releases)."""
MAX_RELEASE_SECONDS = 60.0
"""... and stops asking for more pages after this long, listing what it read."""
MAX_VALUE_CHARS = 8192
"""The largest value SSM stores (an advanced parameter, 8 KB); a longer one is not parsed."""


def _release_of(parameter: Mapping[str, Any]) -> AmiRelease | None:
    name, value = parameter.get("Name"), parameter.get("Value")
    if not isinstance(name, str) or not name.startswith(NEURON_AMI_RELEASES_PATH + "/"):
        return None
    match = _RELEASE_NAME.match(name.removeprefix(NEURON_AMI_RELEASES_PATH + "/"))
    if match is None or not _valid_date(match["release"][-8:]):
        return None  # recommended, an image id alone, or a name of another form
    details: dict[str, Any] = {}
    if isinstance(value, str) and len(value) <= MAX_VALUE_CHARS:
        details, _ = _parse(value)
    image_id = details.get("image_id")
    return AmiRelease(
        release=match["release"],
        kernel=match["kernel"],
        parameter=f"{name}/image_id",
        image_id=image_id if isinstance(image_id, str) else None,
        details=details,
    )


def list_neuron_ami_releases(
    ssm: Any,
    *,
    max_pages: int = MAX_RELEASE_PAGES,
    max_seconds: float = MAX_RELEASE_SECONDS,
    clock: Any = None,
) -> tuple[list[AmiRelease], str | None]:
    """The releases of the ECS AL2023 Neuron AMI the ``ssm`` client's region publishes, newest first, and a sentence
    when the list is incomplete (``None`` when it is whole).

    One ``ssm:GetParametersByPath`` page after another under :data:`NEURON_AMI_RELEASES_PATH`, not recursive (a
    release's JSON parameter, not its ``/image_id``), skipping ``recommended`` and any name that is not a release;
    at most ``max_pages`` pages and ``max_seconds`` seconds. Raises :class:`NotSsmAnswerError` when an answer is not
    the SSM API's.
    """
    import time

    now = clock or time.monotonic
    started = now()
    found: dict[str, AmiRelease] = {}
    token: str | None = None
    for page in range(max_pages):
        request: dict[str, Any] = {"Path": NEURON_AMI_RELEASES_PATH, "Recursive": False, "MaxResults": 10}
        if token:
            request["NextToken"] = token
        response = ssm.get_parameters_by_path(**request)
        parameters = response.get("Parameters") if isinstance(response, dict) else None
        if not isinstance(parameters, list) or not all(isinstance(p, dict) for p in parameters):
            raise NotSsmAnswerError("no Parameters list in a GetParametersByPath page")
        for parameter in parameters:
            release = _release_of(parameter)
            if release is not None:
                found[release.parameter] = release
        next_token = response.get("NextToken")
        if not next_token:
            return _newest_first(found), None
        if not isinstance(next_token, str) or next_token == token:
            raise NotSsmAnswerError("a NextToken that is not a new string")
        token = next_token
        if now() - started > max_seconds:
            return _newest_first(found), (
                f"stopped after {page + 1} pages and {max_seconds:g} s: older releases may be missing"
            )
    return _newest_first(found), f"stopped after {max_pages} pages: older releases may be missing"


def _newest_first(found: Mapping[str, AmiRelease]) -> list[AmiRelease]:
    return sorted(found.values(), key=lambda r: (r.release, r.kernel), reverse=True)
