"""Deploy a CDK app with the real ``cdk`` CLI to a local AWS endpoint: a moto server on 127.0.0.1.

``python -m neuron_constructs.local_endpoint`` (``make deploy-local``) starts a fresh moto
server on a free loopback port, runs ``cdk bootstrap`` and ``cdk deploy --all`` against it,
prints what each stack created (:mod:`neuron_constructs.tools.deployment_report`) and stops the
server, also on failure, Ctrl-C or SIGTERM. No AWS account or credentials are needed.

Only 127.0.0.1 is contacted: the CLI and the SDKs get fake credentials, a fixed region, the
local endpoint for every service, no instance metadata lookups, no proxy for loopback (the readiness probe and this
module's own boto3 clients use no proxy at all, whatever ``HTTP(S)_PROXY`` say), and
neither telemetry, notices nor version checks. One quirk of the pair is handled here: the CLI
hands CloudFormation a template URL built from ``AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION``,
and moto reads the bucket from the host name of that URL unless the host is ``localhost``.

Each run needs a fresh server: moto mishandles change sets that update an existing stack. ``--serve`` keeps the
server up after deploying and prints its URL; ``--attach URL`` deploys another app against that server (a second app
on the first one's platform), bootstrapping only what is not bootstrapped yet, and refuses a stack the endpoint holds
already. Only a URL on 127.0.0.1 (or ``localhost``) is accepted.

Needs the ``local`` extra (``pip install 'neuron-constructs[local]'``) for ``moto[server]``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import datetime
import functools
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import boto3

    from neuron_constructs.tools.deployment_report.model import StackReport

LOOPBACK = "127.0.0.1"
DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "123456789012"
"""The account moto answers for credentials it does not know."""
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_STARTUP_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0


def sealed_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without a single ``AWS_*`` variable: no profile, credentials, credential source, config or credentials
    file, CA bundle, and no ``AWS_ENDPOINT_URL*`` or ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` that could send an SDK
    call of the deployment, or of the moto server, to a real AWS endpoint. The caller adds what it means."""
    return {k: v for k, v in base.items() if not k.upper().startswith("AWS_")}


class LocalEndpointError(RuntimeError):
    """The local endpoint could not start, or a ``cdk`` command against it failed."""


