"""The preflight every training node runs before the job's command: its Neuron devices, its EFA interfaces, the
Neuron driver, the shared file system, and (multi-node) every other node's verdict, so the command never starts on
a bad node.

The launcher (:data:`~neuron_constructs.training.jobs.LAUNCHER`) runs this file's source with ``python3`` (the
Neuron training containers ship Python) from the ``NEURON_PREFLIGHT`` variable, where the job definition carries it
compressed (:func:`~neuron_constructs.training.jobs.preflight_program`). Standard library only; this module imports
nothing of the library, so the job carries it as text.

Checks, from what the job definition states in the environment:

* ``NEURON_PREFLIGHT_DEVICES`` (``"0-15"``): every ``/dev/neuronN`` the job maps exists;
* the driver answers: ``neuron-ls --json-output`` (aws-neuronx-tools, in the Neuron containers) lists at least
  those devices, when the image has ``neuron-ls``;
* ``NEURON_PREFLIGHT_EFA`` (``"8"``): every ``/dev/infiniband/uverbsN`` exists and, when the image has libfabric's
  ``fi_info``, ``fi_info -p efa`` finds the EFA provider;
* ``NEURON_PREFLIGHT_COLLECTIVE`` (``"1"``): ``nccom-test`` runs an all-reduce across every NeuronCore of the node
  (Neuron's collective sanity check; about a minute per node, while the job's instances are billed);
* ``NEURON_PREFLIGHT_LUSTRE`` (``"/fsx"``): the queue's FSx for Lustre file system is mounted there. The
  container's mount table (``/proc/self/mountinfo``) must show a ``lustre`` file system at that path: the job maps
  the host's directory into the container, so ``mountpoint`` would answer yes for a bind mount of an empty directory
  on the root volume when the host never mounted Lustre, and checkpoints would die with the node;
* on a multi-node job, a rendezvous: every child node reports its verdict to the main node over TCP
  (``NEURON_PREFLIGHT_PORT``, default 41001), and the main node tells every node to go only when every node passed
  within ``NEURON_PREFLIGHT_TIMEOUT`` seconds (default 900). AWS Batch decides a multi-node job by its main node
  alone ("Child node failures don't cause more attempts"), so a bad child must fail the main node too.

The rendezvous port is open to every instance of the queue's security group, which every job of the queue shares,
so the main node trusts no connection: a verdict is one line of at most :data:`LINE_LIMIT` bytes, a JSON object
``{"job": <job id>, "node": <child index>, "problem": <text or null>}`` (:func:`parse_verdict`) whose job id is the
main node's own (:func:`job_id`). It counts one verdict per child index, each from its own peer address; anything
else (an empty, non-JSON, non-object, over-long or other job's line, an index that is no child's, a second index
from one address) is answered ``refused <reason>`` and does not count, and two addresses reporting one index stop
the job. It waits for lines on every connection at once (``selectors``) against one deadline on the monotonic
clock, which nothing a peer sends extends. When a child is still missing at the deadline the main node exits
:data:`PREFLIGHT_EXIT_CODE` saying which child and what it refused, so a peer that sends ``[1]`` or drips bytes fails
the attempt (retried) but never makes the job go.

A node that fails prints one line (``neuron-preflight: node N: <reason>``), writes the reason to
``$NEURON_PREFLIGHT_MARKER_DIR/failed`` (a host directory: the queue's instances power themselves off when it
appears, and their Auto Scaling group replaces them) and exits :data:`PREFLIGHT_EXIT_CODE`, which the job's retry
strategy retries. ``NEURON_PREFLIGHT_ROOT`` (default ``/``) prefixes ``/dev`` and ``/proc`` for tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
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
LINE_LIMIT = 4096
"""The longest verdict or answer line, in bytes; a longer line is refused."""
_LINE_TIMEOUT_S = 10.0
"""How long the main node waits for a line on one connection (never past its deadline); a child sends at once."""
_PENDING_PER_PEER, _PENDING_LIMIT = (2, 64)
"""Connections without their line yet, from one address and in all; more are closed at once (a child retries)."""


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


def _run(command: list[str], *, stdout_only: bool = False) -> tuple[int, str]:
    """A tool's exit status and what it printed (its standard output alone with ``stdout_only``: a warning on
    standard error is no part of a JSON answer)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return 1, str(error)
    return done.returncode, done.stdout if stdout_only else done.stdout + done.stderr


def _json_list(text: str, tries: int = 100) -> list[object] | None:
    """The first JSON list in ``text``, whatever a banner before it or a line after it says (``None`` if the first
    ``tries`` brackets open none)."""
    decoder = json.JSONDecoder()
    start = text.find("[")
    while start != -1 and tries > 0:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, list):
            return value
        start, tries = text.find("[", start + 1), tries - 1
    return None


