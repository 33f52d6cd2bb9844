"""The EFA installer the training nodes run as root: a pinned release, verified against AWS's published checksum
before anything in it runs (the launch templates are checked in ``test_training.py``)."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from neuron_constructs.knowledge.efa_installer import EFA_INSTALLER, EfaInstaller, install_commands


def _archive(tmp_path: Path, marker: Path) -> bytes:
    """An installer archive whose ``efa_installer.sh`` only leaves ``marker`` behind."""
    script = f"#!/bin/sh\ntouch {marker}\n".encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("aws-efa-installer/efa_installer.sh")
        info.size, info.mode = len(script), 0o755
        archive.addfile(info, io.BytesIO(script))
    return buffer.getvalue()


def _run(tmp_path: Path, installer: EfaInstaller, served: bytes) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The commands as user data runs them, with ``curl`` serving ``served`` and ``/tmp`` and ``fi_info`` stood in
    for: nothing leaves the machine."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "served").write_bytes(served)
    (bin_dir / "curl").write_text(f'#!/bin/sh\nfor a; do url=$a; done\ncp {tmp_path / "served"} "$(basename "$url")"\n')
    (bin_dir / "curl").chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    script = "\n".join(install_commands(installer)).replace("cd /tmp", f"cd {work}")
    script = script.replace("/opt/amazon/efa/bin/fi_info -p efa", "echo fi_info ran")
    result = subprocess.run(
        ["bash", "-c", script],
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result, work


def test_the_pin_is_a_release_and_a_checksum_never_latest() -> None:
    assert EFA_INSTALLER.version == "1.47.0" and len(EFA_INSTALLER.sha256) == 64
    assert EFA_INSTALLER.url == "https://efa-installer.amazonaws.com/aws-efa-installer-1.47.0.tar.gz"
    assert "latest" not in " ".join(install_commands())
    assert "efa-verify" in EFA_INSTALLER.source
    with pytest.raises(ValueError, match="64 lowercase hex"):
        EfaInstaller("1.47.0", "abc", "nowhere")
    with pytest.raises(ValueError, match=r"not X\.Y\.Z"):
        EfaInstaller("latest", "0" * 64, "nowhere")


def test_an_archive_with_the_published_checksum_is_installed(tmp_path: Path) -> None:
    marker = tmp_path / "installed"
    archive = _archive(tmp_path, marker)
    installer = EfaInstaller("1.47.0", hashlib.sha256(archive).hexdigest(), "test")
    result, _ = _run(tmp_path, installer, archive)
    assert result.returncode == 0, result.stderr
    assert marker.exists() and "fi_info ran" in result.stdout


def test_an_archive_that_differs_from_the_checksum_is_never_unpacked_or_run(tmp_path: Path) -> None:
    marker = tmp_path / "installed"
    archive = _archive(tmp_path, marker)
    result, work = _run(tmp_path, EFA_INSTALLER, archive)  # the real pin: this archive is not AWS's
    assert result.returncode == 1
    assert "EFA installer 1.47.0: checksum mismatch, not running it" in result.stderr
    assert (work / EFA_INSTALLER.archive).exists()  # downloaded, checked, refused
    assert not marker.exists() and not (work / "aws-efa-installer").exists()
    assert "fi_info ran" not in result.stdout
