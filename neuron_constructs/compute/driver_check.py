"""The Neuron driver start check: a POSIX ``sh`` script that a Neuron container runs before its own entry point, and
that stops it with one line when the host's Neuron driver is outside the driver range of the image's runtime.

Where the capacity's AMI is not pinned (the recommended ECS Neuron AMI, resolved at every deploy), a new instance may
carry a driver the image's runtime does not run on, and the runtime then fails at ``nrt_init()``, when the model
loads, minutes into a start (:mod:`neuron_constructs.knowledge.neuron_releases`). With
``add_neuron_container(..., driver_check=True)`` the container's entry point becomes ``/bin/sh -c <script>`` and its
command the given ``entry_point`` followed by the given ``command``: the script reads the loaded driver's version from
``/sys/module/neuron/version`` (sysfs, which a container sees read-only), compares its ``major.minor`` with
``NEURON_DRIVER_CHECK_OLDEST`` and ``NEURON_DRIVER_CHECK_NEWEST`` (empty: no bound) and either ``exec``\\ s the command
or prints one line, ``neuron-driver-check: ...``, and exits :data:`DRIVER_CHECK_EXIT_CODE`. The line names the
container (``NEURON_DRIVER_CHECK_CONTAINER``), the rule (NEURON088, a driver outside the runtime's range), the host's
driver against the image's range, that ECS will keep restarting the task while it lands on that host, and the fix: an
AMI release dated before ``NEURON_DRIVER_CHECK_AMI_BEFORE`` (the first release of a driver newer than the range) or
from ``NEURON_DRIVER_CHECK_AMI_FROM`` on (:data:`~neuron_constructs.knowledge.neuron_releases.AMBIGUITY_DAYS` after
the first release of a driver inside it), or another image.

The script reads at most 64 bytes of the file (``dd``), accepts only ``digits.digits`` with at most four digits each
(no leading zero) before any further ``.`` part, and needs ``sh``, ``dd`` and ``head``, which every Neuron DLC (Ubuntu)
has. ``NEURON_DRIVER_CHECK_ROOT`` (default empty) prefixes ``/sys`` for tests.

The file is the kernel's attribute of the loaded ``neuron`` module (its ``MODULE_VERSION``: the driver's
``major.minor.patch.build``, as :mod:`neuron_constructs.knowledge.neuron_releases` lists every driver release); the
check runs no tool of the image, so no Neuron release's flags apply. It is outside the Neuron sysfs tree
(``/sys/devices/virtual/neuron_device``) whose nodes Neuron driver 2.31 moved (Neuron sysfs user guide, Neuron
2.33); that the move left ``/sys/module/neuron/version`` alone is assumed, as the guide's excerpts cited do not list
the moved nodes.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable

from aws_cdk import Validations
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.knowledge import neuron_releases, rules

__all__ = [
    "DRIVER_CHECK_EXIT_CODE",
    "DRIVER_CHECK_SCRIPT",
    "driver_check_environment",
    "image_sdk",
    "stated_sdk",
    "warn_unknown_sdk",
    "wrapped_start",
]

DRIVER_CHECK_EXIT_CODE = 78
"""EX_CONFIG (sysexits.h): "something was found in an unconfigured or misconfigured state"."""

DRIVER_CHECK_SCRIPT = r"""say() { printf 'neuron-driver-check: %s\n' "$*" >&2; }
file="${NEURON_DRIVER_CHECK_ROOT:-}/sys/module/neuron/version"
if [ ! -r "$file" ]; then
  say "$file is missing: the Neuron driver (aws-neuronx-dkms) is not loaded on this host, or /sys is not visible"
  exit 78
fi
line=$(dd if="$file" bs=64 count=1 2>/dev/null | head -n 1)
major=${line%%.*}
rest=${line#*.}
minor=${rest%%.*}
case "$line" in *.*) ;; *) major= ;; esac
case "$major" in ''|*[!0-9]*|0?*|?????*) major= ;; esac
case "$minor" in ''|*[!0-9]*|0?*|?????*) major= ;; esac
if [ -z "$major" ]; then
  say "cannot read a Neuron driver version (major.minor) from $file"
  exit 78
