"""Starting a fresh local endpoint (a moto server on a free 127.0.0.1 port, stopped on exit whatever happened), or
attaching to the one another process serves (``--attach URL``, a URL on 127.0.0.1 or ``localhost`` only)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

from neuron_constructs.local_endpoint.endpoint import (
    DEFAULT_REGION,
    DIRECT,
    FAKE_CREDENTIALS,
    LOOPBACK,
    LocalAwsEndpoint,
    LocalEndpointError,
    sealed_environment,
)

__all__ = ["attached_endpoint", "local_aws_endpoint", "parse_local_url"]

_STARTUP_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM if this process dies without cleaning up (e.g. SIGKILL)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _wait_until_ready(server: subprocess.Popen[bytes], url: str) -> bool:
    deadline = time.monotonic() + _STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return False
        try:
            with DIRECT.open(f"{url}/moto-api/", timeout=1) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    return False


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


_MAX_URL_LENGTH = 100


def parse_local_url(url: str) -> int:
    """The port of ``url``, a local endpoint's ``http://127.0.0.1:PORT`` (or ``localhost``); anything else is refused
    with :class:`LocalEndpointError`: a deployment goes to this host only, never to a real AWS endpoint."""
    from urllib.parse import urlsplit

    shown = url if len(url) <= _MAX_URL_LENGTH else f"{url[:_MAX_URL_LENGTH]}..."
    refusal = (
        f"--attach {shown!r} is not a local endpoint's URL: give the http://{LOOPBACK}:PORT that "
        "`python -m neuron_constructs.local_endpoint --serve` printed."
    )
    if len(url) > _MAX_URL_LENGTH:
        raise LocalEndpointError(refusal)
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as error:
        raise LocalEndpointError(refusal) from error
    if (
        parts.scheme != "http"
        or parts.hostname not in (LOOPBACK, "localhost")
        or port is None
        or parts.username
        or parts.password
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise LocalEndpointError(refusal)
    return port


@contextlib.contextmanager
def attached_endpoint(url: str, *, region: str = DEFAULT_REGION) -> Iterator[LocalAwsEndpoint]:
    """The local endpoint another process serves at ``url`` (:func:`parse_local_url`), once it answers; it keeps
    running on exit. The CLI gets a CDK home of its own for this block."""
    port = parse_local_url(url)
    endpoint_url = f"http://{LOOPBACK}:{port}"
    try:
        with DIRECT.open(f"{endpoint_url}/moto-api/", timeout=5) as response:
            answered = response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        answered = False
    if not answered:
        raise LocalEndpointError(
            f"no local endpoint answers at {endpoint_url}: start one with "
            "`python -m neuron_constructs.local_endpoint --serve --app-dir <platform app>` and keep it running."
        )
    with tempfile.TemporaryDirectory(prefix="neuron-constructs-cdk-home-") as cdk_home:
        yield LocalAwsEndpoint(port=port, region=region, cdk_home=cdk_home)


@contextlib.contextmanager
def local_aws_endpoint(*, region: str = DEFAULT_REGION, log: Path | None = None) -> Iterator[LocalAwsEndpoint]:
    """Start a fresh moto server on a free 127.0.0.1 port; stop it on exit, whatever happened.

    ``log`` receives the server's request log (default: discarded).
    """
    if importlib.util.find_spec("moto") is None:
        raise LocalEndpointError(
            "moto is not installed: install the local extra with pip install 'neuron-constructs[local]'."
        )
    with tempfile.TemporaryDirectory(prefix="neuron-constructs-cdk-home-") as cdk_home:
        yield from _serve(region=region, log=log, cdk_home=cdk_home)


def _serve(*, region: str, log: Path | None, cdk_home: str) -> Iterator[LocalAwsEndpoint]:
    exited: int | None = None
    for _attempt in range(3):  # another process may take the free port between probe and bind
        port = _free_loopback_port()
        endpoint = LocalAwsEndpoint(port=port, region=region, cdk_home=cdk_home)
        with open(log or os.devnull, "ab") as log_file:
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "neuron_constructs.local_endpoint.moto_server",
                    "--host",
                    LOOPBACK,
                    "--port",
                    str(port),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                # The server is an AWS SDK process too: it sees only fake credentials and no other endpoint.
                env=sealed_environment(os.environ)
                | FAKE_CREDENTIALS
                | {
                    "AWS_DEFAULT_REGION": region,
                    "AWS_CONFIG_FILE": os.devnull,
                    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                    "AWS_EC2_METADATA_DISABLED": "true",
                    "NO_PROXY": f"{LOOPBACK},localhost",
                    "no_proxy": f"{LOOPBACK},localhost",
                },
                start_new_session=True,  # Ctrl-C reaches us; we stop the server ourselves
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        try:
            if _wait_until_ready(server, endpoint.url):
                yield endpoint
                return
            exited = server.poll()
        finally:
            _stop(server)
    if exited is not None:  # three times: not a port another process took
        raise LocalEndpointError(
            f"the moto server exited with status {exited} before it answered on {LOOPBACK}"
            + (f" (its output is in {log})" if log else "")
            + "."
        )
    raise LocalEndpointError(f"the moto server did not start on {LOOPBACK} within {_STARTUP_TIMEOUT_S:.0f} s.")
