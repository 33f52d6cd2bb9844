"""The preflight every training node runs before the job's command: its Neuron devices, its EFA interfaces, the
Neuron driver, the shared file system, and (multi-node) every other node's verdict, so the command never starts on
a bad node.

The launcher (:data:`~neuron_constructs.training.jobs.LAUNCHER`) runs this file's source with ``python3`` (the
Neuron training containers ship Python) from the ``NEURON_PREFLIGHT`` variable, where the job definition carries it
compressed (:func:`~neuron_constructs.training.jobs.preflight_program`). Standard library only; this module imports
nothing of the library, so the job carries it as text.

Checks, from what the job definition states in the environment:

* ``NEURON_PREFLIGHT_DEVICES`` (``"0-15"``): every ``/dev/neuronN`` the job maps exists;
* the driver answers: ``neuron-ls`` (aws-neuronx-tools, in the Neuron containers) lists at least those devices in
  JSON, when the image has ``neuron-ls``: ``--output-format json`` (Neuron 2.34 and later), or ``--json-output``
  (Neuron 2.33 and earlier) when the image's neuron-ls refuses the first (:data:`NEURON_LS_FORMATS`);
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

The rendezvous port is open to every instance of the queue's security group, which every job of the queue shares, so
the main node trusts no connection: a verdict is one line of at most :data:`LINE_LIMIT` bytes, a JSON object
``{"job": <job id>, "node": <child index>, "problem": <text or null>, "kind": "node" or "image"}``
(:func:`parse_verdict`) whose job id is the main node's own (:func:`job_id`). It counts one verdict per child index,
each from its own peer address; anything else (an empty, non-JSON, non-object, over-long or other job's line, an
index that is no child's, a second index from one address) is answered ``refused <reason>`` and does not count, and
two addresses reporting one index stop the job. It waits for lines on every connection at once (``selectors``)
against one deadline on the monotonic clock, which nothing a peer sends extends. When a child is still missing at
the deadline the main node exits :data:`PREFLIGHT_EXIT_CODE` saying which child and what it refused, so a peer that
sends ``[1]`` or drips bytes fails the attempt (retried) but never makes the job go.

A node that fails prints one line (``neuron-preflight: node N: <reason>``), writes the reason to
``$NEURON_PREFLIGHT_MARKER_DIR/failed`` (a host directory: the queue's instances power themselves off when it
appears, and their Auto Scaling group replaces them) and exits :data:`PREFLIGHT_EXIT_CODE`, which the job's retry
strategy retries. A problem of the job's image is no node's: a tool that refuses its arguments (a usage error,
``_refused``: a neuron-ls of another release, an ``fi_info`` or ``nccom-test`` that does not take the flags),
answers in a JSON layout without a device list, or is missing for the collective check. Then the node prints one line
naming the tool and the flags, writes no marker (the instance stays in service) and exits :data:`IMAGE_EXIT_CODE`,
which the job's retry strategy does not retry: every attempt runs the same image. On a multi-node job the verdict
carries the kind (``"kind": "image"``), the main node tells every node to stop (``stop-image <reason>``) and exits
:data:`IMAGE_EXIT_CODE` too. ``NEURON_PREFLIGHT_ROOT`` (default ``/``) prefixes ``/dev`` and ``/proc`` for tests.
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
IMAGE_EXIT_CODE = 78
"""EX_CONFIG (sysexits.h): "something was found in an unconfigured or misconfigured state": a tool of the job's image
refused its arguments; the job does not retry it, since every attempt runs the same image."""
NODE, IMAGE = ("node", "image")
"""The kinds of problem: this instance's (its marker replaces it; retried) or the job's image's (neither)."""
DEFAULT_PORT = 41001
DEFAULT_TIMEOUT_S = 900
_TOOL_TIMEOUT_S = 300
_OUTPUT_LIMIT = 1 << 20
"""The most of a tool's output read, in characters: neuron-ls lists a few kilobytes per device."""
_JSON_DEPTH, _JSON_NODES = (8, 100_000)
"""How deep and how many JSON values the search for neuron-ls's device list visits."""
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
    """A tool's exit status and what it printed, at most :data:`_OUTPUT_LIMIT` characters of it, within
    :data:`_TOOL_TIMEOUT_S` seconds: its standard output alone when it succeeds with ``stdout_only`` (a warning on
    standard error is no part of a JSON answer), both streams otherwise (where a usage error is, ``_refused``)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return 1, str(error)
    if stdout_only and done.returncode == 0:
        return 0, done.stdout[:_OUTPUT_LIMIT]
    return done.returncode, (done.stdout + done.stderr)[:_OUTPUT_LIMIT]


_USAGE_ERROR = re.compile(
    r"flag provided but not defined|(?:unknown|unrecogni[sz]ed|undefined)[ -](?:shorthand )?(?:flag|option|argument)"
    r"|unexpected (?:flag|argument)|invalid (?:flag|option)\b|no such (?:flag|option)|^usage:",
    re.IGNORECASE | re.MULTILINE,
)
"""What a command line parser prints when it refuses an argument: Go's ``flag`` ("flag provided but not defined"),
cobra/pflag ("unknown flag", "unknown shorthand flag"), Python's argparse ("unrecognized arguments"), Rust's clap
("unexpected argument"), getopt ("unrecognized option", "invalid option"), and a usage line. Not the system's
"Invalid argument" (``EINVAL``, ``strerror``), which a driver that fails prints: that is the node's problem."""


