"""The training preflight against the tools of the job's image, release by release: neuron-ls's JSON of Neuron 2.34
(``--output-format json``) and of Neuron 2.33 and earlier (``--json-output``), recorded in ``tests/data`` (their
README says where each format comes from), and tools that refuse their arguments. A tool of the image that refuses
its flags is the image's problem: the attempt fails (exit 78, not retried) and no node powers itself off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from ports import unused_port
from test_preflight import BASE, JOB, SOURCE, _node, _preflight, _tools

from neuron_constructs.programs import preflight
from neuron_constructs.programs.preflight import IMAGE_EXIT_CODE, PREFLIGHT_EXIT_CODE, parse_verdict

DATA = Path(__file__).parent / "data"
NEURON_LS_2_33 = DATA / "neuron-ls-2.33-json-output.json"
NEURON_LS_2_34 = DATA / "neuron-ls-2.34-output-format-json.json"

REFUSALS = {
    "go-flag": ('echo "flag provided but not defined: -{flag}" >&2; echo "Usage of neuron-ls:" >&2', 2),
    "cobra": ('echo "Error: unknown flag: --{flag}" >&2', 1),
    "argparse": ('echo "neuron-ls: error: unrecognized arguments: --{flag}" >&2', 2),
    "clap": ("echo \"error: unexpected argument '--{flag}' found\" >&2", 2),
}
"""How command line parsers refuse an argument, by library: what they print and their exit status."""


def _neuron_ls(takes: str | None, answer: Path | str | None = None, refusal: str = "go-flag") -> str:
    """A stand-in neuron-ls that answers ``answer`` (a file's content or a text) to the flag ``takes``
    (``output-format`` or ``json-output``), refuses every other flag as ``refusal`` does, and logs its arguments."""
    text, status = REFUSALS[refusal]
    printed = f"cat {answer}" if isinstance(answer, Path) else f"printf '%s\\n' '{answer}'"
    return (
        'echo "$@" >> "$(dirname "$0")/neuron-ls.calls"\n'
        f'if [ "${{1:-}}" = "--{takes}" ]; then {printed}; exit 0; fi\n'
        f'flag="${{1#--}}"; {text.replace("{flag}", "$flag")}; exit {status}'
    )


def _single(tmp_path: Path, devices: int, **tools: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One node with ``devices`` Neuron devices, the stand-in ``tools`` and the host's marker directory."""
    marker = tmp_path / "marker"
    marker.mkdir()
    result = _preflight(
        {
            "PATH": _tools(tmp_path / "bin", **tools),
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=devices, efa=1)),
            "NEURON_PREFLIGHT_DEVICES": f"0-{devices - 1}",
            "NEURON_PREFLIGHT_EFA": "1",
            "NEURON_PREFLIGHT_MARKER_DIR": str(marker),
        }
    )
    return result, marker / "failed"


def test_an_image_with_neuron_2_34_s_neuron_ls_passes_on_a_healthy_node(tmp_path: Path) -> None:
    """GIVEN the neuron-ls of Neuron 2.34, which refuses ``--json-output`` and answers ``--output-format json`` with
    a top-level object (instance and UltraServer details, then the devices) WHEN a healthy trn2u.48xlarge node runs
    the preflight THEN it is ready, having asked neuron-ls once, with ``--output-format json``."""
    result, marker = _single(tmp_path, 16, **{"neuron-ls": _neuron_ls("output-format", NEURON_LS_2_34)})
    assert (result.returncode, result.stderr) == (0, "neuron-preflight: node 0: ready\n")
    assert (tmp_path / "bin" / "neuron-ls.calls").read_text() == "--output-format json\n"
    assert not marker.exists()


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_an_image_with_an_older_neuron_ls_passes_on_a_healthy_node(refusal: str, tmp_path: Path) -> None:
    """GIVEN the neuron-ls of Neuron 2.33 or earlier, which refuses ``--output-format`` (as each command line parser
    does) and answers ``--json-output`` with its list WHEN a healthy trn1.32xlarge node runs the preflight THEN it
    is ready, having asked with ``--output-format json`` and then ``--json-output``."""
    neuron_ls = _neuron_ls("json-output", NEURON_LS_2_33, refusal)
    result, marker = _single(tmp_path, 16, **{"neuron-ls": neuron_ls})
    assert (result.returncode, result.stderr) == (0, "neuron-preflight: node 0: ready\n")
    assert (tmp_path / "bin" / "neuron-ls.calls").read_text() == "--output-format json\n--json-output\n"
    assert not marker.exists()


