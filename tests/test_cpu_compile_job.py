"""The precompile job's command (:func:`neuron_constructs.knowledge.cpu_compile.job_command`) run as AWS Batch runs it,
``/bin/sh -c``, around stand-ins for vLLM's server: after a CPU compile the server goes on listening, so the script
stops it once ``/health`` answers, and a server that ends first ends the job with its status."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import MEASURED_IN_CI

from neuron_constructs.knowledge.cpu_compile import job_command, server_port

SERVER = """
import sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
port, ready_after, exit_status, pid_file = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
open(pid_file, "w").write(str(__import__("os").getpid()))
started = time.monotonic()
if exit_status != "-":
    time.sleep(ready_after)
    sys.exit(int(exit_status))
class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/health" and time.monotonic() - started >= ready_after
        self.send_response(200 if ok else 503)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _job(
    tmp_path: Path, *, ready_after: float, exit_status: str = "-", env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], int]:
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    port = _free_port()
    pid_file = tmp_path / "server.pid"
    command = [sys.executable, str(server), str(port), str(ready_after), exit_status, str(pid_file)]
    result = subprocess.run(
        job_command(command, port, every=0.2), capture_output=True, text=True, timeout=60, env=env, check=False
    )
    return result, int(pid_file.read_text())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


@MEASURED_IN_CI
def test_the_job_stops_the_server_once_it_answers_health_and_succeeds(tmp_path: Path) -> None:
    started = time.monotonic()
    result, pid = _job(tmp_path, ready_after=0.5)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the server answers /health on port" in result.stdout and "stopping it" in result.stdout
    assert time.monotonic() - started < 20
    assert not _alive(pid)


@MEASURED_IN_CI
def test_a_server_that_ends_before_it_answers_ends_the_job_with_its_status(tmp_path: Path) -> None:
    result, _ = _job(tmp_path, ready_after=0.3, exit_status="3")
    assert result.returncode == 3
    assert "the server exited with status 3 before it answered /health" in result.stdout


def test_health_is_asked_directly_whatever_proxy_the_job_names(tmp_path: Path) -> None:
    dead = _free_port()
    proxies = {name: f"http://127.0.0.1:{dead}" for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY")}
    result, _ = _job(tmp_path, ready_after=0.2, env={"PATH": "/usr/bin:/bin", **proxies})
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("command", "mapped", "port"),
    [
        (["vllm", "serve", "m", "--port", "8080"], [9000], 8080),
        (["vllm", "serve", "m", "--port=8081"], [], 8081),
        (["vllm", "serve", "m"], [9000], 9000),
        (["vllm", "serve", "m"], [], 8000),
        (["vllm", "serve", "m", "--port", "nope"], [], 8000),
        (["vllm", "serve", "m", "--port"], [], 8000),
    ],
)
def test_the_port_is_the_command_s_then_the_mapping_s_then_vllm_s(
    command: list[str], mapped: list[int], port: int
) -> None:
    assert server_port(command, mapped) == port
