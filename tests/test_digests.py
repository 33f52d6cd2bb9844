"""``neuron-ecs digests``: each registry asked as a container runtime asks it, against a registry on 127.0.0.1 that
answers as the OCI distribution API and the Docker token specification do (a bearer challenge, an anonymous token,
the digest in ``Docker-Content-Digest``)."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.server
import io
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import MEASURED_IN_CI

from neuron_constructs.knowledge.container_images import LIBRARY_IMAGES, NODE_PROBLEM_DETECTOR
from neuron_constructs.tools.cli import EXIT_AWS_ERROR, EXIT_CONFLICT, EXIT_OK, main
from neuron_constructs.tools.digests import MANIFEST_MEDIA_TYPES, DigestLookupError, manifest_url, registry_digest

TOKEN = "anonymous-pull-token"


def _manifest(n: int) -> bytes:
    """The bytes of a small image index, one per ``n``."""
    return json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_MEDIA_TYPES[0], "manifests": [], "n": n}).encode()


def _digest(n: int) -> str:
    """The digest of :func:`_manifest` ``(n)``: the SHA-256 of its bytes."""
    return "sha256:" + hashlib.sha256(_manifest(n)).hexdigest()


class _Registry:
    """A registry that holds ``manifests`` (``/v2/<name>/manifests/<tag>`` path -> digest of :func:`_manifest`)
    behind a bearer challenge, and records what it was asked; ``claims`` (path -> digest) makes its
    ``Docker-Content-Digest`` header say another digest than the bytes it sends."""

    def __init__(self, manifests: dict[str, str], *, token_body: bytes | None = None) -> None:
        self.manifests = manifests
        self.claims: dict[str, str] = {}
        self.realm: str | None = None
        """The token realm the challenge names (default: this registry's ``/token``)."""
        self.redirect: str | None = None
        """Where an authorized HEAD is sent on (``/moved``: this registry, a URL: another), the path appended."""
        self.asked: list[tuple[str, str, dict[str, str]]] = []
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:  # the token realm, or a manifest
                if self.path.startswith(("/v2/", "/moved/")):
                    self.do_HEAD(method="GET")
                    return
                registry.asked.append(("GET", self.path, dict(self.headers)))
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                body = token_body if token_body is not None else json.dumps({"token": TOKEN}).encode()
                if not self.path.startswith("/token") or not query.get("scope", [""])[0].endswith(":pull"):
                    self.send_response(400)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_HEAD(self, method: str = "HEAD") -> None:  # a manifest
                registry.asked.append((method, self.path, dict(self.headers)))
                path = self.path.removeprefix("/moved")
                name = path.removeprefix("/v2/").rsplit("/manifests/", 1)[0]
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    self.send_response(401)
                    self.send_header(
                        "WWW-Authenticate",
                        f'Bearer realm="{registry.realm or registry.url + "/token"}",service="test-registry",'
                        f'scope="repository:{name}:pull"',
                    )
                    self.end_headers()
                    return
                if registry.redirect is not None and path == self.path:
                    self.send_response(307)
                    self.send_header("Location", f"{registry.redirect}{path}")
                    self.end_headers()
                    return
                digest = registry.manifests.get(path)
                body = next((_manifest(n) for n in range(64) if _digest(n) == digest), b"") if digest else b""
                self.send_response(200 if digest else 404)
                if digest:
                    self.send_header("Docker-Content-Digest", registry.claims.get(path, digest))
                    self.send_header("Content-Type", MANIFEST_MEDIA_TYPES[0])
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if method == "GET":
                    self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _paths(registry_url: str) -> dict[str, str]:
    """Each library image's manifest path on a registry at ``registry_url``."""
    return {
        name: urllib.parse.urlsplit(manifest_url(image, registry_url)).path for name, image in LIBRARY_IMAGES.items()
    }


@pytest.fixture
def registry() -> Iterator[_Registry]:
    served = _Registry({})
    yield served
    served.close()


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_the_manifest_url_is_the_registry_s_v2_path_of_the_tag() -> None:
    assert manifest_url(NODE_PROBLEM_DETECTOR) == (
        "https://registry.k8s.io/v2/node-problem-detector/node-problem-detector/manifests/v1.35.2"
    )
    assert manifest_url(LIBRARY_IMAGES["NEURON_MONITOR"], "http://127.0.0.1:5000/") == (
        "http://127.0.0.1:5000/v2/neuron/neuron-monitor/manifests/1.10.0"
    )


PINNED = _digest(99)
"""The digest the pinned image of :func:`pinned_detector` names (no library image has a sourced digest today)."""


@pytest.fixture
def pinned_detector(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The library's images with node-problem-detector pinned to :data:`PINNED`, as a sourced digest would pin it."""
    from neuron_constructs.tools import digests

    pinned = NODE_PROBLEM_DETECTOR.pinned(PINNED, "a test")
    monkeypatch.setattr(digests, "LIBRARY_IMAGES", {**LIBRARY_IMAGES, "NODE_PROBLEM_DETECTOR": pinned})
    return pinned


def test_a_challenge_is_met_with_an_anonymous_token_and_the_manifest_asked_again(registry: _Registry) -> None:
    paths = _paths(registry.url)
    registry.manifests = {paths["NODE_PROBLEM_DETECTOR"]: _digest(7)}
    assert registry_digest(NODE_PROBLEM_DETECTOR, endpoint_url=registry.url) == _digest(7)
    (first, token, second) = registry.asked
    assert first[0] == "GET" and first[1].startswith("/v2/") and "Authorization" not in first[2]
    assert token[0] == "GET" and "scope=repository%3Anode-problem-detector%2Fnode-problem-detector%3Apull" in token[1]
    assert second[2]["Authorization"] == f"Bearer {TOKEN}"
    assert second[2]["Accept"].split(", ") == list(MANIFEST_MEDIA_TYPES)  # an index first, as a runtime asks


def test_digests_says_which_pins_match_and_gives_the_digest_to_pin_the_others(
    registry: _Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _paths(registry.url)
    registry.manifests = {path: _digest(n) for n, path in enumerate(paths.values(), start=1)}
    # pinned to the bytes this registry holds for the tag
    monkeypatch.setitem(LIBRARY_IMAGES, "NODE_PROBLEM_DETECTOR", NODE_PROBLEM_DETECTOR.pinned(_digest(40)))
    registry.manifests[paths["NODE_PROBLEM_DETECTOR"]] = _digest(40)
    status, out, err = _run("digests", "--endpoint-url", registry.url, "--json")
    assert (status, err) == (EXIT_OK, "")
    found = {d["name"]: d for d in json.loads(out)["images"]}
    assert set(found) == set(LIBRARY_IMAGES)
    assert found["NODE_PROBLEM_DETECTOR"]["status"] == "matches"
    assert found["NEURON_MONITOR"] == {
        "name": "NEURON_MONITOR",
        "uri": LIBRARY_IMAGES["NEURON_MONITOR"].uri,
        "pinned": None,
        "registry": registry.manifests[paths["NEURON_MONITOR"]],
        "status": "not pinned",
    }


def test_a_pinned_tag_that_now_names_other_bytes_exits_3_and_says_so(registry: _Registry, pinned_detector: Any) -> None:
    paths = _paths(registry.url)
    registry.manifests = {path: _digest(n) for n, path in enumerate(paths.values(), start=1)}
    status, out, _ = _run("digests", "--endpoint-url", registry.url)
    assert status == EXIT_CONFLICT
    moved = registry.manifests[paths["NODE_PROBLEM_DETECTOR"]]
    assert f"NODE_PROBLEM_DETECTOR: pinned to {PINNED}, but {NODE_PROBLEM_DETECTOR.uri} is now " in out
    assert moved in out and "tag moved" in out


@pytest.mark.parametrize(
    ("token_body", "problem"),
    [
        (b"<html>login</html>", "is not JSON"),
        (b'{"expires_in": 300}', "holds no token"),
        (b"x" * (64 * 1024 + 1), "longer than 65,536 bytes"),
    ],
    ids=["html", "no-token", "over-64-kib"],
)
def test_a_token_answer_that_is_not_one_is_a_sentence(token_body: bytes, problem: str) -> None:
    served = _Registry({}, token_body=token_body)
    try:
        with pytest.raises(DigestLookupError, match=problem):
            registry_digest(NODE_PROBLEM_DETECTOR, endpoint_url=served.url)
    finally:
        served.close()


def test_an_unknown_tag_or_no_registry_is_exit_1_with_a_sentence_and_no_traceback(registry: _Registry) -> None:
    started = time.monotonic()
    status, out, err = _run("digests", "--endpoint-url", registry.url)  # the registry holds none of the tags
    assert (status, out) == (EXIT_AWS_ERROR, "")
    assert err.startswith("neuron-ecs digests: ") and "answered no such tag or repository" in err
    assert "Traceback" not in err
    registry.close()
    status, _, err = _run("digests", "--endpoint-url", registry.url)  # nothing listens there now
    assert status == EXIT_AWS_ERROR and "could not be reached" in err and "Traceback" not in err
    assert time.monotonic() - started < 10


# --- hostile servers: every answer a sentence, every run within its deadline --------------------------------------


@contextlib.contextmanager
def _raw_server(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that runs ``answer`` on each connection; yields its http URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection, contextlib.suppress(OSError):
                answer(connection)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def _ssh_banner(connection: socket.socket) -> None:
    connection.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
    connection.recv(4096)


def _long_header_line(connection: socket.socket) -> None:
    connection.recv(4096)
    connection.sendall(b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * 70_000 + b"\r\n\r\n")


def _drip(connection: socket.socket) -> None:
    """An answer one byte at a time, each well within any per-read timeout, never finished."""
    connection.recv(4096)
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    for _ in range(600):
        connection.sendall(b"X")
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("answer", "sentence"),
    [
        (_ssh_banner, "did not answer HTTP (it said"),
        (_long_header_line, "answered with a line longer than HTTP clients read (64 KiB)"),
    ],
    ids=["ssh banner", "70 KB header line"],
)
def test_a_server_that_does_not_answer_http_is_exit_1_with_a_sentence(
    answer: Callable[[socket.socket], None], sentence: str
) -> None:
    with _raw_server(answer) as url:
        started = time.monotonic()
        status, out, err = _run("digests", "--endpoint-url", url)
    assert (status, out) == (EXIT_AWS_ERROR, "")
    assert err.startswith("neuron-ecs digests: http://127.0.0.1:") and sentence in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert time.monotonic() - started < 5


@MEASURED_IN_CI
def test_a_dripping_server_is_given_up_on_at_the_deadline_of_the_whole_run() -> None:
    """One byte every 50 ms passes any per-read timeout; the run still ends when its deadline passes."""
    with _raw_server(_drip) as url:
        started = time.monotonic()
        status, _, err = _run("digests", "--endpoint-url", url, "--deadline", "0.6")
        took = time.monotonic() - started
    assert status == EXIT_AWS_ERROR
    assert "did not answer within the 0.6 s the run may take" in err and "Traceback" not in err
    assert 0.5 < took < 2.6


def test_a_cross_origin_redirect_gets_neither_the_token_nor_trust(registry: _Registry) -> None:
    other = _Registry({})
    try:
        other.manifests = {path: _digest(9) for path in _paths(other.url).values()}
        registry.redirect = other.url
        status, out, err = _run("digests", "--endpoint-url", registry.url)
    finally:
        other.close()
    assert (status, out) == (EXIT_AWS_ERROR, "")
    assert f"redirected to {other.url}/v2/" in err and "another origin" in err
    assert other.asked == []  # never asked: neither the token nor the request went there
    assert _digest(9) not in err


def test_a_redirect_within_the_registry_is_followed_without_the_token(registry: _Registry) -> None:
    paths = _paths(registry.url)
    registry.manifests = {paths["NODE_PROBLEM_DETECTOR"]: _digest(5)}
    registry.redirect = "/moved"
    assert registry_digest(NODE_PROBLEM_DETECTOR, endpoint_url=registry.url) == _digest(5)
    heads = [
        (path, headers.get("Authorization")) for _, path, headers in registry.asked if not path.startswith("/token")
    ]
    moved = [authorization for path, authorization in heads if path.startswith("/moved/")]
    assert moved[0] is None  # the token stays behind on a redirect; the registry asks for one again
    assert moved[-1] == f"Bearer {TOKEN}"


def test_redirects_to_plain_http_or_another_port_are_other_origins() -> None:
    from neuron_constructs.tools.digests import _origin

    assert _origin("https://public.ecr.aws/v2/x") == _origin("https://PUBLIC.ecr.aws:443/v2/y")
    assert _origin("https://public.ecr.aws/v2/x") != _origin("http://public.ecr.aws/v2/x")
    assert _origin("https://public.ecr.aws/v2/x") != _origin("https://public.ecr.aws:8443/v2/x")


@pytest.mark.parametrize("deadline", ["0", "-1", "nan", "soon", "3601"])
def test_a_deadline_that_is_not_a_number_of_seconds_is_a_usage_error(deadline: str) -> None:
    status, _, err = _run("digests", "--deadline", deadline)
    assert status == 2 and "is not a number of seconds" in err


def test_an_error_sentence_needs_no_region_or_cluster_the_command_does_not_take() -> None:
    from botocore.exceptions import ClientError

    from neuron_constructs.tools.commands.aws import _explain

    error = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "HeadObject")
    sentence = _explain(error, "digests", argparse.Namespace(command="digests"))
    assert sentence is not None and sentence.startswith("Access denied for HeadObject")


@pytest.mark.parametrize(
    ("status", "header", "value", "said"),
    [
        (302, "Location", "http://127.0.0.1:99999/x", "is no URL"),
        (302, "Location", "http://[::1/x", "which is no URL"),
        (401, "WWW-Authenticate", 'Bearer realm="https://h:abc/t"', "is no URL"),
    ],
    ids=["redirect-port-out-of-range", "redirect-unclosed-bracket", "realm-port-not-a-number"],
)
def test_a_url_a_registry_sends_that_is_none_is_a_sentence(
    status: int, header: str, value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN a registry whose redirect or token realm is no URL WHEN digests asks it THEN exit 1 with a sentence
    naming it, never a traceback."""

    class Hostile(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self.send_response(status)
            self.send_header(header, value)
            self.end_headers()

        do_GET = do_HEAD

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        code = main(["digests", "--endpoint-url", f"http://127.0.0.1:{server.server_port}", "--deadline", "5"])
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert code == 1 and said in err and "Traceback" not in err


# --- what a registry may not make digests do: ask another host for a token, or name bytes it did not send ----------


def test_a_token_realm_on_another_host_is_never_asked(registry: _Registry) -> None:
    """GIVEN a registry whose challenge names a realm on another host (here 127.0.0.2; on AWS it could be the
    instance metadata service, 169.254.169.254) WHEN digests asks it THEN exit 1 with a sentence, and nothing is
    sent to that host."""
    other = http.server.ThreadingHTTPServer(("127.0.0.2", 0), http.server.BaseHTTPRequestHandler)
    asked: list[str] = []
    other.RequestHandlerClass = type(
        "Recorder", (http.server.BaseHTTPRequestHandler,), {"do_GET": lambda self: asked.append(self.path)}
    )
    threading.Thread(target=other.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        registry.realm = f"http://127.0.0.2:{other.server_port}/token"
        status, out, err = _run("digests", "--endpoint-url", registry.url, "--deadline", "5")
    finally:
        other.shutdown()
        other.server_close()
    assert (status, out) == (EXIT_AWS_ERROR, "")
    assert "named a token realm on another host or port (http://127.0.0.2:" in err and "Traceback" not in err
    assert asked == []


def test_a_realm_is_the_registry_s_own_host_and_port_or_one_it_documents() -> None:
    from neuron_constructs.tools.digests import _check_realm_host, _origin

    def check(realm: str, registry: str) -> None:
        _check_realm_host(_origin(realm), _origin(registry), realm)

    check("https://public.ecr.aws/token/", "https://public.ecr.aws")
    check("https://auth.docker.io/token", "https://registry-1.docker.io")
    check("http://127.0.0.1:5000/token", "http://127.0.0.1:5000")
    for realm, registry in [
        ("https://169.254.169.254/latest", "https://public.ecr.aws"),
        ("https://auth.docker.io/token", "https://public.ecr.aws"),
        ("https://registry.k8s.io.example.com/token", "https://registry.k8s.io"),
        ("http://127.0.0.1:2375/containers/json", "http://127.0.0.1:5000"),  # another service of the same host
        ("https://auth.docker.io:8443/token", "https://registry-1.docker.io"),
    ]:
        with pytest.raises(DigestLookupError, match="named a token realm on another host"):
            check(realm, registry)


def test_a_digest_header_that_names_other_bytes_than_the_manifest_is_a_sentence_not_a_digest(
    registry: _Registry,
) -> None:
    """GIVEN a registry whose Docker-Content-Digest names other bytes than the manifest it sends WHEN digests asks
    it THEN exit 1, naming what it claims and what the manifest hashes to; the claimed digest is never given as the
    tag's."""
    paths = _paths(registry.url)
    registry.manifests = {path: _digest(n) for n, path in enumerate(paths.values(), start=1)}
    registry.claims = {paths["NODE_PROBLEM_DETECTOR"]: str(NODE_PROBLEM_DETECTOR.digest)}
    with pytest.raises(DigestLookupError) as raised:
        registry_digest(NODE_PROBLEM_DETECTOR, endpoint_url=registry.url)
    real = registry.manifests[paths["NODE_PROBLEM_DETECTOR"]]
    assert f"claims the digest {NODE_PROBLEM_DETECTOR.digest}, but the manifest it sent is {real}" in str(raised.value)
    status, out, err = _run("digests", "--endpoint-url", registry.url, "--json")
    assert (status, out) == (EXIT_AWS_ERROR, "") and "claims the digest" in err


def test_the_digest_is_the_sha256_of_the_manifest_bytes_fetched_with_get(registry: _Registry) -> None:
    paths = _paths(registry.url)
    registry.manifests = {paths["NODE_PROBLEM_DETECTOR"]: _digest(3)}
    assert registry_digest(NODE_PROBLEM_DETECTOR, endpoint_url=registry.url) == (
        "sha256:" + hashlib.sha256(_manifest(3)).hexdigest()
    )
    assert {method for method, path, _ in registry.asked if path.startswith("/v2/")} == {"GET"}