@dataclass(frozen=True)
class LocalAwsEndpoint:
    """A running moto server on the loopback interface.

    ``url`` uses 127.0.0.1; :meth:`environment` is what a process needs to talk to it. The fake
    credentials act in :attr:`account`; :meth:`credentials` issues credentials for any other account
    (an assumed role, which moto grants), so stacks with an explicit ``env`` deploy there.
    """

    port: int
    region: str = DEFAULT_REGION
    cdk_home: str = ""
    """A fresh CDK CLI home for this endpoint (the CLI caches which account an access key belongs to)."""
    _issued: dict[str, dict[str, str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def account(self) -> str:
        """The account the fake credentials act in (moto's default account)."""
        return DEFAULT_ACCOUNT

    def credentials(self, account: str | None = None) -> dict[str, str]:
        """``AWS_*`` credential variables acting in ``account`` (default :attr:`account`) on this endpoint."""
        if account in (None, self.account):
            return dict(FAKE_CREDENTIALS)
        if account not in self._issued:
            sts = self.session().client("sts", endpoint_url=self.url, config=_no_proxy_config())
            issued = sts.assume_role(
                RoleArn=f"arn:aws:iam::{account}:role/neuron-constructs-local-endpoint", RoleSessionName="deploy-local"
            )["Credentials"]
            self._issued[account] = {
                "AWS_ACCESS_KEY_ID": issued["AccessKeyId"],
                "AWS_SECRET_ACCESS_KEY": issued["SecretAccessKey"],
                "AWS_SESSION_TOKEN": issued["SessionToken"],
            }
        return dict(self._issued[account])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def label(self) -> str:
        """How reports name this endpoint."""
        return f"the local endpoint {self.url} (moto)"

    def environment(self, base: Mapping[str, str] | None = None, *, account: str | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) pointed at this endpoint only, acting in ``account``."""
        env = sealed_environment(os.environ if base is None else base)
        env.update(self.credentials(account))
        if self.cdk_home:
            env["CDK_HOME"] = self.cdk_home
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

    def session(self, *, account: str | None = None, region: str | None = None) -> boto3.Session:
        """A boto3 session acting in ``account`` (default :attr:`account`) and ``region`` (default ``region``)."""
        import boto3
        import botocore.session

        credentials = self.credentials(account) if account not in (None, self.account) else FAKE_CREDENTIALS
        # Read no environment variable for these (botocore session_vars: config name, variable, default, converter):
        # no profile, config or credentials file, CA bundle or configured endpoint of the user's applies.
        core = botocore.session.Session(
            session_vars={
                "profile": (None, None, None, None),
                "config_file": (None, None, os.devnull, None),
                "credentials_file": (None, None, os.devnull, None),
                "ca_bundle": (None, None, None, None),
                "ignore_configured_endpoint_urls": (None, None, True, None),
            }
        )
        return boto3.Session(
            botocore_session=core,
            aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=credentials.get("AWS_SESSION_TOKEN"),
            region_name=region or self.region,
        )

    def client(self, service: str, *, account: str | None = None, region: str | None = None) -> Any:
        """A boto3 client for ``service`` on this endpoint, acting in ``account`` and ``region``; it uses no proxy,
        whatever ``HTTP_PROXY``/``HTTPS_PROXY`` say."""
        return self.session(account=account, region=region).client(
            service, endpoint_url=self.url, config=_no_proxy_config()
        )


def _no_proxy_config() -> Any:
    """A botocore client configuration with no proxy: an empty ``proxies`` mapping is used as given, where none
    (the default) reads ``HTTP(S)_PROXY`` from the environment."""
    from botocore.config import Config

    return Config(proxies={})


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Opens URLs without any proxy, whatever ``HTTP(S)_PROXY`` say: the local endpoint is on this host."""


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
            with _DIRECT.open(f"{url}/moto-api/", timeout=1) as response:
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
        with _DIRECT.open(f"{endpoint_url}/moto-api/", timeout=5) as response:
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


def run_cdk(
    cdk: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path, capture: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the ``cdk`` CLI; a non-zero exit becomes :class:`LocalEndpointError` (unless ``capture``)."""
    command = [cdk, *args]
    try:
        result = subprocess.run(command, env=dict(env), cwd=cwd, check=False, text=True, capture_output=capture)
    except FileNotFoundError as error:
        raise LocalEndpointError(f"the cdk CLI was not found ({cdk}): run npm ci, or pass --cdk PATH.") from error
    if result.returncode != 0 and not capture:
        raise LocalEndpointError(f"{' '.join(command)} exited with status {result.returncode}.")
    return result


_KEPT_CDK_OUTPUT = 400
"""Lines of the cdk CLI's output kept to show when a command fails without ``verbose``."""


def _cdk_outcome(line: str) -> bool:
    """Whether a line of the cdk CLI's output is an outcome (a stack or environment done, or failed)."""
    return line.lstrip().startswith(("\u2705", "\u274c"))


def run_cdk_summarised(cdk: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> None:
    """Run the ``cdk`` CLI printing only its outcome lines (each stack deployed or failed); on a non-zero exit print
    the end of its output (at most the last 400 lines) to stderr and raise :class:`LocalEndpointError`."""
    command = [cdk, *args]
    kept: collections.deque[str] = collections.deque(maxlen=_KEPT_CDK_OUTPUT)
    try:
        process = subprocess.Popen(
            command,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except FileNotFoundError as error:
        raise LocalEndpointError(f"the cdk CLI was not found ({cdk}): run npm ci, or pass --cdk PATH.") from error
    try:
        assert process.stdout is not None
        for line in process.stdout:
            kept.append(line)
            if _cdk_outcome(line):
                print(line.rstrip(), flush=True)
        status = process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    if status != 0:
        sys.stderr.write("".join(kept))
        raise LocalEndpointError(f"{' '.join(command)} exited with status {status}.")


def synth_warnings(assembly: Path, stacks: Sequence[str] | None = None) -> dict[str, list[str]]:
    """The warnings a cloud assembly records (``aws:cdk:warning`` metadata, in the manifest or each stack's
    ``additionalMetadataFile``) on ``stacks`` (default every stack): each warning's first line without the
    construct path it starts with, by the construct paths it is on."""
    manifest_path = assembly / "manifest.json"
    if not manifest_path.exists():
        return {}
    manifest = json.loads(manifest_path.read_text())
    found: dict[str, list[str]] = {}
    for artifact_id, artifact in (manifest.get("artifacts") or {}).items():
        name = (artifact.get("properties") or {}).get("stackName") or artifact_id
        if stacks is not None and name not in stacks:
            continue
        metadata = dict(artifact.get("metadata") or {})
        extra = artifact.get("additionalMetadataFile")
        if isinstance(extra, str) and (assembly / extra).is_file():
            metadata.update(json.loads((assembly / extra).read_text()))
        for path, entries in metadata.items():
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and entry.get("type") == "aws:cdk:warning":
                    lines = str(entry.get("data") or "").strip().splitlines()
                    where = str(path).strip("/")
                    text = lines[0].removeprefix(f"{where}: ") if lines else ""
                    found.setdefault(text, []).append(where)
    return found


def format_synth_warnings(warnings: Mapping[str, Sequence[str]]) -> list[str]:
    """One line per distinct warning: its rule id, its first sentence, and the constructs it is on."""
    lines = []
    for text, paths in warnings.items():
        rule = re.search(r"\[(NEURON\d+)", text)
        sentence = text.split(" [", 1)[0]
        where = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
        lines.append(f"  {rule.group(1) + ': ' if rule else ''}{sentence} ({where})")
    return lines


@dataclass(frozen=True)
class DeployedStack:
    """A stack of the app and the account and region it deployed to."""

    name: str
    account: str
    region: str


def stack_environments(assembly: Path, endpoint: LocalAwsEndpoint) -> dict[str, tuple[str, str]]:
    """Stack name -> (account, region) from a cloud assembly; an environment-agnostic stack gets the endpoint's."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    found: dict[str, tuple[str, str]] = {}
    for artifact in (manifest.get("artifacts") or {}).values():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        environment = str(artifact.get("environment", "aws://unknown-account/unknown-region"))
        account, _, region = environment.removeprefix("aws://").partition("/")
        name = (artifact.get("properties") or {}).get("stackName") or artifact.get("displayName", "")
        found[str(name)] = (
            endpoint.account if account in ("", "unknown-account") else account,
            endpoint.region if region in ("", "unknown-region") else region,
        )
    return found


_ANSWERED_LOOKUPS = ("availability-zones",)
"""Context lookups the endpoint answers: the zone names of a region are the same in every account."""
_LOOKUP_ROUNDS = 5


def _missing(assembly: Path) -> list[dict[str, Any]]:
    manifest_path = assembly / "manifest.json"
    if not manifest_path.exists():
        return []
    missing = json.loads(manifest_path.read_text()).get("missing") or []
    return [m for m in missing if isinstance(m, dict)]


def missing_lookups(assembly: Path) -> list[str]:
    """The context lookups (``from_lookup``) the app asked for and the assembly could not answer."""
    return [f"{m.get('provider')} ({m.get('key')})" for m in _missing(assembly)]


@contextlib.contextmanager
def _context_file_with(app_dir: Path, values: Mapping[str, Any]) -> Iterator[None]:
    """The app's ``cdk.context.json`` with ``values`` added while the block runs, then exactly as it was."""
    path = app_dir / "cdk.context.json"
    original = path.read_bytes() if path.exists() else None
    if not values:
        yield
        return
    try:
        recorded = json.loads(original) if original else {}
    except json.JSONDecodeError as error:
        raise LocalEndpointError(f"{path} is not valid JSON: {error}") from error
    path.write_text(json.dumps({**recorded, **values}, indent=2))
    try:
        yield
    finally:
        if original is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(original)


def _availability_zones(endpoint: LocalAwsEndpoint, props: Mapping[str, Any]) -> list[str]:
    """What the CLI's availability-zones provider records: the available zone names of that account and region."""
    ec2 = endpoint.client("ec2", account=str(props.get("account")), region=str(props.get("region")))
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    return [str(z["ZoneName"]) for z in zones if z.get("State") == "available"]


def _synth(endpoint: LocalAwsEndpoint, cdk: str, app_dir: Path, assembly: Path, context: Mapping[str, str]) -> None:
    """``cdk synth`` without lookups, answering availability-zone lookups from the endpoint (the app's
    ``cdk.context.json`` is left as it was); any other lookup is refused with what to do."""
    synth = ["synth", "--quiet", "--no-notices", "--no-lookups", "--output", str(assembly)]
    for key, value in context.items():
        synth += ["--context", f"{key}={value}"]
    answers: dict[str, Any] = {}
    for _round in range(_LOOKUP_ROUNDS):
        with _context_file_with(app_dir, answers):
            result = run_cdk(cdk, synth, env=endpoint.environment(), cwd=app_dir, capture=True)
        missing = _missing(assembly)
        unanswerable = [m for m in missing if m.get("provider") not in _ANSWERED_LOOKUPS]
        if unanswerable:
            raise LocalEndpointError(
                "the app needs context lookups a local endpoint cannot answer: "
                + "; ".join(f"{m.get('provider')} ({m.get('key')})" for m in unanswerable)
                + ". Run `cdk synth` once against your AWS account to record them in cdk.context.json (commit "
                "it), or give the constructs their values instead of looking them up "
                "(e.g. ec2.Vpc.from_vpc_attributes)."
            )
        fresh = [m for m in missing if m.get("key") not in answers]
        if not fresh:
            break
        for lookup in fresh:
            answers[str(lookup["key"])] = _availability_zones(endpoint, lookup.get("props") or {})
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise LocalEndpointError(f"cdk synth exited with status {result.returncode}.")


def publish_pinned_releases(endpoint: LocalAwsEndpoint, assembly: Path, today: datetime.date | None = None) -> None:
    """Have the endpoint publish every ECS Neuron AMI release the templates of ``assembly`` pin, or refuse the deploy
    with a sentence naming each release it does not publish (:mod:`neuron_constructs.local_endpoint.ami_releases`)."""
    from neuron_constructs.local_endpoint.ami_releases import PUBLISH_PATH, pinned_releases, refusal

    pinned = pinned_releases(assembly)
    today = today or datetime.datetime.now(datetime.UTC).date()
    refused = [
        r for (release, kernel), stacks in sorted(pinned.items()) if (r := refusal(release, kernel, stacks, today))
    ]
    if refused:
        raise LocalEndpointError(" ".join(refused))
    if not pinned:
        return
    request = urllib.request.Request(
        endpoint.url + PUBLISH_PATH,
        data=json.dumps(sorted(pinned)).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with _DIRECT.open(request, timeout=30) as response:
            response.read(65536)
    except urllib.error.HTTPError as error:
        said = error.read(2000).decode(errors="replace")
        raise LocalEndpointError(f"the endpoint did not publish the pinned ECS Neuron AMI releases: {said}") from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        raise LocalEndpointError(
            f"the endpoint did not answer the request to publish the pinned ECS Neuron AMI releases: {error}"
        ) from None


def deploy_app(
    endpoint: LocalAwsEndpoint,
    *,
    app_dir: Path,
    cdk: str = "cdk",
    output: Path | None = None,
    context: Mapping[str, str] | None = None,
    stacks: Sequence[str] = (),
    verbose: bool = True,
) -> list[DeployedStack]:
    """``cdk synth`` once, bootstrap every account and region its stacks name, then ``cdk deploy`` that
    cloud assembly (every stack unless ``stacks`` names some) to ``endpoint``.

    On an endpoint another app deployed to (``--attach``), an account and region bootstrapped already is not
    bootstrapped again, and a stack the endpoint holds already is refused before anything deploys: the endpoint
    cannot update a stack.

    A stack with an explicit ``env`` deploys to that account and region on the endpoint; the CLI
    works in each account through credentials the endpoint issues for it. The availability zones
    such a stack looks up are the endpoint's for that region, used for this synth only: the app's
    ``cdk.context.json`` is left as it was. An app that needs any other context lookup
    (``Vpc.from_lookup`` and the like, not recorded in ``cdk.context.json``) is refused before
    anything deploys: the endpoint would answer with made-up resources, and the CLI would record
    them in the app's ``cdk.context.json``. Every ECS Neuron AMI release the app's templates pin is published on the
    endpoint first, or the deploy refused with a sentence naming it (:func:`publish_pinned_releases`).

    ``verbose=False`` prints only the cdk CLI's outcome lines (each environment bootstrapped, each stack deployed
    or failed), and the end of its output when a command fails.

    Returns the stacks this call deployed (not those the endpoint held before): in the order of ``stacks``, else by
    creation time.
    """
    env = endpoint.environment()
    assembly = (output or app_dir / "cdk.out").resolve()
    _synth(endpoint, cdk, app_dir, assembly, context or {})
    publish_pinned_releases(endpoint, assembly)
    environments = stack_environments(assembly, endpoint)
    chosen = {name: where for name, where in environments.items() if not stacks or name in stacks}
    common = ["--no-notices", "--app", str(assembly)]
    run = run_cdk if verbose else run_cdk_summarised
    before: dict[tuple[str, str], set[str]] = {}
    for account, region in sorted(set(environments.values())):
        existing = before[account, region] = _stack_names(endpoint, account, region)
        there = sorted(name for name, where in chosen.items() if where == (account, region) and name in existing)
        if there:
            raise LocalEndpointError(
                f"the endpoint holds stack {', '.join(there)} in aws://{account}/{region} already, and a local "
                "endpoint cannot update a stack: deploy this app to a fresh endpoint, or give it other stack names."
            )
        if "CDKToolkit" not in existing:  # an endpoint another app deployed to is bootstrapped already
            bootstrap = ["bootstrap", *common, f"aws://{account}/{region}"]
            run(cdk, bootstrap, env=endpoint.environment(account=account), cwd=app_dir)
    selection = list(stacks) or ["--all"]
    run(cdk, ["deploy", *common, *selection, "--require-approval", "never"], env=env, cwd=app_dir)
    deployed: list[tuple[Any, DeployedStack]] = []
    for account, region in sorted(set(environments.values())):
        cloudformation = endpoint.client("cloudformation", account=account, region=region)
        for stack in cloudformation.describe_stacks()["Stacks"]:
            if stack["StackName"] not in before[account, region] | {"CDKToolkit"}:  # not another app's stacks
                deployed.append((stack["CreationTime"], DeployedStack(stack["StackName"], account, region)))
    ordered = [d for _, d in sorted(deployed, key=lambda item: (item[0], item[1].name))]
    if stacks:
        return [d for name in stacks for d in ordered if d.name == name]
    return ordered


def _stack_names(endpoint: LocalAwsEndpoint, account: str, region: str) -> set[str]:
    """The stacks the endpoint holds in ``account`` and ``region``."""
    cloudformation = endpoint.client("cloudformation", account=account, region=region)
    pages = cloudformation.get_paginator("describe_stacks").paginate()
    return {s["StackName"] for page in pages for s in page["Stacks"] if s.get("StackStatus") != "DELETE_COMPLETE"}


def describe_deployed(endpoint: LocalAwsEndpoint, deployed: Sequence[DeployedStack]) -> list[StackReport]:
    """What each deployed stack created, read in its own account and region; others are named with theirs."""
    from neuron_constructs.tools.deployment_report.stacks import describe_stack

    reports = []
    for stack in deployed:
        report = describe_stack(
            functools.partial(endpoint.client, account=stack.account, region=stack.region),
            stack.name,
            functions_run=False,
        )
        if (stack.account, stack.region) != (endpoint.account, endpoint.region):
            report = dataclasses.replace(report, name=f"{stack.name} (aws://{stack.account}/{stack.region})")
        reports.append(report)
    return reports


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m neuron_constructs.local_endpoint",
        description="Deploy a CDK app with the cdk CLI to a fresh local moto server on 127.0.0.1, "
        "print what each stack created, and stop the server (--serve: keep it up; --attach URL: deploy to the one "
        "a --serve run keeps).",
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
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="print the cdk CLI's whole output, and every resource's settings and every gap in the report",
    )
    parser.add_argument(
        "--attach",
        metavar="URL",
        help="deploy to the endpoint a --serve run keeps at URL (http://127.0.0.1:PORT) instead of a fresh one; "
        "it keeps running afterwards",
    )
    args = parser.parse_args(argv)
    context = dict(item.split("=", 1) for item in args.context if "=" in item)
    if len(context) != len(args.context):
        parser.error("--context takes KEY=VALUE")
    if args.attach is not None and (args.serve or args.server_log):
        parser.error("--attach deploys to the endpoint a --serve run keeps (and logs): drop --serve and --server-log")

    from neuron_constructs.tools.deployment_report.rendering import format_reports

    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with SIGINT ignored (`cmd &`)
    try:
        endpoints = (
            attached_endpoint(args.attach, region=args.region)
            if args.attach is not None
            else local_aws_endpoint(region=args.region, log=args.server_log)
        )
        with endpoints as endpoint:
            print(f"local AWS endpoint (moto): {endpoint.url}", flush=True)
            deployed = deploy_app(
                endpoint,
                app_dir=args.app_dir,
                cdk=args.cdk,
                output=args.output,
                context=context,
                stacks=args.stacks,
                verbose=args.verbose,
            )
            if not args.verbose:
                assembly = (args.output or args.app_dir / "cdk.out").resolve()
                warnings = synth_warnings(assembly, [stack.name for stack in deployed])
                if warnings:
                    print(f"warnings at synth ({len(warnings)}; --verbose prints each in full):", flush=True)
                    print("\n".join(format_synth_warnings(warnings)), flush=True)
            reports = describe_deployed(endpoint, deployed)
            print(format_reports(reports, endpoint=endpoint.label, verbose=args.verbose), flush=True)
            if args.serve:
                print(f"\nThe endpoint stays up at {endpoint.url} until Ctrl-C. Deploy another app to it:", flush=True)
                print(
                    f"  python -m neuron_constructs.local_endpoint --attach {endpoint.url} --app-dir <app>", flush=True
                )
                print("or, in another shell, talk to it with the AWS CLI, boto3 or neuron-ecs:", flush=True)
                environment = endpoint.environment()
                for key in ("AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION"):
                    print(f"  export {key}={environment[key]}", flush=True)
                for account in sorted({endpoint.account, *(d.account for d in deployed)}):
                    print(f"  # to act in account {account}:", flush=True)
                    for key, value in endpoint.credentials(account).items():
                        print(f"  export {key}={value}", flush=True)
                with contextlib.suppress(KeyboardInterrupt):
                    while True:
                        time.sleep(3600)
    except LocalEndpointError as error:
        print(f"deploy-local failed: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopped; the local endpoint is shut down.", file=sys.stderr)
        return 130
    if args.attach is not None:
        print(f"The endpoint at {args.attach} keeps running: Ctrl-C in its --serve shell stops it.")
        return 0
    print("The local endpoint is shut down; every run starts from an empty one.")
    return 0
