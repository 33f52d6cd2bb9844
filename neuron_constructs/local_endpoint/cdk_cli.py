"""Running the ``cdk`` CLI: with its whole output, or printing only its outcome lines (each environment
bootstrapped, each stack deployed or failed) and the end of its output when it fails."""

from __future__ import annotations

import collections
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from neuron_constructs.local_endpoint.endpoint import LocalEndpointError

__all__ = ["run_cdk", "run_cdk_summarised"]


def run_cdk(
    cdk: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path, capture: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the ``cdk`` CLI; a non-zero exit becomes :class:`LocalEndpointError` (unless ``capture``)."""
    command = [cdk, *args]
    try:
        result = subprocess.run(command, env=dict(env), cwd=cwd, check=False, text=True, capture_output=capture)
    except FileNotFoundError as error:
        raise LocalEndpointError(f"the cdk CLI was not found ({cdk}): run npm ci, or pass --cdk PATH.") from error
    if result.returncode != 0 and not capture:
        raise LocalEndpointError(f"{' '.join(command)} exited with status {result.returncode}.")
    return result


_KEPT_CDK_OUTPUT = 400
"""Lines of the cdk CLI's output kept to show when a command fails without ``verbose``."""


def _cdk_outcome(line: str) -> bool:
    """Whether a line of the cdk CLI's output is an outcome (a stack or environment done, or failed)."""
    return line.lstrip().startswith(("\u2705", "\u274c"))


def run_cdk_summarised(cdk: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> None:
    """Run the ``cdk`` CLI printing only its outcome lines (each stack deployed or failed); on a non-zero exit print
    the end of its output (at most the last 400 lines) to stderr and raise :class:`LocalEndpointError`."""
    command = [cdk, *args]
    kept: collections.deque[str] = collections.deque(maxlen=_KEPT_CDK_OUTPUT)
    try:
        process = subprocess.Popen(
            command,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except FileNotFoundError as error:
        raise LocalEndpointError(f"the cdk CLI was not found ({cdk}): run npm ci, or pass --cdk PATH.") from error
    try:
        assert process.stdout is not None
        for line in process.stdout:
            kept.append(line)
            if _cdk_outcome(line):
                print(line.rstrip(), flush=True)
        status = process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    if status != 0:
        sys.stderr.write("".join(kept))
        raise LocalEndpointError(f"{' '.join(command)} exited with status {status}.")