def test_a_neuron_ls_that_refuses_both_flags_fails_the_attempt_without_powering_the_node_off(tmp_path: Path) -> None:
    """GIVEN a neuron-ls that takes neither JSON flag WHEN the preflight runs THEN the attempt fails with exit 78 (not
    retried: the next attempt runs the same image) and one line naming the tool and both flags, and no marker is
    written: the node is healthy and stays in service."""
    result, marker = _single(tmp_path, 2, **{"neuron-ls": _neuron_ls(None, refusal="cobra")})
    assert result.returncode == IMAGE_EXIT_CODE == 78
    neuron_ls = tmp_path / "bin" / "neuron-ls"
    assert result.stderr == (
        f"neuron-preflight: node 0: the image's neuron-ls ({neuron_ls}) refused both --output-format json (Neuron "
        "2.34 and later: Error: unknown flag: --output-format) and --json-output (Neuron 2.33 and earlier: Error: "
        "unknown flag: --json-output): use an image whose aws-neuronx-tools take one of them; the node stays in "
        "service\n"
    )
    assert not marker.exists()


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        ('{"instance": {"instance_type": "trn2.48xlarge"}, "devices": [{"index": 0}, {"index": 1}]}', "renamed"),
        ("neuron-ls 2.99: no JSON here", "text"),
    ],
    ids=["a-layout-without-neuron_device", "no-json"],
)
def test_a_neuron_ls_answering_without_a_device_list_is_the_image_s_problem(
    answer: str, what: str, tmp_path: Path
) -> None:
    """GIVEN a neuron-ls that takes ``--output-format json`` but answers in a layout with no list of entries carrying
    ``neuron_device`` (a release this preflight does not know) WHEN the preflight runs THEN the attempt fails with exit
    78 naming the tool and the flag, and the node is not marked: a format is no fault of the node."""
    result, marker = _single(tmp_path, 2, **{"neuron-ls": _neuron_ls("output-format", answer)})
    assert result.returncode == IMAGE_EXIT_CODE, what
    assert "the image's neuron-ls (" in result.stderr and "answered --output-format json (Neuron 2.34" in result.stderr
    assert result.stderr.count("\n") == 1 and not marker.exists()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("[]", "neuron-ls lists 0 Neuron devices, the job maps 2"),
        ('{"instance": {}, "neuron_devices": [{"neuron_device": 0}]}', "neuron-ls lists 1 Neuron devices, the job"),
    ],
    ids=["2.33-empty", "2.34-short"],
)
def test_a_node_whose_neuron_ls_lists_too_few_devices_is_still_marked(
    answer: str, message: str, tmp_path: Path
) -> None:
    """GIVEN a neuron-ls of either release that answers with fewer devices than the job maps THEN the node fails
    retryable (75) and marks its host: that is the node's fault, in both formats."""
    takes = "json-output" if answer == "[]" else "output-format"
    result, marker = _single(tmp_path, 2, **{"neuron-ls": _neuron_ls(takes, answer)})
    assert result.returncode == PREFLIGHT_EXIT_CODE
    assert message in result.stderr and marker.read_text().startswith(message)


def test_a_driver_that_does_not_answer_is_the_node_s_problem_and_no_fallback_is_tried(tmp_path: Path) -> None:
    """GIVEN a neuron-ls that fails with no usage error (no driver: exit 1 and a fatal log line) THEN the node fails
    retryable and marks its host, and the older flag is never tried."""
    neuron_ls = (
        'echo "$@" >> "$(dirname "$0")/neuron-ls.calls"\n'
        'echo \'time="2026-09-12T02:42:06Z" level=fatal msg="Failed to load MLA system information"\' >&2; exit 1'
    )
    result, marker = _single(tmp_path, 2, **{"neuron-ls": neuron_ls})
    assert result.returncode == PREFLIGHT_EXIT_CODE
    assert result.stderr == "neuron-preflight: node 0: the Neuron driver did not answer neuron-ls (exit 1)\n"
    assert marker.exists() and (tmp_path / "bin" / "neuron-ls.calls").read_text() == "--output-format json\n"


