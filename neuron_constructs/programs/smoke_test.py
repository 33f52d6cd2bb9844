"""The smoke test's Lambda function: one real request to the green service revision before production traffic.

The module is self-contained standard-library Python, shipped inline as the function's code (docstrings and comments
dropped, as :func:`neuron_constructs.programs.carrying.program_source` drops them).

The contract, from the Amazon ECS documentation:

- Amazon ECS invokes a Lambda hook at the lifecycle stages named in the service's ``DeploymentLifecycleHook``
  (``lifecycleStages``: ``RECONCILE_SERVICE``, ``PRE_SCALE_UP``, ``POST_SCALE_UP``, ``TEST_TRAFFIC_SHIFT``,
  ``POST_TEST_TRAFFIC_SHIFT``, ``PRODUCTION_TRAFFIC_SHIFT``, ``POST_PRODUCTION_TRAFFIC_SHIFT``; ECS API reference,
  DeploymentLifecycleHook). The payload of every stage holds ``serviceArn``, ``targetServiceRevisionArn`` (the green
  revision), ``testTrafficWeights`` and ``productionTrafficWeights`` (maps of revision ARN to percent; ECS developer
  guide, "Lifecycle hooks for Amazon ECS service deployments", "Lifecycle payloads").
- The function answers ``{"hookStatus": "SUCCEEDED" | "FAILED" | "IN_PROGRESS"}``: SUCCEEDED moves the deployment
  to the next stage, FAILED rolls it back to the last successful service revision, IN_PROGRESS has ECS invoke the
  function again after 30 s or the ``callBackDelay`` returned with it; no valid ``hookStatus``, or a function that
  fails, rolls the deployment back (ECS developer guide, "Lambda hooks for Amazon ECS service deployments").
- Test traffic reaches the green revision through the load balancer's test listener rule (ALB) or test listener
  (NLB), which forwards to the alternate target group (ECS API reference, AdvancedConfiguration:
  ``testListenerRule``, ``alternateTargetGroupArn``).

The stage: ``POST_TEST_TRAFFIC_SHIFT``, where "the test traffic shift is complete. The green service revision
handles 100% of the test traffic" while the blue revision still handles all production traffic
(DeploymentLifecycleHook). Earlier stages have no test traffic to the green tasks (``POST_SCALE_UP``: "There is no
test traffic"), and ``PRODUCTION_TRAFFIC_SHIFT`` already moves users to green; a FAILED answer here rolls back before
any user request reaches the new model.

One request, answered within one invocation: the timeout (1 to 900 s, Lambda's longest run) bounds it, so the
function never answers IN_PROGRESS. Its configuration is the environment (``SMOKE_TEST_*``, see
:func:`read_configuration`); it never raises: every outcome is a ``hookStatus`` and one logged sentence saying which
(wrong status, timeout, connection refused, unreachable, or malformed configuration). The request goes direct,
never through a proxy named by ``HTTP(S)_PROXY``, follows no redirect (a 3xx is the status it got), and reads at most
:data:`READ_LIMIT` bytes of the answer.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, NamedTuple

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
"""The request methods a smoke test may send."""
READ_LIMIT = 65536
"""The most bytes of an answer the function reads."""
MAX_TIMEOUT = 900
"""The longest timeout in seconds: Lambda's longest run (15 minutes)."""
STAGE = "POST_TEST_TRAFFIC_SHIFT"
"""The lifecycle stage the hook runs at."""
_NUMBER = re.compile(r"[0-9]{1,6}")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}")


class Configuration(NamedTuple):
    """A valid smoke test: the request and what it must answer."""

    url: str
    method: str
    body: bytes | None
    expect_status: int
    timeout: int
    header: tuple[str, str] | None


