"""The training preflight as a program: ``python3 -c`` of its source, as every node runs it, on this machine (no
Neuron devices) and on simulated nodes (device files in a directory, stand-in ``neuron-ls``/``fi_info``/
``nccom-test`` on ``PATH``), alone and as the main and child nodes of a multi-node job over localhost, with hostile
peers of the queue's security group speaking to the main node."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import MEASURED_IN_CI, examples
from hypothesis import given, settings
from hypothesis import strategies as st
from ports import unused_port

from neuron_constructs.programs.carrying import program_source
from neuron_constructs.programs.preflight import LINE_LIMIT, PREFLIGHT_EXIT_CODE, job_id, parse_verdict
from neuron_constructs.training.jobs import LAUNCHER, preflight_program

SOURCE = program_source("neuron_constructs.programs", "preflight.py")
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


@pytest.mark.parametrize(
    "neuron_ls",
    [
        'echo \'[{"neuron_device": 0}, {"neuron_device": 1}]\'',
        'echo "neuron-ls [banner]" >&2; echo \'[{"neuron_device": 0}, {"neuron_device": 1}]\'; echo "warning: [x]" >&2',
        "echo 'instance [inf2] devices:'; echo '[{\"neuron_device\": 0}, {\"neuron_device\": 1}]'; echo '[done]'",
    ],
    ids=["plain", "warnings-on-stderr", "text-around-the-json"],
)
def test_a_whole_node_is_ready(neuron_ls: str, tmp_path: Path) -> None:
    """A healthy node is ready whatever neuron-ls says on standard error or around its JSON list: a warning there
    must not power a good node off."""
    healthy = {
        "neuron-ls": neuron_ls,
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


JOB = "4c5ee1a8-2f53-4c3e-9f0b-1d2e3f4a5b6c"
"""A job id as AWS Batch gives one; each node of a multi-node job sees ``<id>#<node index>``."""


def _job(
    tmp_path: Path, child_devices: int, *, children: int = 1, timeout: str = "20", child_job: str = JOB
) -> list[tuple[int, str]]:
    """A main node (2 devices) and ``children`` child nodes over localhost; each node's (exit status, stderr)."""
    port = str(unused_port())
    common = {
        "AWS_BATCH_JOB_NUM_NODES": str(children + 1),
        "AWS_BATCH_JOB_ID": JOB,
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
                "AWS_BATCH_JOB_ID": f"{JOB if index == 0 else child_job}#{index}",
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


@MEASURED_IN_CI
def test_a_child_that_never_reports_fails_the_main_node_at_the_timeout(tmp_path: Path) -> None:
    port = str(unused_port())
    result = _preflight(
        {
            "AWS_BATCH_JOB_NUM_NODES": "3",
            "AWS_BATCH_JOB_ID": f"{JOB}#0",
            "AWS_BATCH_JOB_NODE_INDEX": "0",
            "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
            "NEURON_PREFLIGHT_PORT": port,
            "NEURON_PREFLIGHT_TIMEOUT": "0.3",
        }
    )
    assert result.returncode == PREFLIGHT_EXIT_CODE
    assert "the job stops: 2 of 2 child nodes never reported (node 1)" in result.stderr


@pytest.mark.parametrize(("devices", "status"), [(0, PREFLIGHT_EXIT_CODE), (1, 0)])
def test_the_launcher_runs_the_command_only_after_the_preflight_passed(
    devices: int, status: int, tmp_path: Path
) -> None:
    ran = tmp_path / "the-command-ran"
    result = subprocess.run(
        ["bash", "-c", LAUNCHER, "neuron-launch", "touch", str(ran)],
        env=BASE
        | {
            "NEURON_PREFLIGHT": preflight_program(),
            "NEURON_PREFLIGHT_DEVICES": "0",
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=devices)),
        },
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == status, result.stderr
    assert ran.exists() is (status == 0)


# The main node against the queue's other tenants: every instance of the queue's security group reaches TCP 41001.


def _main_node(port: int, *, nodes: int, timeout: float) -> subprocess.Popen[str]:
    """The real main node (its own checks pass: it maps no device) of a job of ``nodes`` nodes."""
    environment = {
        "AWS_BATCH_JOB_ID": f"{JOB}#0",
        "AWS_BATCH_JOB_NUM_NODES": str(nodes),
        "AWS_BATCH_JOB_NODE_INDEX": "0",
        "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
        "NEURON_PREFLIGHT_PORT": str(port),
        "NEURON_PREFLIGHT_TIMEOUT": str(timeout),
    }
    return subprocess.Popen([sys.executable, "-c", SOURCE], env=BASE | environment, stderr=subprocess.PIPE, text=True)


