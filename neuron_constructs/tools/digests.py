"""The digest each image the library runs has in its registry now, for ``neuron-ecs digests``.

Asks each registry as a container runtime does (OCI Distribution Specification, "Pulling manifests"):
``GET /v2/<name>/manifests/<tag>``, accepting the OCI and Docker index and manifest media types; a ``401`` answer's
``WWW-Authenticate: Bearer realm="...",service="...",scope="..."`` challenge is met with an anonymous token from the
realm (the Docker registry token specification; Amazon ECR Public gives pull tokens without credentials), and the
request is made again. The digest is the SHA-256 of the manifest's bytes as sent (the OCI Image Specification,
"Descriptor": a digest is the hash of the content's bytes), not what the answer claims: a ``Docker-Content-Digest``
header that names other bytes is a sentence, never printed as the digest. One manifest per image (at most
:data:`MAX_MANIFEST_BYTES`; an index or manifest is a few kilobytes), no layer downloaded. Standard library only.

The token realm is asked only on the host of the registry itself, or on an authentication host the registry's own
documentation names for it (:data:`AUTH_HOSTS`): a challenge names any URL, and the anonymous request a realm gets
(with the ``service`` and ``scope`` the registry chose) must not be sent to an address the registry picks, such as
the instance metadata service. Amazon ECR Public's challenge names ``https://public.ecr.aws/token/``, its own host.

Whatever a server answers, the run ends within one deadline for every image together (:data:`DEADLINE_S`, 30 s;
each connection is cut once it passes), with the digests or a :class:`DigestLookupError` sentence. A redirect is
followed only within the origin (scheme, host and port) first asked, at most ``MAX_REDIRECTS`` times, and never
with the token: a registry's token goes to that registry only. An answer that is not HTTP, a header line above
64 KiB or more than 100 headers (the bounds of Python's ``http.client``) or a token answer above ``MAX_TOKEN_BYTES``
is a sentence too. ``HTTPS_PROXY``/``HTTP_PROXY`` and ``NO_PROXY`` apply as for any HTTP client (an HTTPS registry
through a ``CONNECT`` tunnel).

Each image of :data:`~neuron_constructs.knowledge.container_images.LIBRARY_IMAGES` is then one of: pinned and the
registry agrees; pinned and the tag now names other bytes (the exit status says so); not pinned (the digest to pin
it with is printed, for ``NeuronImage.pinned`` or the module's constant).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import re
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.knowledge.container_images import LIBRARY_IMAGES, NeuronImage

__all__ = [
    "AUTH_HOSTS",
    "DEADLINE_S",
    "MANIFEST_MEDIA_TYPES",
    "MAX_MANIFEST_BYTES",
    "Deadline",
    "DigestLookupError",
    "ImageDigest",
    "check_library_images",
    "manifest_url",
    "registry_digest",
]

MANIFEST_MEDIA_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
"""What the request accepts: a multi-platform index first, as a runtime pulling the tag would get it."""
DEADLINE_S = 30.0
"""How long a whole run may take, every image and request together (``neuron-ecs digests --deadline``)."""
MAX_REDIRECTS = 3
"""Redirects followed per image, each within the origin first asked."""
MAX_TOKEN_BYTES = 64 * 1024
"""A token answer longer than this is refused unread: registries answer a few kilobytes."""
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
"""A manifest longer than this is refused: the OCI Distribution Specification has registries accept manifests of at
least 4 MiB, and an image index of a few platforms is a few kilobytes."""
AUTH_HOSTS: Mapping[str, tuple[str, ...]] = {
    "registry-1.docker.io": ("auth.docker.io",),
    "docker.io": ("auth.docker.io",),
}
"""Token hosts other than a registry's own, by registry host, as the registry documents them (Docker Hub: "Token
authentication", auth.docker.io). The registries of the library's images (public.ecr.aws, registry.k8s.io) need
none: a realm there must be on the registry's own host."""
_CHALLENGE_PART = re.compile(r'(\w+)="([^"]*)"')


