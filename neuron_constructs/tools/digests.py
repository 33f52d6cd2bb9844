"""The digest each image the library runs has in its registry now, for ``neuron-ecs digests``.

Asks each registry as a container runtime does (OCI Distribution Specification, "Pulling manifests"):
``HEAD /v2/<name>/manifests/<tag>``, accepting the OCI and Docker index and manifest media types; a ``401`` answer's
``WWW-Authenticate: Bearer realm="...",service="...",scope="..."`` challenge is met with an anonymous token from the
realm (the Docker registry token specification; Amazon ECR Public and registry.k8s.io give pull tokens without
credentials), and the request is made again. The answer's ``Docker-Content-Digest`` header is the digest. One HEAD
per image (two, and one token, behind a challenge), no download of the image. Standard library only.

Each image of :data:`~neuron_constructs.knowledge.container_images.LIBRARY_IMAGES` is then one of: pinned and the
registry agrees; pinned and the tag now names other bytes (the exit status says so); not pinned (the digest to pin
it with is printed, for ``NeuronImage.pinned`` or the module's constant).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neuron_constructs.knowledge.container_images import LIBRARY_IMAGES, NeuronImage

__all__ = [
    "MANIFEST_MEDIA_TYPES",
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
TIMEOUT_S = 10.0
"""Each request's timeout."""
MAX_TOKEN_BYTES = 64 * 1024
"""A token answer longer than this is refused unread: registries answer a few kilobytes."""
_CHALLENGE_PART = re.compile(r'(\w+)="([^"]*)"')
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


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


def _challenge(header: str) -> Mapping[str, str]:
    """The parameters of a ``Bearer`` ``WWW-Authenticate`` challenge."""
    scheme, _, rest = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise DigestLookupError(f"the registry asks for {scheme or 'an unnamed'} authentication, not a bearer token")
    return dict(_CHALLENGE_PART.findall(rest))


def _token(challenge: Mapping[str, str], timeout: float) -> str:
    realm = challenge.get("realm", "")
    if urllib.parse.urlsplit(realm).scheme not in ("http", "https"):
        raise DigestLookupError(f"the registry's token realm {realm!r} is not an http(s) URL")
    query = urllib.parse.urlencode({k: v for k, v in challenge.items() if k in ("service", "scope")})
    url = f"{realm}{'&' if '?' in realm else '?'}{query}" if query else realm
    with urllib.request.urlopen(urllib.request.Request(url), timeout=timeout) as answer:
        body = answer.read(MAX_TOKEN_BYTES + 1)
    if len(body) > MAX_TOKEN_BYTES:
        raise DigestLookupError(f"the token answer of {realm} is longer than {MAX_TOKEN_BYTES:,} bytes")
    try:
        document = json.loads(body)
    except ValueError:
        raise DigestLookupError(f"the token answer of {realm} is not JSON") from None
    token = document.get("token") or document.get("access_token") if isinstance(document, dict) else None
    if not isinstance(token, str) or not token:
        raise DigestLookupError(f"the token answer of {realm} holds no token")
    return token


def _head(url: str, token: str | None, timeout: float) -> Any:
    headers = {"Accept": ", ".join(MANIFEST_MEDIA_TYPES)}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return urllib.request.urlopen(urllib.request.Request(url, method="HEAD", headers=headers), timeout=timeout)


def registry_digest(image: NeuronImage, *, endpoint_url: str | None = None, timeout: float = TIMEOUT_S) -> str:
    """The ``sha256:`` digest the registry gives for ``image``'s tag now."""
    url = manifest_url(image, endpoint_url)
    try:
        try:
            answer = _head(url, None, timeout)
        except urllib.error.HTTPError as refused:
            if refused.code != 401 or not refused.headers.get("WWW-Authenticate"):
                raise
            answer = _head(url, _token(_challenge(refused.headers["WWW-Authenticate"]), timeout), timeout)
        with answer:
            digest = str(answer.headers.get("Docker-Content-Digest", ""))
    except urllib.error.HTTPError as error:
        what = "no such tag or repository" if error.code == 404 else f"HTTP {error.code}"
        raise DigestLookupError(f"{url} answered {what}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise DigestLookupError(f"{url} could not be reached: {reason}") from None
    if not _DIGEST.fullmatch(digest):
        raise DigestLookupError(f"{url} answered without a sha256 Docker-Content-Digest header")
    return digest


def check_library_images(*, endpoint_url: str | None = None, timeout: float = TIMEOUT_S) -> list[ImageDigest]:
    """Every image the library runs, with its pin and the registry's digest for its tag now."""
    return [
        ImageDigest(
            name=name,
            uri=image.uri,
            pinned=image.digest,
            registry=registry_digest(image, endpoint_url=endpoint_url, timeout=timeout),
        )
        for name, image in LIBRARY_IMAGES.items()
    ]
