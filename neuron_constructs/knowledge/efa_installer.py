"""AWS's EFA installer, pinned: the release the training nodes install and the checksum they verify before running it.

The ECS-optimized Amazon Linux 2023 Neuron AMI carries the Neuron driver and tools but not the EFA driver and
libfabric, so every training node with EFA interfaces installs them at boot, as root. The EC2 user guide ("Verify
the EFA installer using a checksum") publishes a SHA-256 checksum per release and says: "If the checksums do not
match, do not run the installation script". The node therefore downloads one named release (never
``aws-efa-installer-latest``, which changes under the same name), checks it against the checksum below and runs
nothing when they differ (:func:`install_commands`).

Plain Python, no AWS CDK. To move to a newer release, take its version and checksum from that page: the installer
of 1.48.0 and later also verifies its own RPM and DEB packages when given ``--check-signatures``, but the page
lists no checksum for them yet, so 1.47.0 stays the pin here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["EFA_INSTALLER", "EfaInstaller", "install_commands"]

_VERIFY_PAGE = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-verify.html"


@dataclass(frozen=True)
class EfaInstaller:
    """One release of the EFA installer: its version and the SHA-256 checksum AWS publishes for its archive."""

    version: str
    sha256: str
    source: str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\d+\.\d+\.\d+", self.version):
            raise ValueError(f"EFA installer version {self.version!r} is not X.Y.Z")
        if not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
            raise ValueError(f"EFA installer checksum {self.sha256!r} is not 64 lowercase hex digits")

    @property
    def archive(self) -> str:
        """``aws-efa-installer-<version>.tar.gz``."""
        return f"aws-efa-installer-{self.version}.tar.gz"

    @property
    def url(self) -> str:
        """Where AWS publishes the archive."""
        return f"https://efa-installer.amazonaws.com/{self.archive}"


EFA_INSTALLER = EfaInstaller(
    version="1.47.0",
    sha256="2df4201e046833c7dc8160907bee7f52b76ff80ed147376a2d0ed8a0dd66b2db",
    source=f'{_VERIFY_PAGE}, the table of checksums: "aws-efa-installer-1.47.0.tar.gz"',
)
"""The release the training nodes install: the newest the EC2 user guide publishes a checksum for."""


def install_commands(installer: EfaInstaller = EFA_INSTALLER) -> list[str]:
    """Shell commands that download ``installer``, verify its checksum and run it only if it matches; on a mismatch
    they print why and stop the script (exit 1) before anything from the archive runs."""
    return [
        "cd /tmp",
        f"curl -sSfO {installer.url}",
        f"if ! echo '{installer.sha256}  {installer.archive}' | sha256sum --check --strict -; then",
        f"  echo 'EFA installer {installer.version}: checksum mismatch, not running it' >&2",
        "  exit 1",
        "fi",
        f"tar -xf {installer.archive}",
        "cd aws-efa-installer && ./efa_installer.sh -y",
        "/opt/amazon/efa/bin/fi_info -p efa",
    ]