def local_problem(environment: dict[str, str]) -> str | None:
    """What is wrong with this node, or ``None``."""
    root = environment.get("NEURON_PREFLIGHT_ROOT", "/")
    devices = _indices(environment.get("NEURON_PREFLIGHT_DEVICES", ""))
    missing = [d for d in devices if not os.path.exists(os.path.join(root, "dev", f"neuron{d}"))]
    if missing:
        return f"{len(missing)} of {len(devices)} Neuron devices missing (/dev/neuron{missing[0]} first)"
    neuron_ls = _tool("neuron-ls", "/opt/aws/neuron/bin")
    if devices and neuron_ls:
        status, output = _run([neuron_ls, "--json-output"], stdout_only=True)
        listed = _json_list(output) if status == 0 else None
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
    lustre = environment.get("NEURON_PREFLIGHT_LUSTRE")
    if lustre:
        found = _mount_type(os.path.join(root, "proc", "self", "mountinfo"), os.path.normpath(lustre))
        if found != "lustre":
            what = "not a mount point" if found is None else f"a {found} file system"
            return f"{lustre} is {what}, not the queue's FSx for Lustre: the host did not mount it"
    if environment.get("NEURON_PREFLIGHT_COLLECTIVE") == "1" and devices:
        nccom_test = _tool("nccom-test", "/opt/aws/neuron/bin")
        if nccom_test is None:
            return "the image has no nccom-test for the collective check (aws-neuronx-tools)"
        ranks = environment.get("NEURON_PREFLIGHT_RANKS", str(len(devices)))
        status, output = _run([nccom_test, "-r", ranks, "allr"])
        if status != 0:
            return f"nccom-test all-reduce over {ranks} NeuronCores failed (exit {status}): {output.strip()[-200:]}"
    return None


def _mount_type(mountinfo: str, path: str) -> str | None:
    """The type of the file system mounted at ``path`` by the mount table ``mountinfo`` (the last mount there, as
    ``proc(5)`` lists them: ``... <mount point> <options> ... - <type> <source> ...``), or ``None``."""
    found = None
    with contextlib.suppress(OSError), open(mountinfo, "rb") as table:
        for entry in table.read(1 << 20).decode(errors="replace").splitlines():
            fields, _, rest = entry.partition(" - ")
            where = fields.split()[4:5]
            if rest and where and re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), where[0]) == path:
                found = rest.split(" ")[0]
    return found


def job_id(environment: dict[str, str]) -> str:
    """The id every node of the job shares: a node of a multi-node parallel job is ``<job id>#<node index>`` (AWS
    Batch guide: multi-node parallel jobs, "#N notation"), a single-node job its plain ``AWS_BATCH_JOB_ID``."""
    return environment.get("AWS_BATCH_JOB_ID", "").partition("#")[0]


def parse_verdict(line: bytes, job: str, children: set[int]) -> tuple[int, str | None]:
    """A child's verdict line as (its node index, its problem or ``None``); :class:`ValueError` saying why for
    anything that is not one of job ``job``'s verdicts. At most :data:`LINE_LIMIT` bytes are parsed."""
    if len(line) > LINE_LIMIT:
        raise ValueError(f"a line over {LINE_LIMIT} bytes")
    if not line.strip():
        raise ValueError("an empty line")
    try:
        verdict = json.loads(line)
    except (ValueError, RecursionError):
        raise ValueError("not JSON") from None
    if not isinstance(verdict, dict):
        raise ValueError("not a JSON object")
    if not job or verdict.get("job") != job:
        raise ValueError("not this job's verdict")
    node, problem = (verdict.get("node"), verdict.get("problem"))
    if type(node) is not int or node not in children:
        raise ValueError("no child node index of this job")
    if problem is not None and (not isinstance(problem, str) or not problem):
        raise ValueError("a problem that is not text")
    return (node, problem[:300] if problem else None)


def _read_line(connection: socket.socket, deadline: float) -> str:
    """One line of at most :data:`LINE_LIMIT` bytes, read by ``deadline`` (monotonic) however slowly it comes."""
    data = b""
    while b"\n" not in data and len(data) <= LINE_LIMIT and time.monotonic() < deadline:
        connection.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = connection.recv(LINE_LIMIT + 1 - len(data))
        if not chunk:
            break
        data += chunk
    return data.partition(b"\n")[0][:LINE_LIMIT].decode(errors="replace").strip()


