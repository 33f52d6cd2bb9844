"""The smoke test's Lambda function against servers on 127.0.0.1: each outcome is a hookStatus and one sentence."""

from __future__ import annotations

import ast
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

import pytest
from conftest import MEASURED_IN_CI
from hypothesis import given, settings
from hypothesis import strategies as st
from ports import unused_port

from neuron_constructs.programs import smoke_test
from neuron_constructs.programs.carrying import program_source

INLINE_CODE_LIMIT = 4 * 1024 * 1024
"""CloudFormation's limit on ``AWS::Lambda::Function`` ``Code.ZipFile``: "This zip file cannot exceed 4MB" (the
CloudFormation template reference, quoted in aws/aws-cdk#30761 and #30773; the older 4,096-character limit is gone:
aws/aws-cdk#20624, aws-cloudformation/cfn-lint#2446)."""
SOURCE_BUDGET = 8192
"""This function's own budget in characters: a small part of a template, which CloudFormation caps at 1 MB."""


class Recorder(BaseHTTPRequestHandler):
    """Answers by path: ``/ok`` 200, ``/fail`` 500, ``/moved`` 302, ``/endless`` 200 and a body without end; records
    each request's method, path, headers and body on the server."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append((self.command, self.path, dict(self.headers), body))  # type: ignore[attr-defined]
        if self.path == "/endless":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for _ in range(4096):  # 64 MiB at most, far beyond the read limit
                    self.wfile.write(b"x" * 16384)
            except OSError:
                pass
            return
        status = {"/ok": 200, "/fail": 500, "/moved": 302}.get(self.path, 404)
        self.send_response(status)
        if status == 302:
            self.send_header("Location", "/ok")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    httpd.daemon_threads = True
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def base_url(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def invoke(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str, **settings: str
) -> tuple[str, str]:
    """Run the handler with ``SMOKE_TEST_URL=url`` and ``SMOKE_TEST_<NAME>`` settings: its hookStatus and log."""
    for name in ("URL", "PATH", "METHOD", "BODY", "EXPECT_STATUS", "TIMEOUT", "HEADER"):
        monkeypatch.delenv(f"SMOKE_TEST_{name}", raising=False)
    monkeypatch.setenv("SMOKE_TEST_URL", url)
    for name, value in settings.items():
        monkeypatch.setenv(f"SMOKE_TEST_{name.upper()}", value)
    answer = smoke_test.handler({"targetServiceRevisionArn": "arn:aws:ecs:r:1:service-revision/c/s/7"}, None)
    assert set(answer) == {"hookStatus"}
    log = capsys.readouterr().out
    assert log.count("\n") == 1, "one sentence per invocation"
    return answer["hookStatus"], log


def test_the_expected_status_succeeds(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, log = invoke(monkeypatch, capsys, base_url(server), path="/ok")
    assert status == "SUCCEEDED"
    assert "answered 200 as expected" in log
    assert "service-revision/c/s/7" in log


def test_a_wrong_status_fails_saying_expected_and_got(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, log = invoke(monkeypatch, capsys, base_url(server), path="/fail")
    assert status == "FAILED"
    assert "expected 200, got 500" in log


def test_a_redirect_is_the_status_it_got_not_followed(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, log = invoke(monkeypatch, capsys, base_url(server), path="/moved")
    assert (status, "expected 200, got 302" in log) == ("FAILED", True)
    status, _ = invoke(monkeypatch, capsys, base_url(server), path="/moved", expect_status="302")
    assert status == "SUCCEEDED"


@MEASURED_IN_CI
def test_a_server_that_never_answers_fails_as_a_timeout_within_the_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        started = time.monotonic()
        status, log = invoke(
            monkeypatch, capsys, f"http://127.0.0.1:{silent.getsockname()[1]}", path="/ok", timeout="1"
        )
        took = time.monotonic() - started
    assert status == "FAILED"
    assert "timed out after 1 s" in log
    assert 0.9 < took < 1.8


def test_a_closed_port_fails_as_connection_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, log = invoke(monkeypatch, capsys, f"http://127.0.0.1:{unused_port()}", path="/ok", timeout="2")
    assert status == "FAILED"
    assert "connection refused" in log


def test_a_post_carries_its_body_and_content_type(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    body = '{"inputs": "Is the green model loaded?"}'
    status, _ = invoke(
        monkeypatch, capsys, base_url(server), path="/ok", method="POST", body=body, header="X-Test-Traffic: green"
    )
    assert status == "SUCCEEDED"
    method, path, headers, received = server.seen[-1]  # type: ignore[attr-defined]
    assert (method, path, received) == ("POST", "/ok", body.encode())
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Test-Traffic"] == "green"


def test_an_endless_answer_is_read_only_to_the_bound(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    status, log = invoke(monkeypatch, capsys, base_url(server), path="/endless", timeout="2")
    assert status == "SUCCEEDED"
    assert f"({smoke_test.READ_LIMIT} bytes read)" in log
    assert time.monotonic() - started < 1.5


def test_a_proxy_in_the_environment_is_not_used(
    server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dead_proxy = f"http://127.0.0.1:{unused_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(urllib.error.URLError):  # urllib's default opener would go through the dead proxy
        urllib.request.build_opener().open(base_url(server) + "/ok", timeout=2)
    status, _ = invoke(monkeypatch, capsys, base_url(server), path="/ok")
    assert status == "SUCCEEDED"


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"url": "ftp://example.com"}, "SMOKE_TEST_URL"),
        ({"url": "http://example.com/base"}, "SMOKE_TEST_URL"),
        ({"url": "http://user@example.com"}, "SMOKE_TEST_URL"),
        ({"url": "http://example.com:99999"}, "SMOKE_TEST_URL"),
        ({"url": ""}, "SMOKE_TEST_URL"),
        ({"path": "ping"}, "SMOKE_TEST_PATH"),
        ({"path": "/a b"}, "SMOKE_TEST_PATH"),
        ({"path": "/a#b"}, "SMOKE_TEST_PATH"),
        ({"method": "TRACE"}, "SMOKE_TEST_METHOD"),
        ({"expect_status": "99"}, "SMOKE_TEST_EXPECT_STATUS"),
        ({"expect_status": "600"}, "SMOKE_TEST_EXPECT_STATUS"),
        ({"expect_status": "٢٠٠"}, "SMOKE_TEST_EXPECT_STATUS"),
        ({"timeout": "0"}, "SMOKE_TEST_TIMEOUT"),
        ({"timeout": "901"}, "SMOKE_TEST_TIMEOUT"),
        ({"timeout": "1.5"}, "SMOKE_TEST_TIMEOUT"),
        ({"header": "X-Test\r\nEvil: 1"}, "SMOKE_TEST_HEADER"),
        ({"header": "no colon"}, "SMOKE_TEST_HEADER"),
    ],
)
def test_bad_configuration_fails_with_a_sentence_naming_the_setting(
    settings: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environment = {"path": "/ok", **settings}
    url = environment.pop("url", f"http://127.0.0.1:{unused_port()}")
    status, log = invoke(monkeypatch, capsys, url, **environment)
    assert status == "FAILED"
    assert "malformed configuration" in log and named in log


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["URL", "PATH", "METHOD", "EXPECT_STATUS", "TIMEOUT", "HEADER"]), st.text()))
def test_any_environment_is_read_without_an_exception(values: dict[str, str]) -> None:
    read = smoke_test.read_configuration({f"SMOKE_TEST_{k}": v for k, v in values.items()})
    if isinstance(read, str):
        assert read.startswith("SMOKE_TEST_") and len(read) < 400
    else:
        assert read.url.startswith(("http://", "https://")) and 1 <= read.timeout <= smoke_test.MAX_TIMEOUT


def test_an_unexpected_error_is_a_failed_stage_not_an_exception(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(config: smoke_test.Configuration) -> tuple[str, str]:
        raise RuntimeError("boom")

    monkeypatch.setattr(smoke_test, "run", broken)
    status, log = invoke(monkeypatch, capsys, "http://127.0.0.1:1", path="/ok")
    assert status == "FAILED" and "unexpected error: RuntimeError" in log


def test_the_function_imports_only_the_standard_library() -> None:
    tree = ast.parse(resources.files("neuron_constructs.programs").joinpath("smoke_test.py").read_text())
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
    }
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_the_shipped_source_fits_inline_code_and_runs_alone() -> None:
    source = program_source("neuron_constructs.programs", "smoke_test.py")
    assert len(source.encode()) < INLINE_CODE_LIMIT
    assert len(source) <= SOURCE_BUDGET, len(source)
    namespace: dict[str, Any] = {"__name__": "index"}
    exec(compile(source, "index.py", "exec"), namespace)  # what Lambda loads as index.handler
    assert callable(namespace["handler"])
