"""The suite's jsii kernels run from ``tests/jsii_kernel.js``: the same kernel, speaking the same protocol, without
jsii's relay process in front of it (``conftest.py``)."""

from __future__ import annotations

import base64
import importlib.resources
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import jsii
import jsii._runtime
import pytest
from conftest import _JSII_KERNEL, JSII_TYPE_CHECKS, ROOT, _kernel_environment
from jsii._kernel.providers.process import stderr_sink

ENTRY_POINT = ROOT / "tests" / "jsii_kernel.js"
NODE = os.environ.get("JSII_NODE", "node")


def test_the_suite_s_kernel_is_one_process_started_from_the_entry_point() -> None:
    if _JSII_KERNEL not in os.environ:
        pytest.skip("this session runs the kernel through a JSII_RUNTIME of its own")
    kernel = jsii._runtime.kernel.provider._process._process  # type: ignore[attr-defined]
    assert Path(kernel.args[-1]).name == ENTRY_POINT.name
    children = Path(f"/proc/{kernel.pid}/task/{kernel.pid}/children").read_text().split()
    assert children == [], "the kernel started a process of its own: jsii's relay is back"


def test_the_suite_s_kernel_links_each_package_from_jsii_s_cache_as_jsii_s_entry_point_does() -> None:
    if _JSII_KERNEL not in os.environ:
        pytest.skip("this session runs the kernel through a JSII_RUNTIME of its own")
    packages = sorted(Path(os.environ[_JSII_KERNEL], "tmp").glob("jsii-kernel-*/node_modules/aws-cdk-lib"))
    assert packages, "aws-cdk-lib is not where this session's kernels install their packages"
    assert all(package.is_symlink() for package in packages), "a kernel copied aws-cdk-lib's tree file by file"


@pytest.fixture
def entry_point_with(tmp_path: Path) -> Path:
    """The entry point beside a ``lib/program.js`` the test writes: returns where that program goes."""
    shutil.copyfile(ENTRY_POINT, tmp_path / ENTRY_POINT.name)
    (tmp_path / "lib").mkdir()
    return tmp_path / "lib" / "program.js"


def _run(entry_point: Path, stdin: bytes, *, preserve_symlinks: bool = True) -> subprocess.CompletedProcess[bytes]:
    directory = entry_point.parent.parent
    environment = dict(os.environ, NODE_OPTIONS=_kernel_environment(directory)["NODE_OPTIONS"])
    if not preserve_symlinks:
        environment.pop("NODE_OPTIONS")
    return subprocess.run(
        [NODE, str(directory / ENTRY_POINT.name)], input=stdin, capture_output=True, timeout=30, env=environment
    )


def test_without_preserve_symlinks_the_entry_point_refuses_to_start_the_kernel(entry_point_with: Path) -> None:
    entry_point_with.write_text('require("fs").writeSync(3, "{}\\n");\n')
    result = _run(entry_point_with, b"", preserve_symlinks=False)
    assert result.returncode != 0 and result.stdout == b""
    assert b"start the kernel with NODE_OPTIONS=--preserve-symlinks" in result.stderr


def test_the_kernel_reads_requests_from_stdin_and_answers_on_stdout_only(entry_point_with: Path) -> None:
    entry_point_with.write_text(
        'const fs = require("fs");\n'
        "const request = Buffer.alloc(64);\n"
        "const size = fs.readSync(3, request, 0, request.length, null);\n"
        "fs.writeSync(3, Buffer.from(`answer to ${request.subarray(0, size).toString().trim()}\\n`), 0);\n"
    )
    result = _run(entry_point_with, b'{"api": "hello"}\n')
    assert (result.returncode, result.stdout, result.stderr) == (0, b'answer to {"api": "hello"}\n', b"")


def test_what_javascript_prints_reaches_python_s_streams_never_the_protocol(
    entry_point_with: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    entry_point_with.write_text(
        'const fs = require("fs");\n'
        'console.log("logged");\n'
        'process.stderr.write("warned\\n");\n'
        'fs.writeSync(2, Buffer.from("xxraw\\n"), 2);\n'
        'fs.writeSync(3, "{}\\n");\n'
    )
    result = _run(entry_point_with, b"")
    assert (result.returncode, result.stdout) == (0, b"{}\n")
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert lines == [
        {"stdout": base64.b64encode(b"logged\n").decode()},
        {"stderr": base64.b64encode(b"warned\n").decode()},
        {"stderr": base64.b64encode(b"raw\n").decode()},
    ]
    read, write = os.pipe()
    os.write(write, result.stderr)
    os.close(write)
    with os.fdopen(read, "rb") as reader:
        stderr_sink(reader)  # what jsii's Python side does with the kernel's stderr
    assert capsysbinary.readouterr() == (b"logged\n", b"warned\nraw\n")


def test_jsii_s_kernel_greets_and_exits_when_its_input_closes(entry_point_with: Path) -> None:
    """The real kernel: its handshake on stdout, and the end of its input ends it (the workers never stop theirs)."""
    entry_point_with.write_bytes(
        importlib.resources.files("jsii._embedded.jsii").joinpath("lib__program.js").read_bytes()
    )
    result = _run(entry_point_with, b"")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"hello": f"@jsii/runtime@{jsii.__jsii_runtime_version__}"}


def _duration_of_a_string() -> object:
    from aws_cdk import Duration

    return Duration.seconds("ten")  # type: ignore[arg-type]


def _queue_with_a_number_for_a_duration() -> object:
    from aws_cdk import App, Stack
    from aws_cdk import aws_sqs as sqs

    return sqs.Queue(Stack(App(), "S"), "Q", visibility_timeout=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("call", [_duration_of_a_string, _queue_with_a_number_for_a_duration])
def test_a_wrong_type_is_refused_with_the_bindings_type_checks_or_without_them(call: Callable[[], object]) -> None:
    """The loop leaves the bindings' typeguard checks to CI (``NEURON_JSII_TYPE_CHECKS=on``): without them the jsii
    kernel still refuses a value of the wrong type as it receives the call, so no wrong call passes unseen."""
    checked = os.environ.get(JSII_TYPE_CHECKS) == "on"
    with pytest.raises(TypeError if checked else RuntimeError, match="type of argument" if checked else "deserialize"):
        call()