fi
have=$((major * 10000 + minor))
want="${NEURON_DRIVER_CHECK_RUNTIME:-the image's Neuron runtime}"
who="container ${NEURON_DRIVER_CHECK_CONTAINER:-?} (NEURON088)"
again="ECS will keep restarting this task, and it stops here on every host with this driver"
for bound in "${NEURON_DRIVER_CHECK_OLDEST:-}" "${NEURON_DRIVER_CHECK_NEWEST:-}"; do
  case "$bound" in ''|[0-9]*.[0-9]*) ;; *) say "bad driver bound '$bound'"; exit 78 ;; esac
done
if [ -n "${NEURON_DRIVER_CHECK_OLDEST:-}" ]; then
  low=$((${NEURON_DRIVER_CHECK_OLDEST%%.*} * 10000 + ${NEURON_DRIVER_CHECK_OLDEST#*.}))
  if [ "$have" -lt "$low" ]; then
    since="${NEURON_DRIVER_CHECK_AMI_FROM:+$NEURON_DRIVER_CHECK_AMI_FROM or later}"
    fix="pin NeuronAmi.release('2023.0.YYYYMMDD') dated ${since:-after this host's AMI}"
    fix="$fix on its capacity (or follow the recommended ECS Neuron AMI), or move the image to an older Neuron SDK"
    say "$who: host Neuron driver $major.$minor is older than $NEURON_DRIVER_CHECK_OLDEST, the oldest $want runs on;\
 $again: $fix"
    exit 78
  fi
fi
if [ -n "${NEURON_DRIVER_CHECK_NEWEST:-}" ]; then
  high=$((${NEURON_DRIVER_CHECK_NEWEST%%.*} * 10000 + ${NEURON_DRIVER_CHECK_NEWEST#*.}))
  if [ "$have" -gt "$high" ]; then
    fix="pin NeuronAmi.release('2023.0.YYYYMMDD') dated before ${NEURON_DRIVER_CHECK_AMI_BEFORE:-this driver}"
    fix="$fix on its capacity, or move the image to a Neuron SDK release whose runtime runs on driver $major.$minor"
    say "$who: host Neuron driver $major.$minor is newer than $NEURON_DRIVER_CHECK_NEWEST, the newest $want runs on;\
 $again: $fix"
    exit 78
  fi
fi
exec "$@"
"""
"""The start check (POSIX ``sh``; tested in ``dash``)."""

_SDK_IN_IMAGE = re.compile(r"-sdk(\d{1,3}\.\d{1,3}\.\d{1,3})-")


def image_sdk(image_name: str) -> str | None:
    """The Neuron SDK release in a Neuron DLC tag (``...-sdkX.Y.Z-...`` gives ``"X.Y.Z"``), else ``None``."""
    match = _SDK_IN_IMAGE.search(image_name[-300:])
    return match.group(1) if match else None


def stated_sdk(path: str, image_name: str, neuron_sdk: str | None) -> str | None:
    """The Neuron SDK release of an image: ``neuron_sdk`` as stated where the image is given (for an image whose tag
    names none, ``team/llm-server:v42``), else the ``-sdkX.Y.Z-`` of its name (``image_name``, a token resolved);
    ``None`` when neither names one.

    NEURON146 when the stated release is not a string, is not a release the release table
    (:data:`~neuron_constructs.knowledge.neuron_releases.NEURON_RELEASES`) knows (one it knows without a runtime
    version, 2.34.0, is taken: the driver checks then say what they cannot check), or disagrees with the release the
    tag names."""
    tagged = image_sdk(image_name)
    if neuron_sdk is None:
        return tagged
    known = [r.sdk for r in neuron_releases.NEURON_RELEASES]
    fix = f"pass neuron_sdk= as the release the image is built with, one of {', '.join(known)}"
    if not isinstance(neuron_sdk, str):
        raise rules.IMAGE_SDK.error(path, f"neuron_sdk={neuron_sdk!r} is not a release string", fix=fix)
    if neuron_sdk not in known:
        raise rules.IMAGE_SDK.error(
            path, f"neuron_sdk={neuron_sdk[:40]!r} is not a Neuron SDK release the release table knows", fix=fix
        )
    if tagged is not None and tagged != neuron_sdk:
        raise rules.IMAGE_SDK.error(
            path,
            f"neuron_sdk={neuron_sdk!r}, but the image's tag names Neuron SDK {tagged}",
            fix=f"leave neuron_sdk out (the tag says {tagged}), or give the image that is built with {neuron_sdk}",
        )
    return neuron_sdk


def warn_unknown_sdk(scope: Construct, what: str, ami_release: str) -> None:
    """NEURON147 on ``scope``: the image of ``what`` names no Neuron SDK release, so its runtime is not checked
    against the driver of the pinned AMI release ``ami_release`` (NEURON088 could not run)."""
    Validations.of(scope).add_warning(
        rules.UNKNOWN_IMAGE_SDK.warning_id,
        rules.UNKNOWN_IMAGE_SDK.message(
            construct_path(scope),
            f"the image of {what} names no Neuron SDK release (no -sdkX.Y.Z- in its tag, no neuron_sdk=): whether its "
            f"runtime runs on the Neuron driver of ECS Neuron AMI {ami_release} was not checked",
        ),
    )


def _first_release(admits: Callable[[tuple[int, int]], bool]) -> datetime.date | None:
    """The date of the oldest release of the table whose driver ``admits``; ``None`` when none does."""
    return next(
        (r.date for r in neuron_releases.NEURON_RELEASES if r.date and r.driver_version and admits(r.driver_version)),
        None,
    )


def driver_check_environment(sdk: str, container_name: str = "") -> dict[str, str] | None:
    """The variables the script reads for SDK release ``sdk`` in the container ``container_name``; ``None`` when the
    table has no runtime for it."""
    allowed = neuron_releases.driver_range(sdk)
    row = neuron_releases.release(sdk)
    if allowed is None or row is None:
        return None
    oldest, newest = allowed.oldest, allowed.newest
    before = _first_release(lambda driver: driver > newest) if newest else None
    first = _first_release(lambda driver: driver >= oldest) if oldest else None
    since = first + datetime.timedelta(days=neuron_releases.AMBIGUITY_DAYS) if first else None
    return {
        "NEURON_DRIVER_CHECK_OLDEST": "{}.{}".format(*oldest) if oldest else "",
        "NEURON_DRIVER_CHECK_NEWEST": "{}.{}".format(*newest) if newest else "",
        "NEURON_DRIVER_CHECK_RUNTIME": f"Neuron SDK {sdk}'s runtime {row.runtime}",
        "NEURON_DRIVER_CHECK_CONTAINER": container_name,
        "NEURON_DRIVER_CHECK_AMI_BEFORE": before.isoformat() if before else "",
        "NEURON_DRIVER_CHECK_AMI_FROM": since.isoformat() if since else "",
    }


WRAPPER_NAME = "neuron-driver-check"
"""The script's ``$0`` in the entry point :func:`wrapped_start` gives a container."""


def wrapped_start(entry_point: list[str], command: list[str] | None) -> tuple[list[str], list[str]]:
    """The entry point and command that run the start check, then ``entry_point`` + ``command``."""
    return ["/bin/sh", "-c", DRIVER_CHECK_SCRIPT, WRAPPER_NAME], [*entry_point, *(command or [])]


def is_wrapped_start(entry_point: list[str]) -> bool:
    """Whether ``entry_point`` is the start check's (:func:`wrapped_start`), whose command begins with the entry point
    it wraps."""
    return entry_point == ["/bin/sh", "-c", DRIVER_CHECK_SCRIPT, WRAPPER_NAME]