def read_configuration(environ: Any) -> Configuration | str:
    """The smoke test ``environ`` describes, or the sentence saying what is wrong with it.

    ``SMOKE_TEST_URL``: the test listener's ``http(s)://host[:port]``, nothing after it; ``SMOKE_TEST_PATH``: from
    ``/``; ``SMOKE_TEST_METHOD`` (GET); ``SMOKE_TEST_BODY`` (none); ``SMOKE_TEST_EXPECT_STATUS`` (200, 100 to 599);
    ``SMOKE_TEST_TIMEOUT`` (seconds, 60, 1 to 900); ``SMOKE_TEST_HEADER`` (none; ``Name: value`` for a test listener
    rule that matches a header)."""
    base = environ.get("SMOKE_TEST_URL", "")
    try:
        parts = urllib.parse.urlsplit(base)
        good = (
            parts.scheme in ("http", "https")
            and bool(parts.hostname)
            and (parts.port is None or parts.port > 0)
            and parts.path in ("", "/")
            and not (parts.query or parts.fragment or "@" in parts.netloc)
            and len(base) <= 2048
            and all(0x20 < ord(c) < 0x7F for c in base)
        )
    except ValueError:
        good = False
    if not good:
        return f"SMOKE_TEST_URL must be http(s)://host[:port] and nothing more, not {base[:200]!r}"
    path = environ.get("SMOKE_TEST_PATH", "")
    if not (path.startswith("/") and len(path) <= 2048 and all(0x20 < ord(c) < 0x7F for c in path)):
        return f"SMOKE_TEST_PATH must start with / and hold printable ASCII only, not {path[:200]!r}"
    if "#" in path:
        return f"SMOKE_TEST_PATH must not hold a fragment (#), not {path[:200]!r}"
    method = environ.get("SMOKE_TEST_METHOD", "GET")
    if method not in METHODS:
        return f"SMOKE_TEST_METHOD must be one of {', '.join(METHODS)}, not {method[:20]!r}"
    checked = {}
    for name, default, low, high in (("EXPECT_STATUS", "200", 100, 599), ("TIMEOUT", "60", 1, MAX_TIMEOUT)):
        text = environ.get("SMOKE_TEST_" + name, default)
        value = int(text) if _NUMBER.fullmatch(text) else -1
        if not low <= value <= high:
            return f"SMOKE_TEST_{name} must be a whole number from {low} to {high}, not {text[:20]!r}"
        checked[name] = value
    header = None
    line = environ.get("SMOKE_TEST_HEADER")
    if line is not None:
        name, _, value = line.partition(":")
        value = value.strip()
        if not (_TOKEN.fullmatch(name) and value and len(value) <= 1024 and value.isprintable()):
            return f"SMOKE_TEST_HEADER must be 'Name: value' on one line, not {line[:100]!r}"
        header = (name, value)
    body = environ.get("SMOKE_TEST_BODY")
    return Configuration(
        url=base.rstrip("/") + path,
        method=method,
        body=None if body is None else body.encode(),
        expect_status=checked["EXPECT_STATUS"],
        timeout=checked["TIMEOUT"],
        header=header,
    )


def _opener() -> urllib.request.OpenerDirector:
    """Direct HTTP(S) only: no proxy, no redirect, no exception for an error status."""
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler({}), urllib.request.HTTPHandler(), urllib.request.HTTPSHandler()):
        opener.add_handler(handler)
    return opener


def run(config: Configuration) -> tuple[str, str]:
    """Send the request once: the ``hookStatus`` and the sentence that says why."""
    target = f"{config.method} {config.url}"
    headers = {"User-Agent": "neuron-smoke-test"}
    if config.header:
        headers[config.header[0]] = config.header[1]
    if config.body is not None:
        try:
            json.loads(config.body)
            headers["Content-Type"] = "application/json"
        except ValueError:
            headers["Content-Type"] = "text/plain; charset=utf-8"
    request = urllib.request.Request(config.url, data=config.body, headers=headers, method=config.method)
    deadline = time.monotonic() + config.timeout
    try:
        with _opener().open(request, timeout=config.timeout) as response:
            status, read = response.status, 0
            while read < READ_LIMIT and time.monotonic() < deadline:
                chunk = response.read(min(8192, READ_LIMIT - read))
                if not chunk:
                    break
                read += len(chunk)
            if time.monotonic() >= deadline:
                raise TimeoutError
    except TimeoutError:
        return "FAILED", f"{target} timed out after {config.timeout} s."
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError):
            return "FAILED", f"{target} timed out after {config.timeout} s."
        if isinstance(reason, ConnectionRefusedError):
            return "FAILED", f"{target}: connection refused."
        return "FAILED", f"{target} unreachable: {str(reason)[:200]}."
    except ConnectionRefusedError:
        return "FAILED", f"{target}: connection refused."
    except (OSError, ValueError) as error:
        return "FAILED", f"{target} unreachable: {type(error).__name__} {str(error)[:200]}."
    if status != config.expect_status:
        return "FAILED", f"{target}: expected {config.expect_status}, got {status}."
    return "SUCCEEDED", f"{target} answered {status} as expected ({read} bytes read)."


def handler(event: Any, context: Any) -> dict[str, str]:
    """The Lambda entry point: ``{"hookStatus": ...}``, with one sentence printed to the function's log."""
    try:
        config = read_configuration(os.environ)
        if isinstance(config, str):
            status, sentence = "FAILED", f"malformed configuration: {config}."
        else:
            status, sentence = run(config)
    except Exception as error:  # never raise: the sentence would be lost
        status, sentence = "FAILED", f"unexpected error: {type(error).__name__}."
    revision = event.get("targetServiceRevisionArn") if isinstance(event, dict) else None
    if isinstance(revision, str):
        sentence += f" Revision {revision[:300]}."
    print(f"Smoke test {status}: {sentence}")
    return {"hookStatus": status}
