"""The preflight every training node runs before the job's command: its Neuron devices, its EFA interfaces, the
Neuron driver, and (multi-node) every other node's verdict, so the command never starts on a bad node.

The launcher (:data:`~neuron_constructs.training.jobs.LAUNCHER`) runs this file's source with ``python3 -c`` (the
Neuron training containers ship Python) from the ``NEURON_PREFLIGHT`` variable. Standard library only; this module
imports nothing of the library, so the job carries it as text.

Checks, from what the job definition states in the environment:

* ``NEURON_PREFLIGHT_DEVICES`` (``"0-15"``): every ``/dev/neuronN`` the job maps exists;
* the driver answers: ``neuron-ls --json-output`` (aws-neuronx-tools, in the Neuron containers) lists at least
  those devices, when the image has ``neuron-ls``;
* ``NEURON_PREFLIGHT_EFA`` (``"8"``): every ``/dev/infiniband/uverbsN`` exists and, when the image has libfabric's
  ``fi_info``, ``fi_info -p efa`` finds the EFA provider;
* ``NEURON_PREFLIGHT_COLLECTIVE`` (``"1"``): ``nccom-test`` runs an all-reduce across every NeuronCore of the node
  (Neuron's collective sanity check; about a minute per node, while the job's instances are billed);
* on a multi-node job, a rendezvous: every child node reports its verdict to the main node over TCP
  (``NEURON_PREFLIGHT_PORT``, default 41001), and the main node tells every node to go only when every node passed
  within ``NEURON_PREFLIGHT_TIMEOUT`` seconds (default 900). AWS Batch decides a multi-node job by its main node
  alone ("Child node failures don't cause more attempts"), so a bad child must fail the main node too.

A node that fails prints one line (``neuron-preflight: node N: <reason>``), writes the reason to
``$NEURON_PREFLIGHT_MARKER_DIR/failed`` (a host directory: the queue's instances power themselves off when it
appears, and their Auto Scaling group replaces them) and exits :data:`PREFLIGHT_EXIT_CODE`, which the job's retry
strategy retries. ``NEURON_PREFLIGHT_ROOT`` (default ``/``) prefixes ``/dev`` for tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

PREFLIGHT_EXIT_CODE = 75
"""EX_TEMPFAIL (sysexits.h): "a temporary failure ... the user is invited to retry"; the job retries it."""
DEFAULT_PORT = 41001
DEFAULT_TIMEOUT_S = 900
_TOOL_TIMEOUT_S = 300


def _indices(text: str) -> list[int]:
    found: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if match:
            found += range(int(match.group(1)), int(match.group(2) or match.group(1)) + 1)
    return found


def _tool(name: str, *extra_dirs: str) -> str | None:
    for directory in extra_dirs:
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name)


def _run(command: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return 1, str(error)
    return done.returncode, done.stdout + done.stderr


def local_problem(environment: dict[str, str]) -> str | None:
    """What is wrong with this node, or ``None``."""
    root = environment.get("NEURON_PREFLIGHT_ROOT", "/")
    devices = _indices(environment.get("NEURON_PREFLIGHT_DEVICES", ""))
    missing = [d for d in devices if not os.path.exists(os.path.join(root, "dev", f"neuron{d}"))]
    if missing:
        return f"{len(missing)} of {len(devices)} Neuron devices missing (/dev/neuron{missing[0]} first)"
    neuron_ls = _tool("neuron-ls", "/opt/aws/neuron/bin")
    if devices and neuron_ls:
        status, output = _run([neuron_ls, "--json-output"])
        try:
            listed = json.loads(output[output.index("[") :]) if status == 0 else None
        except ValueError:
            listed = None
        if not isinstance(listed, list):
            return f"the Neuron driver did not answer neuron-ls (exit {status})"
        if len(listed) < len(devices):
            return f"neuron-ls lists {len(listed)} Neuron devices, the job maps {len(devices)}"
    efa = int(environment.get("NEURON_PREFLIGHT_EFA", "0") or 0)
    absent = [i for i in range(efa) if not os.path.exists(os.path.join(root, "dev", "infiniband", f"uverbs{i}"))]
    if absent:
        return f"{len(absent)} of {efa} EFA interfaces missing (/dev/infiniband/uverbs{absent[0]} first)"
    fi_info = _tool("fi_info", "/opt/amazon/efa/bin")
    if efa and fi_info:
        status, _ = _run([fi_info, "-p", "efa"])
        if status != 0:
            return f"libfabric finds no EFA provider (fi_info -p efa exit {status})"
    if environment.get("NEURON_PREFLIGHT_COLLECTIVE") == "1" and devices:
        nccom_test = _tool("nccom-test", "/opt/aws/neuron/bin")
        if nccom_test is None:
            return "the image has no nccom-test for the collective check (aws-neuronx-tools)"
        ranks = environment.get("NEURON_PREFLIGHT_RANKS", str(len(devices)))
        status, output = _run([nccom_test, "-r", ranks, "allr"])
        if status != 0:
            return f"nccom-test all-reduce over {ranks} NeuronCores failed (exit {status}): {output.strip()[-200:]}"
    return None


def _receive_line(connection: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()


def _main_node(nodes: int, port: int, timeout_s: float, own: str | None) -> str | None:
    """Collect every child's verdict; tell each to go (or stop); the first problem found, or ``None``."""
    problem = own
    waiting: list[socket.socket] = []
    deadline = time.monotonic() + timeout_s
    with socket.create_server(("", port), reuse_port=False) as server:
        while len(waiting) < nodes - 1:
            server.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                connection, _ = server.accept()
            except TimeoutError:
                problem = problem or f"{nodes - 1 - len(waiting)} of {nodes - 1} child nodes never reported"
                break
            connection.settimeout(30)
            try:
                verdict = json.loads(_receive_line(connection) or "{}")
            except (OSError, ValueError):
                verdict = {}
            if verdict.get("problem"):
                problem = problem or f"node {verdict.get('node', '?')}: {verdict['problem']}"
            waiting.append(connection)
        answer = ("go\n" if problem is None else f"stop {problem}\n").encode()
        for connection in waiting:
            with contextlib.suppress(OSError):
                connection.sendall(answer)
            connection.close()
    return problem