def test_a_driver_failing_with_the_system_s_invalid_argument_is_the_node_s_problem(tmp_path: Path) -> None:
    """GIVEN a neuron-ls that fails with EINVAL's text ("Invalid argument", what a driver that cannot open a device
    prints) THEN it is no usage error: the node fails retryable and marks its host, and no older flag is tried."""
    neuron_ls = (
        'echo "$@" >> "$(dirname "$0")/neuron-ls.calls"\n'
        "echo 'nrt_init: failed to open /dev/neuron0: Invalid argument' >&2; exit 1"
    )
    result, marker = _single(tmp_path, 2, **{"neuron-ls": neuron_ls})
    assert result.returncode == PREFLIGHT_EXIT_CODE
    assert marker.exists() and (tmp_path / "bin" / "neuron-ls.calls").read_text() == "--output-format json\n"


def test_an_empty_device_list_in_the_2_34_layout_is_a_node_without_devices() -> None:
    """GIVEN 2.34's object with its device list empty THEN the node lists no devices (the node's problem), not a
    layout the preflight cannot read (the image's)."""
    document = json.loads((DATA / "neuron-ls-2.34-output-format-json.json").read_text())
    key = next(k for k, v in document.items() if isinstance(v, list) and v and "neuron_device" in v[0])
    document[key] = []
    assert preflight._neuron_devices(json.dumps(document)) == []
    assert preflight._neuron_devices(json.dumps({"instance": {"type": "trn1.32xlarge"}})) is None


def test_a_child_claiming_an_image_problem_the_main_node_does_not_share_stops_the_attempt_retried() -> None:
    """GIVEN a healthy main node and a verdict that claims an image problem (any peer that knows the job id can send
    one) THEN the attempt stops retryable (exit 75), not unretried: every node runs the job's image, and the main
    node's own shows no problem."""
    import socket
    import threading

    port = unused_port()
    verdict = {"job": JOB, "node": 1, "problem": "the image's neuron-ls refused", "kind": "image"}

    def child() -> None:
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
                    connection.sendall((json.dumps(verdict) + "\n").encode())
                    connection.recv(4096)
                    return
            except OSError:
                threading.Event().wait(0.05)

    thread = threading.Thread(target=child)
    thread.start()
    found = preflight._main_node(2, 0, JOB, port, 10, None)
    thread.join()
    assert found is not None and found[0] == preflight.NODE and "node 1: the image's neuron-ls refused" in found[1]


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (
            {"fi_info": "echo 'fi_info: invalid option -- p' >&2; echo 'Usage: fi_info [OPTION]...' >&2; exit 1"},
            "refused -p efa (fi_info: invalid option -- p Usage: fi_info [OPTION]...); the node stays in service",
        ),
        (
            {"nccom-test": "echo 'nccom-test: error: unrecognized arguments: -r' >&2; exit 2"},
            "refused -r 4 allr (nccom-test: error: unrecognized arguments: -r); the node stays in service",
        ),
    ],
    ids=["fi_info", "nccom-test"],
)
def test_an_efa_or_collective_tool_that_refuses_its_flags_is_the_image_s_problem(
    tools: dict[str, str], message: str, tmp_path: Path
) -> None:
    """GIVEN an image whose ``fi_info`` refuses ``-p`` or whose ``nccom-test`` refuses ``-r`` WHEN the preflight runs
    THEN the attempt fails with exit 78 naming the tool and the flags, and no marker powers the node off."""
    marker = tmp_path / "marker"
    marker.mkdir()
    result = _preflight(
        {
            "PATH": _tools(tmp_path / "bin", **{"fi_info": "echo 'provider: efa'"} | tools),
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=2, efa=1)),
            "NEURON_PREFLIGHT_DEVICES": "0-1",
            "NEURON_PREFLIGHT_EFA": "1",
            "NEURON_PREFLIGHT_COLLECTIVE": "1",
            "NEURON_PREFLIGHT_RANKS": "4",
            "NEURON_PREFLIGHT_MARKER_DIR": str(marker),
        }
    )
    assert result.returncode == IMAGE_EXIT_CODE
    assert result.stderr.startswith("neuron-preflight: node 0: the image's ") and result.stderr.endswith(message + "\n")
    assert not (marker / "failed").exists()


