"""The local endpoint and how a process talks to it: :class:`LocalAwsEndpoint` (a moto server on 127.0.0.1), the
environment and boto3 clients that reach it and nothing else (fake credentials, a fixed region, the local endpoint for
every service, no instance metadata, no proxy), and :class:`LocalEndpointError`."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import boto3

__all__ = [
    "DEFAULT_ACCOUNT",
    "DEFAULT_REGION",
    "FAKE_CREDENTIALS",
    "LOOPBACK",
    "LocalAwsEndpoint",
    "LocalEndpointError",
    "sealed_environment",
]

LOOPBACK = "127.0.0.1"
DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "123456789012"
"""The account moto answers for credentials it does not know."""
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


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


DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Opens URLs without any proxy, whatever ``HTTP(S)_PROXY`` say: the local endpoint is on this host."""
