"""Neuron SDK releases, the runtime each ships, the Neuron drivers that runtime runs on, and the driver of each ECS
Neuron AMI release: the table that says whether an image's runtime and a host's driver match, both ways.

A Neuron container carries the Neuron runtime (``libnrt``, package ``aws-neuronx-runtime-lib``); the host carries the
Neuron driver (the ``neuron`` kernel module, package ``aws-neuronx-dkms``). They fail at ``nrt_init()``, when the model
loads, if they do not match, and the release notes say they stop matching in both directions:

* an old driver under a new runtime: "Neuron Runtime Library 2.32 is not backward-compatible with Neuron Driver 2.26
  or earlier" (runtime release notes, Neuron 2.30.0, Known Issues; "A fix to restore backward compatibility is
  planned for a future patch release", and no later note says it shipped, so the library keeps driver 2.27 as the
  floor of every later runtime too);
* a new driver under an old runtime: "Neuron Driver 2.29 requires Neuron Runtime Library 2.33 or later" (runtime
  release notes, Neuron 2.31.0, Known Issues), so every runtime before 2.33 runs on driver 2.28 at most.

Where the notes state no bound, the bound is ``None`` (unknown, not "any").

Sources of the rows (:data:`NEURON_RELEASES`): the runtime and driver package versions of each release are the
Neuron setup manifest ``src/helperscripts/n2-manifest.json`` of aws-neuron/aws-neuron-sdk
(:data:`MANIFEST_SOURCE`), which the documentation's "Release artifacts" pages print; the release dates are the
release notes' "Date of release" (:data:`RUNTIME_NOTES_SOURCE`, and each row's own source). Releases after the
manifest's newest (2.32.0) come from the published documentation pages each row names. The runtime and driver versions
of SDK 2.33.1 (a patch release of bug fixes, November 11, 2026) and SDK 2.34.0 are not in any source found, so their
rows have ``None`` for both: an AMI built after either carries "2.31 or later", a floor, never a guessed number.

The driver of an ECS Neuron AMI release. No release note of the ECS AMIs lists the Neuron driver. The AMI build
(aws/amazon-ecs-ami ``scripts/enable-ecs-agent-inferentia-support.sh``, :data:`ECS_AMI_BUILD_SOURCE`) runs
``yum install -y aws-neuronx-dkms`` (the newest driver in the Neuron repository) and then deletes the Neuron
repository ("disable neuron package upgrades"), so an instance keeps the driver its AMI was built with. The library
therefore *derives* an AMI's driver (:func:`ami_driver`): the driver of the newest Neuron release published on or
before the date in the AMI's name (``2023.0.YYYYMMDD``). An AMI dated less than :data:`AMBIGUITY_DAYS` days after a
driver release may have been built before that driver reached the repository: both drivers are then possible, and
:func:`ami_driver_conflict` refuses only what every possible driver refuses. Drivers only move forward, so where the
table cannot name the driver it still bounds it: an AMI built after a release whose driver no source gives (SDK
2.34.0) carries at least the newest known driver (a floor, "2.31 or later"), and an AMI older than the releases the
table lists in full (:data:`COVERED_FROM`) carries a driver older than that release's ("older than 2.19"), never a
number the table would have to guess. On Inf1 the AMI does not run that driver: a boot service
(``scripts/al2023/neuron/neuron-inf1-downgrade.sh``) detects Inf1 devices and installs the cached
``aws-neuronx-dkms-2.21.*`` packages the build downloaded, and locks them (:data:`INF1_AMI_DRIVER`), in every AMI
release from :data:`INF1_DOWNGRADE_FROM` on (:data:`INF1_DOWNGRADE_SOURCE`).

Inf1 and SDK 2.21.0: SDK 2.21.0 (December 20, 2024) ships runtime 2.23, whose notes say "Removed INF1 Support from
Runtime library": the last release that runs Inf1 is SDK 2.20.x (runtime 2.22).

The Inf1 driver, two sources that name different numbers. Neuron's "Correction: Neuron Driver support for Inf1 -
version 2.24 (not 2.21)" (announcement of March 12, 2026, :data:`INF1_DRIVER_CORRECTION_SOURCE`) says the last driver
Neuron supports on Inf1 is 2.24 (:data:`INF1_LAST_SUPPORTED_DRIVER`; 2.24.13.0 is its patch for Linux 6.18), replacing
the earlier announcement's 2.21. The ECS Neuron AMI still installs 2.21 on Inf1 (:data:`ECS_AMI_BUILD_SOURCE`: the
build downloads ``aws-neuronx-dkms-2.21.*`` and the boot service installs it). The library assumes 2.21
(:data:`INF1_AMI_DRIVER`) wherever it derives the driver an Inf1 instance runs, because that is the driver the instance
loads: the correction says what Neuron supports, the AMI's scripts say what it installs, and a driver check compares an
image's runtime with what runs. Neither number refuses the Inf1 image the library knows (SDK 2.20.2, runtime 2.22,
which no note bounds).

Support by instance family (:data:`SUPPORT_ENDS`, :func:`unsupported`): besides whether a runtime runs on a driver,
Neuron ends support of a family for a release, or of a component on a family: Inf1 from SDK 2.21.0 (its runtime), and
NxD Inference (with the NxD Core inference APIs) on Trn2 and Trn3 from SDK 2.34.0, for every release, since "Neuron
provides no further releases, bug fixes, or security patches for these libraries on Trn2 and Trn3" (announcement of
November 17, 2026, :data:`NXDI_TRN_END_SOURCE`); vLLM Neuron, which does not depend on NxD Inference, is the path it
names, generally available from SDK 2.34.0 (:data:`VLLM_NEURON_GA_SOURCE`); and PyTorch/XLA inference on Trn2 and
Trn3 from SDK 2.34.0 as well (:data:`TORCH_XLA_TRN_END_SOURCE`).

Plain Python, no AWS CDK.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

__all__ = [
    "AMBIGUITY_DAYS",
    "COVERED_FROM",
    "ECS_AMI_BUILD_SOURCE",
    "INF1_AMI_DRIVER",
    "INF1_DOWNGRADE_FROM",
    "INF1_DOWNGRADE_SOURCE",
    "INF1_DRIVER_CORRECTION_SOURCE",
    "INF1_LAST_SDK",
    "INF1_LAST_SUPPORTED_DRIVER",
    "INF1_REMOVED_SDK",
    "MANIFEST_SOURCE",
    "NEURON_RELEASES",
    "NXDI",
    "NXDI_TRN_END_SOURCE",
    "RUNTIME_NOTES_SOURCE",
    "SUPPORT_ENDS",
    "TORCH_XLA_INFERENCE",
    "TORCH_XLA_TRN_END_SOURCE",
    "VLLM_NEURON_GA_SOURCE",
    "AmiDriver",
    "DriverRange",
    "NeuronRelease",
    "SupportEnd",
    "ami_driver",
    "ami_driver_conflict",
    "driver_range",
    "newest_driver",
    "newest_driver_conflict",
    "parse_ami_release",
    "parse_driver_version",
    "release",
    "unsupported",
]

_SDK_REPO = "https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155"
MANIFEST_SOURCE = (
    f"{_SDK_REPO}/src/helperscripts/n2-manifest.json (neuron_releases: aws-neuronx-runtime-lib, aws-neuronx-dkms)"
)
"""Where each release's runtime and driver package versions up to SDK 2.32.0 are published."""
RUNTIME_NOTES_SOURCE = f"{_SDK_REPO}/release-notes/components/runtime.rst"
"""The Neuron runtime component release notes: dates, driver versions and the compatibility notes."""
_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en"
_ECS_AMI = "https://github.com/aws/amazon-ecs-ami/blob/a2532d3503f2052a09ac18189b0de33918406db8"
ECS_AMI_BUILD_SOURCE = (
    f"{_ECS_AMI}/scripts/enable-ecs-agent-inferentia-support.sh (al2023neu: "
    "'sudo dnf download aws-neuronx-dkms-2.21.*' into /opt/ecs/neuron/inf1-rpms, then "
    "'sudo yum install -y aws-neuronx-dkms'; then 'disable neuron package upgrades "
    f"by deleting the yum repo'); {_ECS_AMI}/scripts/al2023/neuron/neuron-inf1-downgrade.sh (on Inf1 hardware, PCI ids "
    "1d0f:7064-7067, installs the cached packages before ecs.service and version-locks them)"
)
"""Where the ECS Neuron AMI's driver comes from: the newest at build time, the 2.21 driver on Inf1."""