class DigestLookupError(RuntimeError):
    """A registry could not be asked, or did not answer as the distribution API does; the message says which."""


@dataclass(frozen=True)
class ImageDigest:
    """One image: its name in :data:`LIBRARY_IMAGES`, the reference the library runs, the digest it pins (``None``
    for a bare tag) and the one the registry gives for the tag now."""

    name: str
    uri: str
    pinned: str | None
    registry: str

    @property
    def status(self) -> str:
        """``matches``, ``tag moved`` (pinned to other bytes than the tag names now) or ``not pinned``."""
        if self.pinned is None:
            return "not pinned"
        return "matches" if self.pinned == self.registry else "tag moved"

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` entry."""
        return {
            "name": self.name,
            "uri": self.uri,
            "pinned": self.pinned,
            "registry": self.registry,
            "status": self.status,
        }


def manifest_url(image: NeuronImage, endpoint_url: str | None = None) -> str:
    """``https://<registry host>/v2/<namespace>/<repository>/manifests/<tag>``; ``endpoint_url`` replaces the
    scheme and host (a mirror, or a local registry in tests)."""
    host, _, namespace = image.registry.partition("/")
    name = f"{namespace}/{image.repository}" if namespace else image.repository
    base = endpoint_url.rstrip("/") if endpoint_url else f"https://{host}"
    return f"{base}/v2/{name}/manifests/{urllib.parse.quote(image.tag, safe='')}"


@dataclass
class Deadline:
    """When a run must be over (``time.monotonic()``), and how long it was given."""

    seconds: float
    ends: float = field(default=0.0)

    def __post_init__(self) -> None:
        if not self.ends:
            self.ends = time.monotonic() + self.seconds

    def remaining(self, url: str) -> float:
        """The time left; :class:`DigestLookupError` once there is none."""
        left = self.ends - time.monotonic()
        if left <= 0:
            raise DigestLookupError(
                f"{_printable(url, 300)} did not answer within the {self.seconds:g} s the run may take"
            )
        return left


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


def _printable(text: str, limit: int = 200) -> str:
    """A server's text in a sentence: control characters escaped (the command line's one helper for untrusted text,
    :func:`~neuron_constructs.checks.terminal.terminal_safe`), at most ``limit`` characters."""
    return terminal_safe(text, limit=limit)


def _split(url: str) -> urllib.parse.SplitResult:
    """``url``'s parts, its port read; a URL a server sent that is none (an unclosed ``[``, a port out of range or
    not a number) is a :class:`DigestLookupError` sentence."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError as error:
        raise DigestLookupError(f"{_printable(url)} is no URL ({_printable(str(error), 100)})") from None
    return parts


def _origin(url: str) -> tuple[str, str, int]:
    parts = _split(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, (parts.hostname or "").lower(), port


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection for ``url`` (through the proxy the environment names for it, if any) and the request target."""
    parts = _split(url)
    scheme, host, port = _origin(url)
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    proxy = None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get(scheme)
    connection: http.client.HTTPConnection
    if proxy:
        via = _split(proxy if "://" in proxy else f"http://{proxy}")
        if scheme == "https":
            connection = http.client.HTTPSConnection(via.hostname or "", via.port or 80, timeout=timeout)
            connection.set_tunnel(host, port)
        else:
            connection = http.client.HTTPConnection(via.hostname or "", via.port or 80, timeout=timeout)
            target = url
    elif scheme == "https":
        connection = http.client.HTTPSConnection(host, port, timeout=timeout)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    return connection, target


def _cut(connection: http.client.HTTPConnection, done: threading.Event) -> None:
    """End a connection's socket operations now (the deadline passed): what was read so far is no answer."""
    done.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _request(method: str, url: str, headers: Mapping[str, str], deadline: Deadline, *, max_body: int = 0) -> _Answer:
    """One request, no redirect followed; the connection is cut when the deadline passes, whatever it is doing."""
    connection, target = _connection(url, deadline.remaining(url))
    cut = threading.Event()
    watchdog = threading.Timer(deadline.remaining(url), _cut, (connection, cut))
    watchdog.daemon = True
    watchdog.start()
    failure: str | None = None
    try:
        connection.request(method, target, headers=dict(headers))
        response = connection.getresponse()
        answer = _Answer(response.status, response.headers, response.read(max_body + 1) if max_body else b"")
    except (http.client.HTTPException, OSError, ValueError) as error:
        failure = _failure(error)
    finally:
        watchdog.cancel()
        connection.close()
    if cut.is_set():  # cut by the deadline: whatever was read is no answer
        raise DigestLookupError(
            f"{_printable(url, 300)} did not answer within the {deadline.seconds:g} s the run may take"
        )
    if failure is not None:
        deadline.remaining(url)  # a socket timeout at the deadline: say so
        raise DigestLookupError(f"{_printable(url, 300)} {failure}")
    return answer


def _failure(error: BaseException) -> str:
    """What went wrong with a request, as the end of a sentence about its URL."""
    if isinstance(error, http.client.LineTooLong):
        return "answered with a line longer than HTTP clients read (64 KiB)"
    if isinstance(error, http.client.BadStatusLine) and not isinstance(error, http.client.RemoteDisconnected):
        return f"did not answer HTTP (it said {_printable(str(error), 60)})"
    if isinstance(error, http.client.RemoteDisconnected | http.client.IncompleteRead):
        return "closed the connection before a whole HTTP answer"
    if isinstance(error, http.client.HTTPException):
        return f"did not answer HTTP as a registry does ({_printable(str(error))})"
    if isinstance(error, TimeoutError | socket.timeout):
        return "did not answer in time"
    reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or error
    return f"could not be reached: {_printable(str(reason))}"


def _challenge(header: str) -> Mapping[str, str]:
    """The parameters of a ``Bearer`` ``WWW-Authenticate`` challenge."""
    scheme, _, rest = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        named = _printable(scheme, 40) or "an unnamed"
        raise DigestLookupError(f"the registry asks for {named} authentication, not a bearer token")
    return dict(_CHALLENGE_PART.findall(rest))


def _token(challenge: Mapping[str, str], registry_url: str, deadline: Deadline) -> str:
    realm = challenge.get("realm", "")
    shown = _printable(realm)
    parts = _split(realm)
    scheme = parts.scheme
    if scheme != "https" and not (scheme == "http" and registry_url.startswith("http://")):
        raise DigestLookupError(f"the registry's token realm {shown!r} is not an https URL")
    _check_realm_host(_origin(realm), _origin(registry_url), shown)
    query = urllib.parse.urlencode({k: v for k, v in challenge.items() if k in ("service", "scope")})
    url = f"{realm}{'&' if '?' in realm else '?'}{query}" if query else realm
    answer = _request("GET", url, {}, deadline, max_body=MAX_TOKEN_BYTES)
    if answer.status != 200:
        raise DigestLookupError(f"the token realm {shown} answered HTTP {answer.status}")
    if len(answer.body) > MAX_TOKEN_BYTES:
        raise DigestLookupError(f"the token answer of {shown} is longer than {MAX_TOKEN_BYTES:,} bytes")
    try:
        document = json.loads(answer.body)
    except (ValueError, RecursionError):
        raise DigestLookupError(f"the token answer of {shown} is not JSON") from None
    token = document.get("token") or document.get("access_token") if isinstance(document, dict) else None
    if not isinstance(token, str) or not token:
        raise DigestLookupError(f"the token answer of {shown} holds no token")
    return token


def _check_realm_host(realm: tuple[str, str, int], registry: tuple[str, str, int], shown: str) -> None:
    """A token realm on the registry's own host and port, or on the default HTTPS port of a host :data:`AUTH_HOSTS`
    names for it; anything else (another port of the registry's host too: another service) is a sentence, and
    nothing is sent there."""
    (_, realm_host, realm_port), (_, registry_host, registry_port) = realm, registry
    if (realm_host, realm_port) == (registry_host, registry_port):
        return
    if realm_host in AUTH_HOSTS.get(registry_host, ()) and realm_port == 443:
        return
    raise DigestLookupError(
        f"the registry {_printable(registry_host)} named a token realm on another host or port ({shown}): a token is "
        "asked only of the registry's own host and port or an authentication host it documents"
    )


def _manifest_digest(url: str, answer: _Answer) -> str:
    """The SHA-256 of the manifest's bytes; a ``Docker-Content-Digest`` that names other bytes is a sentence."""
    if len(answer.body) > MAX_MANIFEST_BYTES:
        raise DigestLookupError(f"{_printable(url, 300)} answered a manifest longer than {MAX_MANIFEST_BYTES:,} bytes")
    digest = "sha256:" + hashlib.sha256(answer.body).hexdigest()
    claimed = answer.headers.get("Docker-Content-Digest")
    if claimed is not None and str(claimed).strip() != digest:
        raise DigestLookupError(
            f"{_printable(url, 300)} claims the digest {_printable(str(claimed), 100)}, but the manifest it sent is "
            f"{digest}"
        )
    return digest


def registry_digest(
    image: NeuronImage, *, endpoint_url: str | None = None, deadline: Deadline | float = DEADLINE_S
) -> str:
    """The ``sha256:`` digest of the manifest the registry gives for ``image``'s tag now, hashed here, within
    ``deadline`` (seconds, or a :class:`Deadline` several calls share)."""
    deadline = deadline if isinstance(deadline, Deadline) else Deadline(deadline)
    first = url = manifest_url(image, endpoint_url)
    token: str | None = None
    redirects = 0
    challenged: set[str] = set()
    while True:
        headers = {"Accept": ", ".join(MANIFEST_MEDIA_TYPES)}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        answer = _request("GET", url, headers, deadline, max_body=MAX_MANIFEST_BYTES)
        if answer.status == 401 and answer.headers.get("WWW-Authenticate") and url not in challenged:
            challenged.add(url)
            token = _token(_challenge(answer.headers["WWW-Authenticate"]), first, deadline)
            continue
        if answer.status in (301, 302, 303, 307, 308) and answer.headers.get("Location"):
            try:
                target = urllib.parse.urljoin(url, answer.headers["Location"])
            except ValueError:
                raise DigestLookupError(
                    f"{_printable(url, 300)} redirected to {_printable(answer.headers['Location'])}, which is no URL"
                ) from None
            if _origin(target) != _origin(first):
                raise DigestLookupError(
                    f"{_printable(url, 300)} redirected to {_printable(target)}, another origin: a registry's digest "
                    "and token stay with that registry"
                )
            redirects += 1
            if redirects > MAX_REDIRECTS:
                raise DigestLookupError(f"{first} redirected more than {MAX_REDIRECTS} times")
            url, token = target, None  # no token on a redirect, even within the origin
            continue
        break
    if answer.status != 200:
        what = "no such tag or repository" if answer.status == 404 else f"HTTP {answer.status}"
        raise DigestLookupError(f"{_printable(url, 300)} answered {what}")
    if not answer.body:
        raise DigestLookupError(f"{_printable(url, 300)} answered no manifest")
    return _manifest_digest(url, answer)


def check_library_images(*, endpoint_url: str | None = None, deadline_s: float = DEADLINE_S) -> list[ImageDigest]:
    """Every image the library runs, with its pin and the registry's digest for its tag now; all of them asked within
    ``deadline_s`` seconds."""
    deadline = Deadline(deadline_s)
    return [
        ImageDigest(
            name=name,
            uri=image.uri,
            pinned=image.digest,
            registry=registry_digest(image, endpoint_url=endpoint_url, deadline=deadline),
        )
        for name, image in LIBRARY_IMAGES.items()
    ]