def test_an_image_without_nccom_test_for_the_collective_check_powers_no_node_off(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    marker.mkdir()
    result = _preflight(
        {
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=1)),
            "NEURON_PREFLIGHT_DEVICES": "0",
            "NEURON_PREFLIGHT_COLLECTIVE": "1",
            "NEURON_PREFLIGHT_MARKER_DIR": str(marker),
        }
    )
    assert result.returncode == IMAGE_EXIT_CODE
    assert "the image has no nccom-test for the collective check" in result.stderr
    assert not (marker / "failed").exists()


def _two_nodes(tmp_path: Path, paths: tuple[str, str]) -> list[tuple[int, str]]:
    """Run the preflight as the main node (0) and the child (1) of one two-node job on this host, each with its own
    ``PATH``, devices and marker folder; each node's exit status and what it printed."""
    port = str(unused_port())
    running = []
    for index, path in enumerate(paths):
        (tmp_path / f"marker{index}").mkdir()
        environment = {
            "PATH": path,
            "AWS_BATCH_JOB_NUM_NODES": "2",
            "AWS_BATCH_JOB_ID": f"{JOB}#{index}",
            "AWS_BATCH_JOB_NODE_INDEX": str(index),
            "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
            "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "127.0.0.1",
            "NEURON_PREFLIGHT_DEVICES": "0-1",
            "NEURON_PREFLIGHT_PORT": port,
            "NEURON_PREFLIGHT_TIMEOUT": "20",
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / f"node{index}", devices=2)),
            "NEURON_PREFLIGHT_MARKER_DIR": str(tmp_path / f"marker{index}"),
        }
        running.append(
            subprocess.Popen([sys.executable, "-c", SOURCE], env=BASE | environment, stderr=subprocess.PIPE, text=True)
        )
    return [(p.wait(timeout=60), p.stderr.read() if p.stderr else "") for p in running]


def test_an_image_problem_on_a_child_stops_every_node_and_marks_none(tmp_path: Path) -> None:
    """GIVEN a two-node job whose image's neuron-ls takes neither JSON flag (each node runs the same image) WHEN both
    nodes run the preflight THEN the main node tells the child to stop, both exit 78 (the main node's exit is the
    job's: not retried), and neither host is marked."""
    bin_path = _tools(tmp_path / "bin", **{"neuron-ls": _neuron_ls(None)})
    (main, main_err), (child, child_err) = _two_nodes(tmp_path, (bin_path, bin_path))
    assert (main, child) == (IMAGE_EXIT_CODE, IMAGE_EXIT_CODE), (main_err, child_err)
    assert main_err.startswith("neuron-preflight: node 0: the image's neuron-ls (")
    assert child_err.startswith("neuron-preflight: node 1: the image's neuron-ls (")
    assert not (tmp_path / "marker0" / "failed").exists() and not (tmp_path / "marker1" / "failed").exists()


def test_a_healthy_child_told_of_an_image_problem_stops_without_its_marker(tmp_path: Path) -> None:
    """GIVEN a main node whose image problem is its own and a healthy child (no neuron-ls on its PATH) WHEN they meet
    THEN the child is told ``stop-image``, says the job stops, exits 78, and is not marked."""
    bin_path = _tools(tmp_path / "bin", **{"neuron-ls": _neuron_ls(None)})
    (main, _), (child, child_err) = _two_nodes(tmp_path, (bin_path, "/usr/bin:/bin"))
    assert (main, child) == (IMAGE_EXIT_CODE, IMAGE_EXIT_CODE)
    assert child_err.startswith("neuron-preflight: node 1: the job stops: the image's neuron-ls (")
    assert not (tmp_path / "marker0" / "failed").exists() and not (tmp_path / "marker1" / "failed").exists()


# The device list, in each release's layout.