def _finished(main: subprocess.Popen[str], started: float) -> tuple[int, str, float]:
    """The main node's exit status, its stderr and how long it ran (seconds)."""
    status = main.wait(timeout=30)
    return status, main.stderr.read() if main.stderr else "", time.monotonic() - started


def _speak(port: int, payload: bytes, *, source: str = "127.0.0.1", drip: float = 0.0) -> str:
    """A peer of the security group: connects (once the main node listens), sends ``payload`` (one byte every
    ``drip`` seconds when given), and returns the main node's answer line, ``""`` when it only closes."""
    until = time.monotonic() + 10
    while True:
        try:
            connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
            break
        except ConnectionRefusedError:
            if time.monotonic() > until:
                raise
            time.sleep(0.05)
    with connection:
        try:
            if drip:
                for byte in payload:
                    connection.sendall(bytes([byte]))
                    time.sleep(drip)
            else:
                connection.sendall(payload)
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = connection.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            return ""
    return answer.decode().strip()


def _verdict(node: object, *, job: object = JOB, problem: object = None) -> bytes:
    return (json.dumps({"job": job, "node": node, "problem": problem}) + "\n").encode()


def _peers(port: int, *speakers: tuple[bytes, dict[str, Any]]) -> list[str]:
    """Every peer at once, each in a thread of its own; their answers, in order."""
    with ThreadPoolExecutor(max_workers=len(speakers)) as pool:
        futures = [pool.submit(_speak, port, payload, **options) for payload, options in speakers]
        return [future.result(timeout=30) for future in futures]


# Each of these waits for the main node's deadline, a second or so: all of them run at once, each against its own
# main node and port, while the module's first test of them waits (``deadline_runs``); each test then judges its own.

HOSTILE = {
    "non-object": (b"[1]\n", "not a JSON object"),
    "null": (b"null\n", "not a JSON object"),
    "not-json": (b"go\n", "not JSON"),
    "not-utf8": (b"\xff\xfe{}\n", "not JSON"),
    "deeply-nested": (b"[" * 3000 + b"\n", "not JSON"),
    "over-long": (b'{"job": "' + b"a" * LINE_LIMIT + b'"}\n', f"a line over {LINE_LIMIT} bytes"),
    "over-long-no-newline": (b"x" * (LINE_LIMIT * 4), f"a line over {LINE_LIMIT} bytes"),
    "another-job": (_verdict(1, job="0f0e0d0c-aaaa-bbbb-cccc-000000000000"), "not this job's verdict"),
    "a-node-s-own-id": (_verdict(1, job=f"{JOB}#1"), "not this job's verdict"),
    "no-job": (b'{"node": 1, "problem": null}\n', "not this job's verdict"),
    "the-main-node": (_verdict(0), "no child node index of this job"),
    "out-of-range": (_verdict(2), "no child node index of this job"),
    "bool-index": (_verdict(True), "no child node index of this job"),
    "text-index": (_verdict("1"), "no child node index of this job"),
    "problem-not-text": (_verdict(1, problem=[1]), "a problem that is not text"),
}


_SLOW = b'{"job": "' + JOB.encode() + b'", "node": 1, "problem": null}' + b" " * 60 + b"\n"
"""A whole verdict, sent one byte every 50 ms: about 6 s."""


def _main_against(nodes: int, timeout: float, *speakers: tuple[bytes, dict[str, Any]]) -> tuple[int, str, list[str]]:
    """A main node of ``nodes`` nodes with a ``timeout`` s deadline, and every peer at once: its exit status, its
    stderr and the peers' answers."""
    port = unused_port()
    main = _main_node(port, nodes=nodes, timeout=timeout)
    answers = _peers(port, *speakers)
    status, stderr, _ = _finished(main, time.monotonic())
    return status, stderr, answers


def _dripping() -> tuple[int, str, float, list[str]]:
    """GIVEN a 1.2 s deadline WHEN two peers drip a verdict: the status, stderr, how long it ran and the answers."""
    port, started = unused_port(), time.monotonic()
    main = _main_node(port, nodes=2, timeout=1.2)
    with ThreadPoolExecutor(max_workers=2) as pool:
        drippers = [pool.submit(_speak, port, _SLOW, drip=0.05) for _ in range(2)]
        status, stderr, elapsed = _finished(main, started)
        return status, stderr, elapsed, [d.result(timeout=30) for d in drippers]


