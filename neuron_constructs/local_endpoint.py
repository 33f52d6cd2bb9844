"""Deploy a CDK app with the real ``cdk`` CLI to a local AWS endpoint: a moto server on 127.0.0.1.

``python -m neuron_constructs.local_endpoint`` (``make deploy-local``) starts a fresh moto
server on a free loopback port, runs ``cdk bootstrap`` and ``cdk deploy --all`` against it,
prints what each stack created (:mod:`neuron_constructs.deployment_report`) and stops the
server, also on failure, Ctrl-C or SIGTERM. No AWS account or credentials are needed.

Only 127.0.0.1 is contacted: the CLI and the SDKs get fake credentials, a fixed region, the
local endpoint for every service, no instance metadata lookups, no proxy for loopback, and
neither telemetry, notices nor version checks. One quirk of the pair is handled here: the CLI
hands CloudFormation a template URL built from ``AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION``,
and moto reads the bucket from the host name of that URL unless the host is ``localhost``.

Each run needs a fresh server: moto mishandles change sets that update an existing stack.

Needs the ``local`` extra (``pip install 'neuron-constructs[local]'``) for ``moto[server]``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import boto3

__all__ = [
    "LocalAwsEndpoint",
    "LocalEndpointError",
    "deploy_app",
    "local_aws_endpoint",
    "main",
]

LOOPBACK = "127.0.0.1"
DEFAULT_REGION = "us-east-1"
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_STARTUP_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0
_INHERITED_AWS_SETTINGS = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CA_BUNDLE",
)


class LocalEndpointError(RuntimeError):
    """The local endpoint could not start, or a ``cdk`` command against it failed."""


@dataclass(frozen=True)
class LocalAwsEndpoint:
    """A running moto server on the loopback interface.

    ``url`` uses 127.0.0.1; :meth:`environment` is what a process needs to talk to it.
    """

    port: int
    region: str = DEFAULT_REGION

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def label(self) -> str:
        """How reports name this endpoint."""
        return f"the local endpoint {self.url} (moto)"

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) pointed at this endpoint only."""
        env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _INHERITED_AWS_SETTINGS}
        env.update(FAKE_CREDENTIALS)
        env.update(
            {
                "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region,
                "AWS_ENDPOINT_URL": self.url,
                # A URL string the CLI puts into CreateChangeSet; moto resolves it in-process.
                "AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION": f"http://localhost:{self.port}",
                # A user's ~/.aws files could name profiles, SSO or credential processes.
                "AWS_CONFIG_FILE": os.devnull,
                "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true",
                "NO_PROXY": f"{LOOPBACK},localhost",
                "no_proxy": f"{LOOPBACK},localhost",
                "CDK_DISABLE_CLI_TELEMETRY": "true",
                "CDK_DISABLE_VERSION_CHECK": "true",
            }
        )
        return env

    def session(self) -> boto3.Session:
        """A boto3 session with the fake credentials and this endpoint's region."""
        import boto3

        return boto3.Session(
            aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=self.region,
        )

    def client(self, service: str) -> Any:
        """A boto3 client for ``service`` on this endpoint."""
        return self.session().client(service, endpoint_url=self.url)


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
            with urllib.request.urlopen(f"{url}/moto-api/", timeout=1) as response:
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


