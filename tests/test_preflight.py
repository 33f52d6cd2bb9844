"""The training preflight as a program: ``python3 -c`` of its source, as every node runs it, on this machine (no
Neuron devices) and on simulated nodes (device files in a directory, stand-in ``neuron-ls``/``fi_info``/
``nccom-test`` on ``PATH``), alone and as the main and child nodes of a multi-node job over localhost."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_constructs.monitoring.daemons import program_source
from neuron_constructs.training.jobs import LAUNCHER
from neuron_constructs.training.preflight import PREFLIGHT_EXIT_CODE

SOURCE = program_source("neuron_constructs.training", "preflight.py")
BASE = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_BATCH", "NEURON_", "MASTER_", "PET_"))} | {
    "PATH": "/usr/bin:/bin"
}


def _node(root: Path, devices: int, efa: int = 0) -> Path:
    """A simulated node: ``root/dev/neuron0..`` and ``root/dev/infiniband/uverbs0..``."""
    (root / "dev" / "infiniband").mkdir(parents=True, exist_ok=True)
    for i in range(devices):
        (root / "dev" / f"neuron{i}").touch()
    for i in range(efa):
        (root / "dev" / "infiniband" / f"uverbs{i}").touch()
    return root


def _tools(directory: Path, **scripts: str) -> str:
    """Stand-in tools (name -> shell body) on a PATH of their own, before the system's."""
    directory.mkdir(exist_ok=True)
    for name, body in scripts.items():
        tool = directory / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
    return f"{directory}:/usr/bin:/bin"


def _preflight(environment: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SOURCE], env=BASE | environment, capture_output=True, text=True, timeout=timeout
    )


def test_a_node_without_its_devices_exits_retryable_says_why_and_marks_its_host(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    marker.mkdir()
    result = _preflight(
        {
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=14, efa=8)),
            "NEURON_PREFLIGHT_DEVICES": "0-15",
            "NEURON_PREFLIGHT_EFA": "8",
            "NEURON_PREFLIGHT_MARKER_DIR": str(marker),
        }
    )
    assert result.returncode == PREFLIGHT_EXIT_CODE == 75
    assert result.stderr == "neuron-preflight: node 0: 2 of 16 Neuron devices missing (/dev/neuron14 first)\n"
    assert (marker / "failed").read_text() == "2 of 16 Neuron devices missing (/dev/neuron14 first)\n"


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ({"neuron-ls": "exit 1"}, "the Neuron driver did not answer neuron-ls (exit 1)"),
        ({"neuron-ls": "echo '[{\"neuron_device\": 0}]'"}, "neuron-ls lists 1 Neuron devices, the job maps 2"),
        ({"fi_info": "exit 61"}, "libfabric finds no EFA provider (fi_info -p efa exit 61)"),
        ({"nccom-test": "echo 'NCCL timeout'; exit 2"}, "nccom-test all-reduce over 4 NeuronCores failed (exit 2)"),
    ],
    ids=["driver-silent", "devices-short", "no-efa-provider", "collective"],
)
def test_every_check_names_what_failed(tools: dict[str, str], message: str, tmp_path: Path) -> None:
    result = _preflight(
        {
            "PATH": _tools(tmp_path / "bin", **tools),
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=2, efa=1)),
            "NEURON_PREFLIGHT_DEVICES": "0-1",
            "NEURON_PREFLIGHT_EFA": "1",
            "NEURON_PREFLIGHT_COLLECTIVE": "1",
            "NEURON_PREFLIGHT_RANKS": "4",
        }
    )
    assert result.returncode == PREFLIGHT_EXIT_CODE, result.stderr
    assert message in result.stderr