def _wrong_job(directory: Path) -> list[tuple[int, str]]:
    return _job(directory, child_devices=2, timeout="1.0", child_job="another-job")


@pytest.fixture(scope="module")
def deadline_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every scenario below that ends at the main node's deadline, run at once; each one's result by name."""
    scenarios: dict[str, Callable[[], Any]] = {
        "probes": lambda: _main_against(3, 0.8, (b"\n", {}), (b"", {})),
        "non-object": lambda: _main_against(2, 1.0, (b"[1]\n", {})),
        "hostile": lambda: _main_against(
            2, 1.0, *[(line, {"source": f"127.0.0.{10 + i}"}) for i, (line, _) in enumerate(HOSTILE.values())]
        ),
        "twice": lambda: _main_against(3, 0.8, (_verdict(1), {}), (_verdict(1), {})),
        "one-address": lambda: _main_against(3, 0.8, (_verdict(1), {}), (_verdict(2), {})),
        "two-addresses": lambda: _main_against(3, 0.8, (_verdict(1), {}), (_verdict(1), {"source": "127.0.0.2"})),
        "dripping": _dripping,
        "wrong-job": lambda: _wrong_job(tmp_path_factory.mktemp("wrong-job")),
    }
    with ThreadPoolExecutor(max_workers=len(scenarios)) as pool:
        running = {name: pool.submit(scenario) for name, scenario in scenarios.items()}
        return {name: future.result(timeout=60) for name, future in running.items()}


DEADLINES = pytest.mark.xdist_group("preflight-deadlines")
"""The tests that share :func:`deadline_runs`, on one worker."""


@DEADLINES
@MEASURED_IN_CI
def test_two_port_probes_are_not_two_children_and_the_main_node_never_says_go(deadline_runs: dict[str, Any]) -> None:
    """GIVEN a three-node job WHEN two peers connect, one sends an empty line, one nothing THEN neither counts: the main
    node exits 75 at its deadline naming the missing child, and nobody is told to go."""
    status, stderr, answers = deadline_runs["probes"]
    assert "go" not in answers and answers[0] == "refused an empty line"
    assert status == PREFLIGHT_EXIT_CODE
    assert stderr.startswith("neuron-preflight: node 0: the job stops: 2 of 2 child nodes never reported (node 1); ")
    assert "2 connections refused (127.0.0.1: an empty line; 127.0.0.1: no verdict line in time)" in stderr
    assert "Traceback" not in stderr and stderr.count("\n") == 1


@DEADLINES
@MEASURED_IN_CI
def test_a_non_object_verdict_is_refused_and_fails_the_attempt_retryable_in_one_sentence(
    deadline_runs: dict[str, Any],
) -> None:
    """GIVEN a two-node job WHEN the only peer sends ``[1]`` THEN it is answered ``refused not a JSON object``, does
    not count, and the main node exits 75 (retried) at its deadline with one sentence, not a traceback."""
    status, stderr, (answer,) = deadline_runs["non-object"]
    assert answer == "refused not a JSON object"
    assert status == PREFLIGHT_EXIT_CODE
    assert stderr == (
        "neuron-preflight: node 0: the job stops: 1 of 1 child nodes never reported (node 1); "
        "1 connections refused (127.0.0.1: not a JSON object)\n"
    )


@DEADLINES
@MEASURED_IN_CI
def test_every_line_that_is_not_this_job_s_verdict_is_refused_with_its_reason_and_never_counts(
    deadline_runs: dict[str, Any],
) -> None:
    """GIVEN a two-node job WHEN peers, each from its own address, send every kind of line that is not a verdict of
    this job (over-long ones too) THEN each is answered ``refused <reason>``, none counts, and the main node exits 75
    with one sentence."""
    status, stderr, answers = deadline_runs["hostile"]
    assert dict(zip(HOSTILE, answers, strict=True)) == {k: f"refused {reason}" for k, (_, reason) in HOSTILE.items()}
    assert status == PREFLIGHT_EXIT_CODE
    assert stderr.startswith("neuron-preflight: node 0: the job stops: 1 of 1 child nodes never reported (node 1); ")
    assert f"{len(HOSTILE)} connections refused" in stderr and stderr.count("\n") == 1 and "Traceback" not in stderr


@DEADLINES
@MEASURED_IN_CI
def test_one_client_reporting_node_1_twice_is_counted_once(deadline_runs: dict[str, Any]) -> None:
    """GIVEN a three-node job WHEN one address reports node 1 on two connections THEN node 1 counts once (answered on
    its newest connection), node 2 is still missing, and no connection is told to go."""
    status, stderr, answers = deadline_runs["twice"]
    assert "go" not in answers
    assert status == PREFLIGHT_EXIT_CODE
    assert stderr == "neuron-preflight: node 0: the job stops: 1 of 2 child nodes never reported (node 2)\n"


@DEADLINES
@MEASURED_IN_CI
def test_one_address_cannot_speak_for_two_nodes(deadline_runs: dict[str, Any]) -> None:
    status, stderr, answers = deadline_runs["one-address"]
    assert "go" not in answers
    assert len([a for a in answers if a.startswith("refused this address reported for node ")]) == 1
    assert status == PREFLIGHT_EXIT_CODE and "the job stops: 1 of 2 child nodes never reported" in stderr


@DEADLINES
@MEASURED_IN_CI
def test_two_addresses_reporting_one_node_stop_the_job(deadline_runs: dict[str, Any]) -> None:
    """Someone other than the child speaks for it: the main node cannot tell which is the child, so nobody goes."""
    status, stderr, answers = deadline_runs["two-addresses"]
    assert "go" not in answers and any(a == "refused node 1 reported from another address" for a in answers)
    assert status == PREFLIGHT_EXIT_CODE
    assert "the job stops: node 1 reported from both 127.0.0." in stderr


@DEADLINES
@MEASURED_IN_CI
def test_a_peer_dripping_bytes_cannot_hold_the_main_node_past_its_deadline(deadline_runs: dict[str, Any]) -> None:
    """GIVEN a 1.2 s deadline WHEN two peers send a verdict one byte every 50 ms (6 s each) THEN the main node exits 75
    at its deadline, not when they finish: a byte received extends nothing."""
    status, stderr, elapsed, answers = deadline_runs["dripping"]
    assert "go" not in answers
    assert status == PREFLIGHT_EXIT_CODE
    assert stderr == (
        "neuron-preflight: node 0: the job stops: 1 of 1 child nodes never reported (node 1); 2 connections refused "
        "(127.0.0.1: no verdict line in time; 127.0.0.1: no verdict line in time)\n"
    )
    assert 1.2 <= elapsed < 2.2, elapsed


def test_real_children_go_while_hostile_peers_probe_drip_and_lie() -> None:
    """GIVEN a three-node job and hostile peers already connected (an empty probe, another job's verdict, a peer
    dripping bytes) WHEN the child node (its program) and a third node (the protocol, from its own address) report
    THEN every node goes as soon as both children reported, long before the deadline; the hostile peers never do."""
    port, started = unused_port(), time.monotonic()
    main = _main_node(port, nodes=3, timeout=20)
    lies = _peers(
        port,
        (b"\n", {"source": "127.0.0.4"}),
        (_verdict(2, job="0f0e0d0c-aaaa-bbbb-cccc-000000000000"), {"source": "127.0.0.5"}),
    )
    assert lies == ["refused an empty line", "refused not this job's verdict"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        dripper = pool.submit(_speak, port, _verdict(2) * 2, source="127.0.0.3", drip=0.2)
        child = subprocess.Popen(
            [sys.executable, "-c", SOURCE],
            env=BASE
            | {
                "AWS_BATCH_JOB_ID": f"{JOB}#1",
                "AWS_BATCH_JOB_NUM_NODES": "3",
                "AWS_BATCH_JOB_NODE_INDEX": "1",
                "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
                "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "127.0.0.1",
                "NEURON_PREFLIGHT_PORT": str(port),
                "NEURON_PREFLIGHT_TIMEOUT": "20",
            },
            stderr=subprocess.PIPE,
            text=True,
        )
        third = pool.submit(_speak, port, _verdict(2), source="127.0.0.2")
        status, stderr, elapsed = _finished(main, started)
        assert (third.result(timeout=30), dripper.result(timeout=30)) == ("go", "")
    assert (status, stderr) == (0, "neuron-preflight: node 0: ready\n")
    assert (child.wait(timeout=30), child.stderr.read() if child.stderr else "") == (
        0,
        "neuron-preflight: node 1: ready\n",
    )
    assert elapsed < 10


@DEADLINES
@MEASURED_IN_CI
def test_a_child_with_another_job_s_id_is_refused_and_both_nodes_stop(deadline_runs: dict[str, Any]) -> None:
    (main, main_err), (child, child_err) = deadline_runs["wrong-job"]
    assert (main, child) == (PREFLIGHT_EXIT_CODE, PREFLIGHT_EXIT_CODE)
    assert child_err == (
        "neuron-preflight: node 1: the job stops: the main node refused this node's verdict: not this job's verdict\n"
    )
    assert "the job stops: 1 of 1 child nodes never reported (node 1); 1 connections refused" in main_err


def test_every_node_of_a_multi_node_job_shares_the_id_before_the_node_index() -> None:
    assert job_id({"AWS_BATCH_JOB_ID": f"{JOB}#3"}) == job_id({"AWS_BATCH_JOB_ID": JOB}) == JOB
    assert job_id({}) == ""


def test_a_multi_node_job_without_a_job_id_does_not_rendezvous() -> None:
    result = _preflight({"AWS_BATCH_JOB_NUM_NODES": "2", "NEURON_PREFLIGHT_PORT": str(unused_port())})
    assert result.returncode == PREFLIGHT_EXIT_CODE
    assert "no AWS_BATCH_JOB_ID, so no verdict can be told from another job's" in result.stderr


@given(
    st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.sampled_from(["job", "node", "problem", "x"]), inner, max_size=4)
            ),
            max_leaves=8,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
@settings(max_examples=examples(200, loop=50))
def test_any_line_is_a_verdict_of_this_job_or_refused_with_a_reason(line: bytes) -> None:
    try:
        node, problem, kind = parse_verdict(line, JOB, {1, 2})
    except ValueError as refusal:
        assert str(refusal)
        return
    verdict = json.loads(line)
    assert verdict["job"] == JOB and node in {1, 2} and node == verdict["node"]
    assert problem is None or problem == verdict["problem"][:300]
    assert kind == verdict.get("kind", "node") and kind in {"node", "image"}


# The queue's FSx for Lustre file system, as the container sees it.

LUSTRE = "1503 1480 0:57 / /fsx rw,relatime shared:612 - lustre 10.0.1.25@tcp:/abcdefgh rw,flock,lazystatfs\n"
ROOT_VOLUME = "1503 1480 259:1 /fsx /fsx rw,noatime - xfs /dev/nvme0n1p1 rw,attr2,inode64,noquota\n"


@pytest.mark.parametrize(
    ("mounts", "fsx", "problem"),
    [
        (None, None, "is not a mount point, not the queue's FSx for Lustre: the host did not mount it"),
        (ROOT_VOLUME, "/fsx", "/fsx is a xfs file system, not the queue's FSx for Lustre: the host did not mount it"),
        (ROOT_VOLUME + LUSTRE, "/fsx/", None),
    ],
    ids=["plain-directory", "bind-mount-of-the-root-volume", "lustre"],
)
def test_a_node_without_the_queue_s_lustre_mount_fails_its_preflight(
    mounts: str | None, fsx: str | None, problem: str | None, tmp_path: Path
) -> None:
    """GIVEN the container's mount table (this machine's own for a plain directory) WHEN the job's storage path is not
    a Lustre mount there THEN the node fails retryable and marks its host: checkpoints would land on the root volume.
    A host directory mapped into the container is a bind mount, so only the file system type tells."""
    root = _node(tmp_path / "node", devices=0)
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "mountinfo").write_text(mounts or Path("/proc/self/mountinfo").read_text())
    (tmp_path / "fsx").mkdir()
    marker = tmp_path / "marker"
    marker.mkdir()
    result = _preflight(
        {
            "NEURON_PREFLIGHT_ROOT": str(root),
            "NEURON_PREFLIGHT_LUSTRE": fsx or str(tmp_path / "fsx"),
            "NEURON_PREFLIGHT_MARKER_DIR": str(marker),
        }
    )
    if problem is None:
        assert (result.returncode, result.stderr) == (0, "neuron-preflight: node 0: ready\n")
        return
    assert result.returncode == PREFLIGHT_EXIT_CODE
    assert result.stderr.startswith("neuron-preflight: node 0: ") and result.stderr.endswith(problem + "\n")
    assert (marker / "failed").read_text().endswith(problem + "\n")