def _refused(status: int, output: str) -> bool:
    """Whether a tool that exited ``status`` printing ``output`` refused its arguments (a usage error): the image's
    tool does not take the flag, which says nothing about the node."""
    return status != 0 and bool(_USAGE_ERROR.search(output))


def _tail(output: str) -> str:
    return " ".join(output.split())[-200:]


def _device_entries(value: object, depth: int = 0, budget: list[int] | None = None) -> list[object] | None:
    """The device entries of a neuron-ls JSON answer: the longest list of objects that each carry an integer
    ``neuron_device`` index, wherever it is within :data:`_JSON_DEPTH` levels and :data:`_JSON_NODES` values; an
    empty top-level list, or an empty list under a key naming devices, is a node without devices; ``None`` when there
    is no such list.

    Neuron 2.33 and earlier (``--json-output``) print that list itself: one object per device with
    ``neuron_device``, ``bdf``, ``cpu_affinity``, ``numa_node``, ``connected_to``, ``nc_count``, ``memory_size``,
    ``neuroncore_ids`` and ``neuron_processes`` (a ``neuron-ls --json-output`` captured on a trn1.2xlarge with
    aws-neuronx-tools 2.28.23.0, in Backend.AI's Neuron accelerator plugin tests). Neuron 2.34 (``--output-format
    json``) prints an object that "adds top-level fields for information that applies to more than one device, such
    as instance and UltraServer details" ("Announcing end of support for the neuron-ls JSON output format starting
    with Neuron 2.34", 16 October 2026). No published source shows its fields: this assumes only that each device's
    entry still carries ``neuron_device``, and finds their list wherever the object holds it, not under one guessed
    key."""
    budget = [_JSON_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0 or depth > _JSON_DEPTH:
        return None
    if isinstance(value, list):
        if value and all(isinstance(e, dict) and type(e.get("neuron_device")) is int for e in value):
            return value
        if not value and depth == 0:
            return value
    found: list[object] | None = None
    named = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in named:
        if child == [] and isinstance(key, str) and "device" in key.lower() and found is None:
            found = []  # an object's empty list of devices ("neuron_devices": []): a node without devices
        elif isinstance(child, (dict, list)):
            entries = _device_entries(child, depth + 1, budget)
            if entries is not None and (found is None or len(entries) > len(found)):
                found = entries
    return found


def _neuron_devices(text: str, tries: int = 100) -> list[object] | None:
    """The device entries (:func:`_device_entries`) of the first JSON document in ``text`` that holds them, whatever
    a banner before it or a line after it says; ``None`` if the first ``tries`` brackets and braces open none."""
    decoder = json.JSONDecoder()

    def opening(after: int) -> int:
        return min((i for i in (text.find("[", after), text.find("{", after)) if i != -1), default=-1)

    start = opening(0)
    while start != -1 and tries > 0:
        end = start + 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        entries = _device_entries(value) if isinstance(value, (list, dict)) else None
        if entries is not None:
            return entries
        start, tries = opening(end if value is not None else start + 1), tries - 1
    return None


NEURON_LS_FORMATS = (
    (("--output-format", "json"), "Neuron 2.34 and later"),
    (("--json-output",), "Neuron 2.33 and earlier"),
)
"""neuron-ls's JSON flags, newest first, each with the releases whose neuron-ls takes it: Neuron 2.34 removed
``--json-output``/``-j`` for ``--output-format json`` ("Announcing end of support for the neuron-ls JSON output
format starting with Neuron 2.34", 16 October 2026); the neuron-ls user guide lists ``--json-output, -j`` from
Neuron 2.22.0 (3 April 2025) to 2.33. The preflight asks the image's neuron-ls with the first, and with the next only
when it refuses a flag (``_refused``)."""


def _neuron_ls_problem(neuron_ls: str, devices: int) -> tuple[str, str] | None:
    """What neuron-ls says is wrong: :data:`IMAGE` when the image's neuron-ls takes none of
    :data:`NEURON_LS_FORMATS`, or answers in a JSON layout with no device list (:func:`_device_entries`); :data:`NODE`
    when the driver does not answer (a non-zero exit that is no usage error) or neuron-ls lists fewer devices than
    the job maps."""
    refusals: list[str] = []
    for flags, releases in NEURON_LS_FORMATS:
        command = " ".join(flags)
        status, output = _run([neuron_ls, *flags], stdout_only=True)
        if _refused(status, output):
            refusals.append(f"{command} ({releases}: {_tail(output)})")
            continue
        if status != 0:
            return NODE, f"the Neuron driver did not answer neuron-ls (exit {status})"
        listed = _neuron_devices(output)
        if listed is None:
            return IMAGE, (
                f"the image's neuron-ls ({neuron_ls}) answered {command} ({releases}) with no list of Neuron "
                "devices this preflight can read; the node stays in service"
            )
        if len(listed) < devices:
            return NODE, f"neuron-ls lists {len(listed)} Neuron devices, the job maps {devices}"
        return None
    return IMAGE, (
        f"the image's neuron-ls ({neuron_ls}) refused both {' and '.join(refusals)}: use an image whose "
        "aws-neuronx-tools take one of them; the node stays in service"
    )


def _efa_problem(fi_info: str) -> tuple[str, str] | None:
    """``fi_info -p efa`` (libfabric's ``fi_info(1)``: ``-p, --provider``; AWS's EFA installer instructions run the
    same line): a usage error is the image's libfabric, any other failure (exit 61, ``ENODATA``: no such provider)
    the node's."""
    status, output = _run([fi_info, "-p", "efa"])
    if _refused(status, output):
        return IMAGE, f"the image's fi_info ({fi_info}) refused -p efa ({_tail(output)}); the node stays in service"
    if status != 0:
        return NODE, f"libfabric finds no EFA provider (fi_info -p efa exit {status})"
    return None


def _collective_problem(nccom_test: str, ranks: str) -> tuple[str, str] | None:
    """``nccom-test -r <ranks> allr`` (NCCOM-TEST user guide, Neuron 2.10.0 to 2.32: ``-r, --nworkers`` and the
    ``all_reduce``/``allr`` operation): a usage error is the image's nccom-test, a failed all-reduce the node's."""
    status, output = _run([nccom_test, "-r", ranks, "allr"])
    if _refused(status, output):
        return IMAGE, (
            f"the image's nccom-test ({nccom_test}) refused -r {ranks} allr ({_tail(output)}); the node stays in "
            "service"
        )
    if status != 0:
        return NODE, f"nccom-test all-reduce over {ranks} NeuronCores failed (exit {status}): {output.strip()[-200:]}"
    return None


def local_problem(environment: dict[str, str]) -> tuple[str, str] | None:
    """What is wrong here, as (kind, sentence), or ``None``. The kind is :data:`NODE` (this instance: its devices,
    driver, EFA or mount; it is replaced) or :data:`IMAGE` (a tool of the job's image refused its arguments, answered
    in a layout this preflight does not read, or is missing: every node of every attempt would fail alike, so the
    instance stays in service and the job is not retried)."""
    root = environment.get("NEURON_PREFLIGHT_ROOT", "/")
    devices = _indices(environment.get("NEURON_PREFLIGHT_DEVICES", ""))
    missing = [d for d in devices if not os.path.exists(os.path.join(root, "dev", f"neuron{d}"))]
    if missing:
        return NODE, f"{len(missing)} of {len(devices)} Neuron devices missing (/dev/neuron{missing[0]} first)"
    neuron_ls = _tool("neuron-ls", "/opt/aws/neuron/bin")
    found = _neuron_ls_problem(neuron_ls, len(devices)) if devices and neuron_ls else None
    if found:
        return found
    efa = int(environment.get("NEURON_PREFLIGHT_EFA", "0") or 0)
    absent = [i for i in range(efa) if not os.path.exists(os.path.join(root, "dev", "infiniband", f"uverbs{i}"))]
    if absent:
        return NODE, f"{len(absent)} of {efa} EFA interfaces missing (/dev/infiniband/uverbs{absent[0]} first)"
    fi_info = _tool("fi_info", "/opt/amazon/efa/bin")
    found = _efa_problem(fi_info) if efa and fi_info else None
    if found:
        return found
    lustre = environment.get("NEURON_PREFLIGHT_LUSTRE")
    if lustre:
        mounted = _mount_type(os.path.join(root, "proc", "self", "mountinfo"), os.path.normpath(lustre))
        if mounted != "lustre":
            what = "not a mount point" if mounted is None else f"a {mounted} file system"
            return NODE, f"{lustre} is {what}, not the queue's FSx for Lustre: the host did not mount it"
    if environment.get("NEURON_PREFLIGHT_COLLECTIVE") == "1" and devices:
        nccom_test = _tool("nccom-test", "/opt/aws/neuron/bin")
        if nccom_test is None:
            return IMAGE, "the image has no nccom-test for the collective check (aws-neuronx-tools)"
        return _collective_problem(nccom_test, environment.get("NEURON_PREFLIGHT_RANKS", str(len(devices))))
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


def parse_verdict(line: bytes, job: str, children: set[int]) -> tuple[int, str | None, str]:
    """A child's verdict line as (its node index, its problem or ``None``, the problem's kind: :data:`NODE` unless
    ``"kind"`` says :data:`IMAGE`); :class:`ValueError` saying why for anything that is not one of job ``job``'s
    verdicts. At most :data:`LINE_LIMIT` bytes are parsed."""
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
    kind = verdict.get("kind", NODE)
    if kind not in (NODE, IMAGE):
        raise ValueError("a kind that is neither node nor image")
    return (node, problem[:300] if problem else None, kind)


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


def _main_node(
    nodes: int, main_index: int, job: str, port: int, timeout_s: float, own: tuple[str, str] | None
) -> tuple[str, str] | None:
    """Collect one verdict of this job per child node, from an address of its own, by one deadline; tell each child to
    go (or stop); the first image problem found, else the first problem, or ``None``. A child's image problem counts as
    one only when this node's own check found an image problem too: otherwise it stops the attempt, retried."""
    deadline = time.monotonic() + timeout_s
    children = set(range(nodes)) - {main_index}
    reported: dict[int, tuple[str, socket.socket]] = {}
    pending: dict[socket.socket, tuple[str, float, bytearray]] = {}
    problems: list[tuple[str, str]] = [own] if own else []
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
                    node, problem, kind = parse_verdict(bytes(buffer.partition(b"\n")[0]), job, children)
                except ValueError as error:
                    drop(connection, str(error))
                    continue
                earlier = reported.get(node)
                other = next((n for n, (p, _) in reported.items() if p == peer and n != node), None)
                if other is not None:
                    drop(connection, f"this address reported for node {other}")
                    continue
                if earlier is not None and earlier[0] != peer:
                    problems.append((NODE, f"node {node} reported from both {earlier[0]} and {peer}"))
                    drop(connection, f"node {node} reported from another address")
                    continue
                selector.unregister(connection)
                del pending[connection]
                if earlier is not None:
                    earlier[1].close()  # the same child again: counted once, answered on its newest connection
                reported[node] = (peer, connection)
                if problem:
                    # A child's image problem ends the job unretried only when this node's own image shows it too
                    # (every node runs the job's image): any peer that knows the job id can claim one.
                    said = kind if kind == NODE or (own is not None and own[0] == IMAGE) else NODE
                    problems.append((said, f"node {node}: {problem}"))
        missing = sorted(children - reported.keys())
        if missing and not problems:
            why = f"; {count[0]} connections refused ({'; '.join(refused)})" if refused else ""
            problems.append(
                (NODE, f"{len(missing)} of {len(children)} child nodes never reported (node {missing[0]}){why}")
            )
        first = next((p for p in problems if p[0] == IMAGE), problems[0] if problems else None)
        answer = ("go\n" if first is None else f"{_STOP[first[0]]} {first[1]}\n").encode()
        for connection in list(pending):
            drop(connection, "the preflight ended")
        for _, connection in reported.values():
            with contextlib.suppress(OSError):
                connection.settimeout(1.0)
                connection.sendall(answer)
            connection.close()
    return first


_STOP = {NODE: "stop", IMAGE: "stop-image"}
"""The main node's answer to every child when the job stops, by the kind of problem that stops it."""


def _child_node(
    node: int, job: str, main: str, port: int, timeout_s: float, own: tuple[str, str] | None
) -> tuple[str, str] | None:
    """Report this node's verdict to the main node and wait for its answer, by one deadline."""
    deadline = time.monotonic() + timeout_s
    said = {"job": job, "node": node, "problem": own[1], "kind": own[0]} if own else {"job": job, "node": node}
    verdict = (json.dumps({"problem": None, **said}) + "\n").encode()
    answer = ""
    while not answer:
        wait = max(0.1, min(10.0, deadline - time.monotonic()))
        with contextlib.suppress(OSError), socket.create_connection((main, port), timeout=wait) as connection:
            connection.sendall(verdict)
            answer = _read_line(connection, deadline)
        if not answer and time.monotonic() > deadline:
            return own or (NODE, f"the main node {main}:{port} never answered")
        if not answer:
            time.sleep(0.5)
    if own is not None:
        return own
    if answer.startswith("refused "):
        return NODE, f"the main node refused this node's verdict: {answer.removeprefix('refused ')}"
    if answer == "go":
        return None
    kind = IMAGE if answer.startswith(_STOP[IMAGE] + " ") else NODE
    return kind, (answer.removeprefix(_STOP[kind] + " ").strip() or "the main node stopped the job")


def _mark(problem: str, environment: dict[str, str]) -> None:
    """Write this node's problem to the host's marker: the instance powers itself off and is replaced."""
    marker_dir = environment.get("NEURON_PREFLIGHT_MARKER_DIR")
    if marker_dir and os.path.isdir(marker_dir):
        with contextlib.suppress(OSError), open(os.path.join(marker_dir, "failed"), "w") as marker:
            marker.write(problem + "\n")


def main(environment: dict[str, str] | None = None) -> int:
    """Run the checks and, on a multi-node job, the rendezvous; 0 when the node may start the job's command."""
    environment = dict(os.environ if environment is None else environment)
    nodes = int(environment.get("AWS_BATCH_JOB_NUM_NODES", "1") or 1)
    node = int(environment.get("AWS_BATCH_JOB_NODE_INDEX", "0") or 0)
    main_index = int(environment.get("AWS_BATCH_JOB_MAIN_NODE_INDEX", "0") or 0)
    own = local_problem(environment)
    verdict = own
    if nodes > 1:
        port = int(environment.get("NEURON_PREFLIGHT_PORT", DEFAULT_PORT))
        timeout_s = float(environment.get("NEURON_PREFLIGHT_TIMEOUT", DEFAULT_TIMEOUT_S))
        job = job_id(environment)
        if not job:
            verdict = (NODE, "no AWS_BATCH_JOB_ID, so no verdict can be told from another job's")
        elif node == main_index:
            try:
                verdict = _main_node(nodes, main_index, job, port, timeout_s, own)
            except OSError as error:
                verdict = (NODE, f"the main node cannot listen on port {port}: {error}")
        else:
            main = environment.get("AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS", "")
            verdict = _child_node(node, job, main, port, timeout_s, own)
    if verdict is None:
        print(f"neuron-preflight: node {node}: ready", file=sys.stderr, flush=True)
        return 0
    # The job does not start. Only this node's own problem marks its host; another node's or the image's does not.
    said = f"the job stops: {verdict[1]}" if own is None else own[1]
    print(f"neuron-preflight: node {node}: {said}", file=sys.stderr, flush=True)
    if own is not None and own[0] == NODE:
        _mark(own[1], environment)
    return IMAGE_EXIT_CODE if IMAGE in (verdict[0], own and own[0]) else PREFLIGHT_EXIT_CODE


if __name__ == "__main__":
    sys.exit(main())