AMBIGUITY_DAYS = 7
"""An AMI dated fewer days than this after a driver's release may predate that driver in the Neuron repository (the
ECS AMIs are released about weekly): both drivers are then possible."""


def parse_driver_version(text: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a Neuron driver version (``"2.29.0.0"``, ``"2.29"``, the first line of
    ``/sys/module/neuron/version``); ``None`` for anything else. Reads at most 64 characters."""
    match = re.match(r"\s*(\d{1,4})\.(\d{1,4})(?:\.\d{1,9}){0,2}\s*$", text[:64].split("\n", 1)[0])
    return (int(match.group(1)), int(match.group(2))) if match else None


def _version(text: str) -> tuple[int, int]:
    parsed = parse_driver_version(text)
    if parsed is None:
        raise ValueError(f"{text!r} is not a version")
    return parsed


@dataclass(frozen=True)
class DriverRange:
    """The Neuron drivers (``major.minor``) a runtime runs on: ``oldest`` to ``newest``, both included; ``None`` where
    no release note states that bound."""

    oldest: tuple[int, int] | None
    newest: tuple[int, int] | None
    source: str

    def admits(self, driver: tuple[int, int]) -> bool:
        """Whether ``driver`` is inside the range (an unknown bound admits)."""
        return (self.oldest is None or driver >= self.oldest) and (self.newest is None or driver <= self.newest)

    def describe(self) -> str:
        """``"driver 2.27 to 2.28"``, ``"driver 2.27 or later"``, ``"driver 2.28 or earlier"``."""
        low = f"{self.oldest[0]}.{self.oldest[1]}" if self.oldest else None
        high = f"{self.newest[0]}.{self.newest[1]}" if self.newest else None
        if low and high:
            return f"driver {low} to {high}"
        if low:
            return f"driver {low} or later"
        return f"driver {high} or earlier" if high else "any driver the notes do not exclude"


@dataclass(frozen=True)
class NeuronRelease:
    """One Neuron SDK release: its date, the runtime and driver package versions it ships, where that is published."""

    sdk: str
    date: datetime.date | None
    runtime: str | None
    driver: str | None
    source: str

    @property
    def runtime_version(self) -> tuple[int, int] | None:
        """``(major, minor)`` of the ``runtime`` version."""
        return parse_driver_version(self.runtime) if self.runtime else None

    @property
    def driver_version(self) -> tuple[int, int] | None:
        """``(major, minor)`` of the ``driver`` version."""
        return parse_driver_version(self.driver) if self.driver else None


def _row(sdk: str, date: str | None, runtime: str | None, driver: str | None, source: str) -> NeuronRelease:
    return NeuronRelease(sdk, datetime.date.fromisoformat(date) if date else None, runtime, driver, source)


_MANIFEST = "n2-manifest.json"
_INDEX = f"{_SDK_REPO}/release-notes/index.rst, Previous AWS Neuron SDK releases"
_RELEASES = "https://github.com/aws-neuron/aws-neuron-sdk/releases/tag"
NEURON_RELEASES: tuple[NeuronRelease, ...] = (
    _row("2.20.0", None, "2.22.14.0", "2.18.12.0", f"{_MANIFEST}; date not in the sources cited"),
    _row("2.20.1", None, "2.22.14.0", "2.18.12.0", f"{_MANIFEST}; date not in the sources cited"),
    _row("2.20.2", None, "2.22.19.0", "2.18.20.0", f"{_MANIFEST}; date not in the sources cited"),
    _row("2.21.0", "2024-12-20", "2.23.110.0", "2.19.64.0", f"{_MANIFEST}; runtime.rst, Neuron 2.21.0 Release"),
    _row("2.21.1", "2025-01-14", "2.23.112.0", "2.19.64.0", f"{_MANIFEST}; {_INDEX} (2.21.1: 01/14/25)"),
    _row("2.22.0", "2025-04-03", "2.24.53.0", "2.20.28.0", f"{_MANIFEST}; runtime.rst, Neuron 2.22.0 Release"),
    _row(
        "2.23.0",
        "2025-05-19",
        "2.25.57.0",
        "2.21.37.0",
        f"{_MANIFEST}; runtime.rst, Neuron 2.23.0 Release ('Date of Release: 05/19/2025'; {_INDEX} says 06/10/25)",
    ),
    _row("2.24.0", "2025-06-24", "2.26.42.0", "2.22.2.0", f"{_MANIFEST}; runtime.rst, Neuron 2.24.0 Release"),
    _row("2.24.1", "2025-06-30", "2.26.42.0", "2.22.2.0", f"{_MANIFEST}; {_INDEX} (2.24.1: 06/30/25)"),
    _row("2.25.0", "2025-07-31", "2.27.23.0", "2.23.9.0", f"{_MANIFEST}; runtime.rst, Neuron 2.25.0 Release"),
    _row("2.26.0", "2025-09-18", "2.28.23.0", "2.24.7.0", f"{_MANIFEST}; runtime.rst, Neuron 2.26.0 Release"),
    _row(
        "2.26.1",
        "2025-10-29",
        "2.28.23.0",
        "2.24.7.0",
        f"{_MANIFEST}; {_SDK_REPO}/release-notes/prev/2.26.1.rst ('Release Date: October 29, 2025')",
    ),
    _row("2.27.0", "2025-12-19", "2.29.40.0", "2.25.4.0", f"{_MANIFEST}; runtime.rst, Neuron 2.27.0 Release"),
    _row(
        "2.27.1",
        "2026-01-14",
        "2.29.40.0",
        "2.25.4.0",
        f"{_MANIFEST}; {_SDK_REPO}/release-notes/prev/2.27.1.rst ('Release Date: January 14, 2026')",
    ),
    _row("2.28.0", "2026-02-26", "2.30.51.0", "2.26.5.0", f"{_MANIFEST}; runtime.rst, Neuron 2.28.0 Release"),
    _row(
        "2.28.1",
        "2026-03-12",
        "2.30.51.0",
        "2.26.10.0",
        f"{_MANIFEST}; runtime.rst, Neuron Driver 2.26.10.0 'Date of Release: 03/12/2026'",
    ),
    _row("2.29.0", "2026-04-09", "2.31.24.0", "2.27.4.0", f"{_MANIFEST}; runtime.rst, Neuron 2.29.0 Release"),
    _row(
        "2.29.1",
        "2026-05-01",
        "2.31.24.0",
        "2.27.4.0",
        f"{_MANIFEST}; {_SDK_REPO}/release-notes/prev/2.29.1.rst ('Release Date: May 1, 2026', compiler only)",
    ),
    _row("2.30.0", "2026-05-21", "2.32.31.0", "2.28.0.0", f"{_MANIFEST}; runtime.rst, Neuron 2.30.0 Release"),
    _row("2.31.0", "2026-07-07", "2.33.10.0", "2.29.0.0", f"{_MANIFEST}; runtime.rst, Neuron 2.31.0 Release"),
    _row(
        "2.31.1",
        "2026-08-12",
        "2.33.10.0",
        "2.29.0.0",
        f"{_MANIFEST}; {_SDK_REPO}/release-notes/2.31.1.rst ('Release Date: August 12, 2026', tools only)",
    ),
    _row("2.32.0", "2026-08-17", "2.34.10.0", "2.30.2.0", f"{_MANIFEST}; runtime.rst, Neuron 2.32.0 Release"),
    _row(
        "2.33.0",
        "2026-10-19",
        "2.35.30.0",
        "2.31.7.0",
        f"{_DOCS}/v2.33.0/release-notes/components/index.html (Neuron Runtime Library 2.35.30.0, Neuron Driver "
        f"2.31.7.0); {_DOCS}/latest/_sources/release-notes/2.33.0.rst ('Date of release: October 19, 2026')",
    ),
    _row(
        "2.33.1",
        "2026-11-11",
        None,
        None,
        f"{_RELEASES}/v2.33.1 ('Neuron SDK Release - November 11, 2026': 'Release 2.33.1 of the AWS Neuron SDK "
        "includes bug fixes applied to the AWS Neuron SDK v2.33.0'); its runtime and driver versions are in no source "
        "found",
    ),
    _row(
        "2.34.0",
        "2026-11-30",
        None,
        None,
        f"{_DOCS}/latest/_sources/release-notes/2.34.0.rst ('Date of release: November 30, 2026'); its runtime and "
        "driver versions are in no source found",
    ),
)
"""The Neuron SDK releases the library's images and the current ECS Neuron AMIs involve, oldest first."""

INF1_REMOVED_SDK = "2.21.0"
"""The SDK release whose runtime (2.23) "Removed INF1 Support from Runtime library" (runtime.rst, Neuron 2.21.0)."""
INF1_LAST_SDK = "2.20.2"
"""The last SDK release whose runtime (2.22) runs on Inf1."""
INF1_AMI_DRIVER = (2, 21)
"""The driver the ECS Neuron AMI runs on Inf1: ``aws-neuronx-dkms-2.21.*``, installed at boot
(:data:`ECS_AMI_BUILD_SOURCE`). What the library assumes an Inf1 instance runs: the driver it loads, older than the
last one Neuron supports there (:data:`INF1_LAST_SUPPORTED_DRIVER`)."""
INF1_LAST_SUPPORTED_DRIVER = (2, 24)
"""The last Neuron driver Neuron supports on Inf1 (:data:`INF1_DRIVER_CORRECTION_SOURCE`): "Neuron driver versions above
2.24 only support non-Inf1 instances"."""
INF1_DRIVER_CORRECTION_SOURCE = (
    f"{_DOCS}/latest/about-neuron/announcements/neuron2.x/announce-correction-neuron-driver-support-inf1.html "
    "('Correction: Neuron Driver support for Inf1 - version 2.24 (not 2.21)', posted March 12, 2026: 'The last "
    "supported version is 2.24'; it supersedes 'Upcoming changes to Neuron driver 2.21 support for Inf1 starting "
    "Neuron 2.26 release'); runtime release notes 2.26.0, Neuron Driver 2.24.13.0: 'Neuron driver version 2.24 is the "
    "last driver version to support Inf1 instances'"
)
"""Where :data:`INF1_LAST_SUPPORTED_DRIVER` comes from."""
INF1_DOWNGRADE_FROM = datetime.date(2026, 1, 8)
"""The first ECS Neuron AMI release that carries the Inf1 driver downgrade service (:data:`INF1_DOWNGRADE_SOURCE`)."""
INF1_DOWNGRADE_SOURCE = (
    "aws/amazon-ecs-ami commit 130a7f3268bde8d308be1b0e331f6303d171ec6f ('Add back neuron driver version management "
    "for al2023neu AMI (#604)', 2026-01-05, adds scripts/al2023/neuron/neuron-inf1-downgrade.sh); the first release "
    "after it is 'Release 20260108' (02a893b)"
)
"""Where :data:`INF1_DOWNGRADE_FROM` comes from (an earlier attempt, #596, was reverted on 2025-12-17 by #602)."""

NXDI = "NxD Inference"
"""The component name :data:`SUPPORT_ENDS` and the image table use for NeuronX Distributed Inference (with the NxD Core
inference APIs it runs on), which the legacy vLLM 0.16 image and the PyTorch inference image carry."""
NXDI_TRN_END_SOURCE = (
    f"{_DOCS}/latest/_sources/about-neuron/announcements/neuron2.x/announce-no-support-nxdi-nxd-core-inference-trn.rst "
    "('Neuron no longer supports NxD Inference and NxD Core inference APIs on Trn2 and Trn3 starting with Neuron "
    "2.34', posted November 17, 2026: 'Neuron provides no further releases, bug fixes, or security patches for these "
    "libraries on Trn2 and Trn3 ... To serve models on Trn2 and Trn3, migrate to vLLM Neuron'; on Inf2 and Trn1 they "
    "stay in maintenance mode)"
)
"""Where the end of NxD Inference on Trn2 and Trn3 is announced."""
TORCH_XLA_INFERENCE = "PyTorch/XLA inference"
"""The component name for inference through PyTorch/XLA (torch-neuronx), which the PyTorch inference image runs."""
TORCH_XLA_TRN_END_SOURCE = (
    f"{_DOCS}/latest/about-neuron/announcements/neuron2.x/announce-no-support-torch-xla-inference-trn.html ('Neuron no "
    "longer supports PyTorch/XLA inference on Trn2 and Trn3 starting with Neuron 2.34': 'To run inference on Trn2 and "
    "Trn3, use TorchNeuron ... To serve large language models, use vLLM Neuron')"
)
"""Where the end of PyTorch/XLA inference on Trn2 and Trn3 is announced."""
VLLM_NEURON_GA_SOURCE = (
    f"{_RELEASES}/v2.34.0 ('Neuron SDK Release - November 30, 2026': 'vLLM Neuron is now generally available for "
    "large language model (LLM) inference')"
)
"""Where vLLM Neuron's general availability (SDK 2.34.0) is published."""


@dataclass(frozen=True)
class SupportEnd:
    """Neuron ends support of ``family`` from SDK release ``from_sdk``: of the whole release (its runtime) when
    ``component`` is ``None``, else of that component. ``every_release``: the end covers earlier releases too (no
    further fixes for any release), not only ``from_sdk`` and later."""

    family: str
    from_sdk: str
    component: str | None
    every_release: bool
    source: str


SUPPORT_ENDS: tuple[SupportEnd, ...] = (
    SupportEnd("inf1", INF1_REMOVED_SDK, None, False, f"{RUNTIME_NOTES_SOURCE}, Neuron 2.21.0 (Inf1 removed)"),
    SupportEnd("trn2", "2.34.0", NXDI, True, NXDI_TRN_END_SOURCE),
    SupportEnd("trn3", "2.34.0", NXDI, True, NXDI_TRN_END_SOURCE),
    SupportEnd("trn2", "2.34.0", TORCH_XLA_INFERENCE, True, TORCH_XLA_TRN_END_SOURCE),
    SupportEnd("trn3", "2.34.0", TORCH_XLA_INFERENCE, True, TORCH_XLA_TRN_END_SOURCE),
)
"""Where Neuron's support of an instance family ends, for a release or for a component on it."""


def _sdk_version(sdk: str) -> tuple[int, ...]:
    return tuple(int(part) for part in sdk.split("."))


def unsupported(sdk: str, family: str, components: tuple[str, ...] = (), current: str | None = None) -> str | None:
    """Why Neuron does not support SDK release ``sdk`` (with ``components``) on instance ``family``, as of SDK release
    ``current`` (default the newest of :data:`NEURON_RELEASES`); ``None`` when it does, as far as :data:`SUPPORT_ENDS`
    tells."""
    now = _sdk_version(current or NEURON_RELEASES[-1].sdk)
    for end in SUPPORT_ENDS:
        if end.family != family or (end.component is not None and end.component not in components):
            continue
        start = _sdk_version(end.from_sdk)
        if _sdk_version(sdk) >= start or (end.every_release and now >= start):
            what = f"{end.component} of Neuron SDK {sdk}" if end.component else f"Neuron SDK {sdk}"
            return f"{what} is not supported on {family} from Neuron {end.from_sdk} ({end.source})"
    return None


COVERED_FROM = "2.21.0"
"""The table lists every SDK release from this one on (the manifest's releases, with the dates of the release notes):
an AMI built before it carries a driver older than this release's, and the table states no number for it."""

_FLOOR_RUNTIME, _FLOOR_DRIVER = (2, 32), (2, 27)
_FLOOR_SOURCE = (
    f"{RUNTIME_NOTES_SOURCE}, Neuron 2.30.0, Known Issues: 'Neuron Runtime Library 2.32 is not backward-compatible "
    "with Neuron Driver 2.26 or earlier' (no later note says the planned fix shipped)"
)
_CEILING_RUNTIME, _CEILING_DRIVER = (2, 33), (2, 28)
_CEILING_SOURCE = (
    f"{RUNTIME_NOTES_SOURCE}, Neuron 2.31.0, Known Issues: 'Neuron Driver 2.29 requires Neuron Runtime Library 2.33 "
    "or later'"
)


def release(sdk: str) -> NeuronRelease | None:
    """The row of SDK release ``sdk`` (``"2.33.0"``), ``None`` when the table has none."""
    return next((row for row in NEURON_RELEASES if row.sdk == sdk), None)


def driver_range(sdk: str) -> DriverRange | None:
    """The drivers the runtime of SDK release ``sdk`` runs on; ``None`` when the release or its runtime is unknown."""
    row = release(sdk)
    runtime = row.runtime_version if row else None
    if runtime is None:
        return None
    oldest = _FLOOR_DRIVER if runtime >= _FLOOR_RUNTIME else None
    newest = _CEILING_DRIVER if runtime < _CEILING_RUNTIME else None
    sources = [s for s, applies in ((_FLOOR_SOURCE, oldest), (_CEILING_SOURCE, newest)) if applies]
    return DriverRange(oldest, newest, "; ".join(sources) or "no release note bounds this runtime's driver")


_AMI_RELEASE = re.compile(r"2023\.0\.(\d{8})")


def parse_ami_release(text: str) -> datetime.date:
    """The date of an ECS AL2023 Neuron AMI release (``"2023.0.20261113"``); ``ValueError`` for anything else."""
    match = _AMI_RELEASE.fullmatch(text.strip()[:32])
    if not match:
        raise ValueError(f"{text[:40]!r} is not an ECS AL2023 AMI release (2023.0.YYYYMMDD)")
    digits = match.group(1)
    try:
        return datetime.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except ValueError:
        raise ValueError(f"{text[:40]!r} does not name a calendar date") from None


@dataclass(frozen=True)
class AmiDriver:
    """The Neuron driver an ECS Neuron AMI release was built with, as :func:`ami_driver` derives it.

    ``drivers`` are the possible drivers (``major.minor``), newest first: one, or two when the AMI is dated within
    :data:`AMBIGUITY_DAYS` of a driver release. Empty when the table cannot name the driver; it may still bound it:
    ``floor`` (the driver is that one or later: the AMI was built after a release whose driver no source gives,
    ``unknown_after`` names that release), ``older_than`` (the driver is older than that one: the AMI predates
    :data:`COVERED_FROM`) or ``at_most`` (that one or older: the AMI is dated within :data:`AMBIGUITY_DAYS` of
    :data:`COVERED_FROM`). No bound at all: unknown.
    """

    ami_release: str
    date: datetime.date
    drivers: tuple[tuple[int, int], ...]
    unknown_after: str | None = None
    floor: tuple[int, int] | None = None
    older_than: tuple[int, int] | None = None
    at_most: tuple[int, int] | None = None

    def describe(self) -> str:
        """``"2.31"``, ``"2.31 or 2.30"``, ``"2.31 or later"``, ``"older than 2.26"``, ``"2.26 or older"``, or
        ``"unknown"``."""
        if self.drivers:
            return " or ".join(f"{major}.{minor}" for major, minor in self.drivers)
        for bound, words in ((self.floor, "{}.{} or later"), (self.older_than, "older than {}.{}")):
            if bound is not None:
                return words.format(*bound)
        return "{}.{} or older".format(*self.at_most) if self.at_most else "unknown"

    def outside(self, allowed: DriverRange) -> bool:
        """Whether every driver the AMI may carry is outside ``allowed`` (an unknown driver is never outside)."""
        if self.drivers:
            return not any(allowed.admits(d) for d in self.drivers)
        if self.floor is not None:
            return allowed.newest is not None and allowed.newest < self.floor
        if self.older_than is not None:
            return allowed.oldest is not None and allowed.oldest >= self.older_than
        return self.at_most is not None and allowed.oldest is not None and allowed.oldest > self.at_most


def ami_driver(ami_release: str, instance_family: str | None = None) -> AmiDriver:
    """The driver of ECS Neuron AMI release ``ami_release`` (derived; see the module's notes). On ``inf1`` it is
    :data:`INF1_AMI_DRIVER` for AMIs that carry the downgrade service (:data:`INF1_DOWNGRADE_FROM` or later)."""
    date = parse_ami_release(ami_release)
    if instance_family == "inf1" and date >= INF1_DOWNGRADE_FROM:
        return AmiDriver(ami_release, date, (INF1_AMI_DRIVER,))
    covered = NEURON_RELEASES[[row.sdk for row in NEURON_RELEASES].index(COVERED_FROM) :]
    first = covered[0]
    assert first.date is not None and first.driver_version is not None
    if date < first.date:
        return AmiDriver(ami_release, date, (), older_than=first.driver_version)
    dated = [row for row in covered if row.date is not None and row.date <= date]
    newest = dated[-1]
    known = [row for row in dated if row.driver_version is not None]
    if newest.driver_version is None:
        # Drivers only move forward: at least the newest known driver that had surely reached the repository.
        sure = [row for row in known if row.date and (date - row.date).days >= AMBIGUITY_DAYS]
        floor = (sure or known)[-1].driver_version
        return AmiDriver(ami_release, date, (), unknown_after=newest.sdk, floor=floor)
    # Every release of the last AMBIGUITY_DAYS may not have reached the repository yet: the AMI carries the driver of
    # one of them or of the newest release before them (a patch release that keeps the driver's minor adds nothing).
    recent = [row for row in known if row.date is not None and (date - row.date).days < AMBIGUITY_DAYS]
    sure = [row for row in known if row.date is not None and (date - row.date).days >= AMBIGUITY_DAYS]
    if recent and not sure:
        return AmiDriver(ami_release, date, (), at_most=newest.driver_version)
    candidates = {row.driver_version for row in (*recent, *sure[-1:]) if row.driver_version is not None}
    return AmiDriver(ami_release, date, tuple(sorted(candidates, reverse=True)))


def ami_driver_conflict(ami_release: str, sdk: str, instance_family: str | None = None) -> str | None:
    """Why the runtime of SDK release ``sdk`` does not run on the driver of AMI ``ami_release``; ``None`` when it does,
    or when the table cannot tell (an unknown SDK release or AMI driver is not refused).

    Refused only when every driver the AMI may carry is outside the runtime's range (:meth:`AmiDriver.outside`)."""
    derived = ami_driver(ami_release, instance_family)
    allowed = driver_range(sdk)
    if allowed is None or not derived.outside(allowed):
        return None
    if derived.floor is not None:
        why = f"drivers only move forward, and Neuron {derived.unknown_after}'s driver is in no source found"
    elif not derived.drivers:
        why = f"the AMI predates Neuron {COVERED_FROM}, the oldest release whose driver the table follows"
    else:
        why = f"the newest driver released by {derived.date.isoformat()}"
    row = release(sdk)
    runtime = row.runtime if row else "?"
    return (
        f"ECS Neuron AMI {ami_release} carries Neuron driver {derived.describe()} ({why}), and Neuron SDK {sdk}'s "
        f"runtime {runtime} runs on {allowed.describe()} (runtime release notes 2.30.0 and 2.31.0, Known Issues)"
    )


def newest_driver() -> NeuronRelease:
    """The newest release of the table whose driver is known: what an ECS Neuron AMI built today carries, as far as
    the sources cited tell (SDK 2.34.0's driver is in none of them)."""
    return [row for row in NEURON_RELEASES if row.driver_version is not None][-1]


def newest_driver_conflict(sdk: str) -> str | None:
    """Why the runtime of SDK release ``sdk`` does not run on :func:`newest_driver`, the driver an ECS Neuron AMI built
    today carries (what capacity that follows the recommended AMI launches new instances with); ``None`` when it
    does, or when the table cannot tell (an unknown release, or a runtime no note bounds). When a newer release's
    driver is in no source (SDK 2.34.0), that driver is a floor ("or later"): only a runtime whose newest driver is
    below it is named."""
    allowed = driver_range(sdk)
    newest = newest_driver()
    if allowed is None or newest.driver_version is None:
        return None
    floor = NEURON_RELEASES[-1].driver_version is None
    below_floor = allowed.newest is not None and allowed.newest < newest.driver_version
    if not below_floor and (floor or allowed.admits(newest.driver_version)):
        return None
    row = release(sdk)
    runtime = row.runtime if row else "?"
    later = " or later" if floor else ""
    return (
        f"Neuron SDK {sdk}'s runtime {runtime} runs on {allowed.describe()}, and an ECS Neuron AMI built today carries "
        f"driver {newest.driver} (Neuron {newest.sdk}){later} (runtime release notes 2.30.0 and 2.31.0, Known Issues)"
    )