def test_the_device_list_of_each_release_s_recorded_json() -> None:
    old, new = (NEURON_LS_2_33.read_text(), NEURON_LS_2_34.read_text())
    assert [d["neuron_device"] for d in preflight._neuron_devices(old) or []] == list(range(16))  # type: ignore[index]
    assert [d["neuron_device"] for d in preflight._neuron_devices(new) or []] == list(range(16))  # type: ignore[index]


@pytest.mark.parametrize(
    "layout",
    [
        lambda devices: {"instance": {"instance_type": "trn2u.48xlarge"}, "devices": devices},
        lambda devices: {"ultraserver": {"nodes": 4}, "node": {"neuron_device_list": devices}},
        lambda devices: {"summary": [{"pid": 1}], "instance": {"devices": devices, "efa": [{"bdf": "x"}]}},
    ],
    ids=["another-key", "nested", "next-to-other-lists"],
)
def test_the_2_34_device_list_is_found_under_any_key(layout: object) -> None:
    """Which key holds the devices in Neuron 2.34's object is not published: the list is found by its entries."""
    devices = json.loads(NEURON_LS_2_34.read_text())["neuron_devices"]
    text = "neuron-ls 2.34.0\n" + json.dumps(layout(devices)) + "\n[done]\n"  # type: ignore[operator]
    assert len(preflight._neuron_devices(text) or []) == 16


@pytest.mark.parametrize(
    "text",
    ["", "{}", '{"neuron_device": 0}', '[{"neuron_device": "0"}]', '[{"neuron_device": true}]', "[" * 5000],
    ids=["empty", "empty-object", "a-bare-entry", "text-index", "bool-index", "deeply-nested"],
)
def test_json_without_a_device_list_has_none(text: str) -> None:
    assert preflight._neuron_devices(text) is None


def test_a_device_list_deeper_than_the_search_goes_is_not_found() -> None:
    nested: object = [{"neuron_device": 0}]
    for _ in range(preflight._JSON_DEPTH + 1):
        nested = {"x": nested}
    assert preflight._neuron_devices(json.dumps(nested)) is None


def test_a_verdict_of_another_kind_is_refused() -> None:
    line = json.dumps({"job": JOB, "node": 1, "problem": "x", "kind": "disk"}).encode()
    with pytest.raises(ValueError, match="a kind that is neither node nor image"):
        parse_verdict(line, JOB, {1})
    image = json.dumps({"job": JOB, "node": 1, "problem": "x", "kind": "image"}).encode()
    assert parse_verdict(image, JOB, {1}) == (1, "x", "image")


def test_an_image_problem_without_a_job_id_is_still_not_retried(tmp_path: Path) -> None:
    """GIVEN a multi-node job without AWS_BATCH_JOB_ID (no rendezvous) and an image whose neuron-ls takes neither flag
    THEN the node still exits 78 naming the tool, and marks nothing."""
    marker = tmp_path / "marker"
    marker.mkdir()
    result = _preflight(
        {
            "PATH": _tools(tmp_path / "bin", **{"neuron-ls": _neuron_ls(None)}),
            "AWS_BATCH_JOB_NUM_NODES": "2",
            "NEURON_PREFLIGHT_PORT": str(unused_port()),
            "NEURON_PREFLIGHT_ROOT": str(_node(tmp_path / "node", devices=1)),
            "NEURON_PREFLIGHT_DEVICES": "0",
            "NEURON_PREFLIGHT_MARKER_DIR": str(marker),
        }
    )
    assert result.returncode == IMAGE_EXIT_CODE
    assert result.stderr.startswith("neuron-preflight: node 0: the image's neuron-ls (")
    assert not (marker / "failed").exists()


@given(
    st.one_of(
        st.text(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.sampled_from(["neuron_device", "instance", "devices", "x"]), inner, max_size=4)
            ),
            max_leaves=12,
        ).map(json.dumps),
    )
)
@settings(max_examples=examples(300, loop=60))
def test_any_answer_gives_a_device_list_or_none_and_never_raises(text: str) -> None:
    """Whatever an image's neuron-ls prints, the preflight reads a list of entries that each carry an integer
    ``neuron_device`` (or a top-level empty list), or nothing, in one sentence's worth of time: never a traceback."""
    entries = preflight._neuron_devices(text)
    assert entries is None or all(isinstance(e, dict) and type(e.get("neuron_device")) is int for e in entries)