def _main_node(nodes: int, main_index: int, job: str, port: int, timeout_s: float, own: str | None) -> str | None:
    """Collect one verdict of this job per child node, from an address of its own, by one deadline; tell each child to
    go (or stop); the first problem found, or ``None``."""
    deadline = time.monotonic() + timeout_s
    children = set(range(nodes)) - {main_index}
    reported: dict[int, tuple[str, socket.socket]] = {}
    pending: dict[socket.socket, tuple[str, float, bytearray]] = {}
    problems = [own] if own else []
    refused: list[str] = []  # the first three reasons, and a count
    count = [0]
    with socket.create_server(("", port)) as server, selectors.DefaultSelector() as selector:
        server.setblocking(False)
        selector.register(server, selectors.EVENT_READ)

        def drop(connection: socket.socket, reason: str | None) -> None:
            if connection in pending:
                selector.unregister(connection)
                peer = pending.pop(connection)[0]
                if reason:
                    count[0] += 1
                    refused.extend([f"{peer}: {reason}"][: 3 - len(refused)])
                    with contextlib.suppress(OSError):
                        connection.send(f"refused {reason}\n".encode())
            connection.close()

        while len(reported) < len(children):
            now = time.monotonic()
            for connection, (_, until, _) in list(pending.items()):
                if now >= until:
                    drop(connection, "no verdict line in time")
            if now >= deadline:
                break
            wait = min([deadline, *(until for _, until, _ in pending.values())]) - now
            for key, _ in selector.select(max(0.0, wait)):
                if key.fileobj is server:
                    try:
                        connection, address = server.accept()
                    except OSError:
                        continue
                    peer = str(address[0])
                    if len(pending) >= _PENDING_LIMIT or [p for p, *_ in pending.values()].count(peer) >= (
                        _PENDING_PER_PEER
                    ):
                        connection.close()
                        continue
                    connection.setblocking(False)
                    pending[connection] = (peer, min(deadline, now + _LINE_TIMEOUT_S), bytearray())
                    selector.register(connection, selectors.EVENT_READ)
                    continue
                connection = key.fileobj  # type: ignore[assignment]
                peer, _, buffer = pending[connection]
                try:
                    chunk = connection.recv(LINE_LIMIT + 1 - len(buffer))
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                buffer += chunk
                if b"\n" not in buffer and chunk and len(buffer) <= LINE_LIMIT:
                    continue
                try:
                    node, problem = parse_verdict(bytes(buffer.partition(b"\n")[0]), job, children)
                except ValueError as error:
                    drop(connection, str(error))
                    continue
                earlier = reported.get(node)
                other = next((n for n, (p, _) in reported.items() if p == peer and n != node), None)
                if other is not None:
                    drop(connection, f"this address reported for node {other}")
                    continue
                if earlier is not None and earlier[0] != peer:
                    problems.append(f"node {node} reported from both {earlier[0]} and {peer}")
                    drop(connection, f"node {node} reported from another address")
                    continue
                selector.unregister(connection)
                del pending[connection]
                if earlier is not None:
                    earlier[1].close()  # the same child again: counted once, answered on its newest connection
                reported[node] = (peer, connection)
                if problem:
                    problems.append(f"node {node}: {problem}")
        missing = sorted(children - reported.keys())
        if missing and not problems:
            why = f"; {count[0]} connections refused ({'; '.join(refused)})" if refused else ""
            problems.append(f"{len(missing)} of {len(children)} child nodes never reported (node {missing[0]}){why}")
        answer = ("go\n" if not problems else f"stop {problems[0]}\n").encode()
        for connection in list(pending):
            drop(connection, "the preflight ended")
        for _, connection in reported.values():
            with contextlib.suppress(OSError):
                connection.settimeout(1.0)
                connection.sendall(answer)
            connection.close()
    return problems[0] if problems else None


def _child_node(node: int, job: str, main: str, port: int, timeout_s: float, own: str | None) -> str | None:
    """Report this node's verdict to the main node and wait for its answer, by one deadline."""
    deadline = time.monotonic() + timeout_s
    verdict = (json.dumps({"job": job, "node": node, "problem": own}) + "\n").encode()
    answer = ""
    while not answer:
        wait = max(0.1, min(10.0, deadline - time.monotonic()))
        with contextlib.suppress(OSError), socket.create_connection((main, port), timeout=wait) as connection:
            connection.sendall(verdict)
            answer = _read_line(connection, deadline)
        if not answer and time.monotonic() > deadline:
            return own or f"the main node {main}:{port} never answered"
        if not answer:
            time.sleep(0.5)
    if own is not None:
        return own
    if answer.startswith("refused "):
        return f"the main node refused this node's verdict: {answer.removeprefix('refused ')}"
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
        job = job_id(environment)
        if not job:
            found: str | None = "no AWS_BATCH_JOB_ID, so no verdict can be told from another job's"
        elif node == main_index:
            try:
                found = _main_node(nodes, main_index, job, port, timeout_s, own)
            except OSError as error:
                found = f"the main node cannot listen on port {port}: {error}"
        else:
            main = environment.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS", "")
            found = _child_node(node, job, main, port, timeout_s, own)
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
