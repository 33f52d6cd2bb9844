"""The Neuron driver start check: a POSIX ``sh`` script that a Neuron container runs before its own entry point, and
that stops it with one line when the host's Neuron driver is outside the driver range of the image's runtime.

Where the capacity's AMI is not pinned (the recommended ECS Neuron AMI, resolved at every deploy), a new instance may
carry a driver the image's runtime does not run on, and the runtime then fails at ``nrt_init()``, when the model
loads, minutes into a start (:mod:`neuron_constructs.knowledge.neuron_releases`). With
``add_neuron_container(..., driver_check=True)`` the container's entry point becomes ``/bin/sh -c <script>`` and its
command the given ``entry_point`` followed by the given ``command``: the script reads the loaded driver's version from
``/sys/module/neuron/version`` (sysfs, which a container sees read-only), compares its ``major.minor`` with
``NEURON_DRIVER_CHECK_OLDEST`` and ``NEURON_DRIVER_CHECK_NEWEST`` (empty: no bound) and either ``exec``\\ s the command
or prints one line, ``neuron-driver-check: ...``, and exits :data:`DRIVER_CHECK_EXIT_CODE`.

The script reads at most 64 bytes of the file (``dd``), accepts only ``digits.digits`` with at most four digits each
(no leading zero) before any further ``.`` part, and needs ``sh``, ``dd`` and ``head``, which every Neuron DLC (Ubuntu)
has. ``NEURON_DRIVER_CHECK_ROOT`` (default empty) prefixes ``/sys`` for tests.
"""

from __future__ import annotations

import re

from neuron_constructs.knowledge import neuron_releases

__all__ = [
    "DRIVER_CHECK_EXIT_CODE",
    "DRIVER_CHECK_SCRIPT",
    "driver_check_environment",
    "image_sdk",
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
for bound in "${NEURON_DRIVER_CHECK_OLDEST:-}" "${NEURON_DRIVER_CHECK_NEWEST:-}"; do
  case "$bound" in ''|[0-9]*.[0-9]*) ;; *) say "bad driver bound '$bound'"; exit 78 ;; esac
done
if [ -n "${NEURON_DRIVER_CHECK_OLDEST:-}" ]; then
  low=$((${NEURON_DRIVER_CHECK_OLDEST%%.*} * 10000 + ${NEURON_DRIVER_CHECK_OLDEST#*.}))
  if [ "$have" -lt "$low" ]; then
    fix="launch the capacity from a newer ECS Neuron AMI"
    say "host Neuron driver $major.$minor is older than $NEURON_DRIVER_CHECK_OLDEST, the oldest $want runs on: $fix"
    exit 78
  fi
fi
if [ -n "${NEURON_DRIVER_CHECK_NEWEST:-}" ]; then
  high=$((${NEURON_DRIVER_CHECK_NEWEST%%.*} * 10000 + ${NEURON_DRIVER_CHECK_NEWEST#*.}))
  if [ "$have" -gt "$high" ]; then
    fix="move the image to a newer Neuron SDK release or pin an older ECS Neuron AMI"
    say "host Neuron driver $major.$minor is newer than $NEURON_DRIVER_CHECK_NEWEST, the newest $want runs on: $fix"
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


def driver_check_environment(sdk: str) -> dict[str, str] | None:
    """The variables the script reads for SDK release ``sdk``; ``None`` when the table has no runtime for it."""
    allowed = neuron_releases.driver_range(sdk)
    row = neuron_releases.release(sdk)
    if allowed is None or row is None:
        return None
    return {
        "NEURON_DRIVER_CHECK_OLDEST": "{}.{}".format(*allowed.oldest) if allowed.oldest else "",
        "NEURON_DRIVER_CHECK_NEWEST": "{}.{}".format(*allowed.newest) if allowed.newest else "",
        "NEURON_DRIVER_CHECK_RUNTIME": f"Neuron SDK {sdk}'s runtime {row.runtime}",
    }


def wrapped_start(entry_point: list[str], command: list[str] | None) -> tuple[list[str], list[str]]:
    """The entry point and command that run the start check, then ``entry_point`` + ``command``."""
    return ["/bin/sh", "-c", DRIVER_CHECK_SCRIPT, "neuron-driver-check"], [*entry_point, *(command or [])]