def _child_node(node: int, main: str, port: int, timeout_s: float, own: str | None) -> str | None:
    """Report this node's verdict to the main node and wait for its answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((main, port), timeout=10) as connection:
                connection.sendall((json.dumps({"node": node, "problem": own}) + "\n").encode())
                connection.settimeout(max(1.0, deadline - time.monotonic()))
                answer = _receive_line(connection)
                break
        except OSError:
            if time.monotonic() > deadline:
                return own or f"the main node {main}:{port} never answered"
            time.sleep(0.5)
    if own is not None:
        return own
    return None if answer == "go" else (answer.removeprefix("stop ").strip() or "the main node stopped the job")


def _fail(node: int, problem: str, environment: dict[str, str]) -> int:
    print(f"neuron-preflight: node {node}: {problem}", file=sys.stderr, flush=True)
    marker_dir = environment.get("NEURON_PREFLIGHT_MARKER_DIR")
    if marker_dir and os.path.isdir(marker_dir):
        with contextlib.suppress(OSError), open(os.path.join(marker_dir, "failed"), "w") as marker:
            marker.write(problem + "\n")
    return PREFLIGHT_EXIT_CODE


def main(environment: dict[str, str] | None = None) -> int:
    """Run the checks and, on a multi-node job, the rendezvous; 0 when the node may start the job's command."""
    environment = dict(os.environ if environment is None else environment)
    nodes = int(environment.get("AWS_BATCH_JOB_NUM_NODES", "1") or 1)
    node = int(environment.get("AWS_BATCH_JOB_NODE_INDEX", "0") or 0)
    main_index = int(environment.get("AWS_BATCH_JOB_MAIN_NODE_INDEX", "0") or 0)
    own = local_problem(environment)
    if nodes > 1:
        port = int(environment.get("NEURON_PREFLIGHT_PORT", DEFAULT_PORT))
        timeout_s = float(environment.get("NEURON_PREFLIGHT_TIMEOUT", DEFAULT_TIMEOUT_S))
        if node == main_index:
            found = _main_node(nodes, port, timeout_s, own)
        else:
            main = environment.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS", "")
            found = _child_node(node, main, port, timeout_s, own)
        if found is not None and own is None:
            # Another node failed: this one stays in service, but the job does not start.
            print(f"neuron-preflight: node {node}: the job stops: {found}", file=sys.stderr, flush=True)
            return PREFLIGHT_EXIT_CODE
    if own is not None:
        return _fail(node, own, environment)
    print(f"neuron-preflight: node {node}: ready", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