@contextlib.contextmanager
def local_aws_endpoint(*, region: str = DEFAULT_REGION, log: Path | None = None) -> Iterator[LocalAwsEndpoint]:
    """Start a fresh moto server on a free 127.0.0.1 port; stop it on exit, whatever happened.

    ``log`` receives the server's request log (default: discarded).
    """
    if importlib.util.find_spec("moto") is None:
        raise LocalEndpointError(
            "moto is not installed: install the local extra with pip install 'neuron-constructs[local]'."
        )
    for _attempt in range(3):  # another process may take the free port between probe and bind
        port = _free_loopback_port()
        endpoint = LocalAwsEndpoint(port=port, region=region)
        with open(log or os.devnull, "ab") as log_file:
            server = subprocess.Popen(
                [sys.executable, "-m", "neuron_constructs.local_moto", "--host", LOOPBACK, "--port", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us; we stop the server ourselves
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        try:
            if _wait_until_ready(server, endpoint.url):
                yield endpoint
                return
        finally:
            _stop(server)
    raise LocalEndpointError(f"the moto server did not start on {LOOPBACK} within {_STARTUP_TIMEOUT_S:.0f} s.")


def run_cdk(cdk: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> None:
    """Run the ``cdk`` CLI; a non-zero exit becomes :class:`LocalEndpointError`."""
    command = [cdk, *args]
    try:
        result = subprocess.run(command, env=dict(env), cwd=cwd, check=False)
    except FileNotFoundError as error:
        raise LocalEndpointError(f"the cdk CLI was not found ({cdk}): run npm ci, or pass --cdk PATH.") from error
    if result.returncode != 0:
        raise LocalEndpointError(f"{' '.join(command)} exited with status {result.returncode}.")


def deploy_app(
    endpoint: LocalAwsEndpoint,
    *,
    app_dir: Path,
    cdk: str = "cdk",
    output: Path | None = None,
    context: Mapping[str, str] | None = None,
    stacks: Sequence[str] = (),
) -> list[str]:
    """``cdk synth`` once, then ``cdk bootstrap`` and ``cdk deploy`` of that cloud assembly (every stack
    unless ``stacks`` names some) to ``endpoint``.

    Returns the names of the deployed stacks: in the order of ``stacks``, else by creation time.
    """
    env = endpoint.environment()
    account = endpoint.client("sts").get_caller_identity()["Account"]
    assembly = (output or app_dir / "cdk.out").resolve()
    synth = ["synth", "--quiet", "--no-notices", "--output", str(assembly)]
    for key, value in (context or {}).items():
        synth += ["--context", f"{key}={value}"]
    run_cdk(cdk, synth, env=env, cwd=app_dir)
    common = ["--no-notices", "--app", str(assembly)]
    run_cdk(cdk, ["bootstrap", *common, f"aws://{account}/{endpoint.region}"], env=env, cwd=app_dir)
    selection = list(stacks) or ["--all"]
    run_cdk(cdk, ["deploy", *common, *selection, "--require-approval", "never"], env=env, cwd=app_dir)
    cloudformation = endpoint.client("cloudformation")
    deployed = [s for s in cloudformation.describe_stacks()["Stacks"] if s["StackName"] != "CDKToolkit"]
    names = [s["StackName"] for s in sorted(deployed, key=lambda s: (s["CreationTime"], s["StackName"]))]
    return [name for name in stacks if name in names] if stacks else names


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m neuron_constructs.local_endpoint",
        description="Deploy a CDK app with the cdk CLI to a fresh local moto server on 127.0.0.1, "
        "print what each stack created, and stop the server.",
    )
    parser.add_argument("stacks", nargs="*", help="stacks to deploy (default: all)")
    parser.add_argument("--app-dir", type=Path, default=Path.cwd(), help="directory with cdk.json (default: .)")
    parser.add_argument("--cdk", default="cdk", help="the cdk CLI to run (default: cdk on PATH)")
    parser.add_argument("--region", default=DEFAULT_REGION, help=f"region to deploy to (default: {DEFAULT_REGION})")
    parser.add_argument("--output", type=Path, help="cloud assembly directory (default: cdk.json's)")
    parser.add_argument("--context", "-c", action="append", default=[], metavar="KEY=VALUE", help="CDK context")
    parser.add_argument("--server-log", type=Path, help="append the moto server's request log to this file")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="after deploying, keep the endpoint running (Ctrl-C stops it) and print how to reach it",
    )
    args = parser.parse_args(argv)
    context = dict(item.split("=", 1) for item in args.context if "=" in item)
    if len(context) != len(args.context):
        parser.error("--context takes KEY=VALUE")

    from neuron_constructs.deployment_report import describe_stacks, format_reports

    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with SIGINT ignored (`cmd &`)
    try:
        with local_aws_endpoint(region=args.region, log=args.server_log) as endpoint:
            print(f"local AWS endpoint (moto): {endpoint.url}", flush=True)
            stack_names = deploy_app(
                endpoint, app_dir=args.app_dir, cdk=args.cdk, output=args.output, context=context, stacks=args.stacks
            )
            reports = describe_stacks(endpoint.client, stack_names, functions_run=False)
            print(format_reports(reports, endpoint=endpoint.label), flush=True)
            if args.serve:
                print("\nThe endpoint stays up until Ctrl-C. In another shell:", flush=True)
                environment = endpoint.environment()
                for key in (
                    "AWS_ENDPOINT_URL",
                    "AWS_REGION",
                    "AWS_DEFAULT_REGION",
                    "AWS_ACCESS_KEY_ID",
                    "AWS_SECRET_ACCESS_KEY",
                ):
                    print(f"  export {key}={environment[key]}", flush=True)
                with contextlib.suppress(KeyboardInterrupt):
                    while True:
                        time.sleep(3600)
    except LocalEndpointError as error:
        print(f"deploy-local failed: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopped; the local endpoint is shut down.", file=sys.stderr)
        return 130
    print("The local endpoint is shut down; every run starts from an empty one.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