def test_a_whole_node_is_ready(tmp_path: Path) -> None:
    healthy = {
        "neuron-ls": 'echo \'[{"neuron_device": 0}, {"neuron_device": 1}]\'',
        "fi_info": "echo 'provider: efa'",
        "nccom-test": "echo 'Avg bus bandwidth: 40.69GB/s'",
    }
    result = _preflight(
        {
            "PATH": _tools(tmp_path / "bin", **healthy),
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=2, efa=1)),
            "NEURON_PREFLIGHT_DEVICES": "0-1",
            "NEURON_PREFLIGHT_EFA": "1",
            "NEURON_PREFLIGHT_COLLECTIVE": "1",
        }
    )
    assert (result.returncode, result.stderr) == (0, "neuron-preflight: node 0: ready\n")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _job(tmp_path: Path, child_devices: int, *, children: int = 1, timeout: str = "20") -> list[tuple[int, str]]:
    """A main node (2 devices) and ``children`` child nodes over localhost; each node's (exit status, stderr)."""
    port = str(_free_port())
    common = {
        "AWS_BATCH_JOB_NUM_NODES": str(children + 1),
        "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
        "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "127.0.0.1",
        "NEURON_PREFLIGHT_DEVICES": "0-1",
        "NEURON_PREFLIGHT_PORT": port,
        "NEURON_PREFLIGHT_TIMEOUT": timeout,
    }
    nodes = [(0, 2)] + [(i, child_devices) for i in range(1, children + 1)]
    running = [
        subprocess.Popen(
            [sys.executable, "-c", SOURCE],
            env=BASE
            | common
            | {
                "AWS_BATCH_JOB_NODE_INDEX": str(index),
                "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / f"node{index}", devices=devices)),
            },
            stderr=subprocess.PIPE,
            text=True,
        )
        for index, devices in nodes
    ]
    return [(process.wait(timeout=60), process.stderr.read() if process.stderr else "") for process in running]


def test_every_node_of_a_whole_job_goes_together(tmp_path: Path) -> None:
    assert _job(tmp_path, child_devices=2) == [
        (0, "neuron-preflight: node 0: ready\n"),
        (0, "neuron-preflight: node 1: ready\n"),
    ]


def test_a_bad_child_node_fails_the_main_node_too_so_batch_retries_the_job(tmp_path: Path) -> None:
    """AWS Batch decides a multi-node job by its main node: a child's failure must reach it."""
    (main, main_err), (child, child_err) = _job(tmp_path, child_devices=1)
    assert (main, child) == (PREFLIGHT_EXIT_CODE, PREFLIGHT_EXIT_CODE)
    assert child_err == "neuron-preflight: node 1: 1 of 2 Neuron devices missing (/dev/neuron1 first)\n"
    assert main_err == (
        "neuron-preflight: node 0: the job stops: node 1: 1 of 2 Neuron devices missing (/dev/neuron1 first)\n"
    )


def test_a_child_that_never_reports_fails_the_main_node_at_the_timeout(tmp_path: Path) -> None:
    port = str(_free_port())
    result = _preflight(
        {
            "AWS_BATCH_JOB_NUM_NODES": "3",
            "AWS_BATCH_JOB_NODE_INDEX": "0",
            "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
            "NEURON_PREFLIGHT_PORT": port,
            "NEURON_PREFLIGHT_TIMEOUT": "0.3",
        }
    )
    assert result.returncode == PREFLIGHT_EXIT_CODE
    assert "the job stops: 2 of 2 child nodes never reported" in result.stderr


@pytest.mark.parametrize(("devices", "status"), [(0, PREFLIGHT_EXIT_CODE), (1, 0)])
def test_the_launcher_runs_the_command_only_after_the_preflight_passed(
    devices: int, status: int, tmp_path: Path
) -> None:
    ran = tmp_path / "the-command-ran"
    result = subprocess.run(
        ["bash", "-c", LAUNCHER, "neuron-launch", "touch", str(ran)],
        env=BASE
        | {
            "NEURON_PREFLIGHT": SOURCE,
            "NEURON_PREFLIGHT_DEVICES": "0",
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=devices)),
        },
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == status, result.stderr
    assert ran.exists() is (status == 0)
