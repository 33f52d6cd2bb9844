"""The precompile function: submits a model's compile job to AWS Batch and tells ECS or CloudFormation how it ends.

The module is self-contained standard-library Python, shipped inline as a Lambda function's code (docstrings and
comments dropped, as :func:`neuron_constructs.programs.carrying.program_source` drops them). It calls AWS Batch by its
REST-JSON API, signed with Signature Version 4 by the standard library's ``hmac`` and ``hashlib``: no SDK is imported.

Three kinds of event reach :func:`handler`:

1. **The ECS lifecycle hook at** ``PRE_SCALE_UP`` (an event with ``targetServiceRevisionArn`` or ``serviceArn``):
   the green service revision has not started and the blue one serves all production traffic (ECS API reference,
   DeploymentLifecycleHook, ``lifecycleStages``). The first invocation (no ``jobId`` in ``hookDetails``) submits the
   job and answers ``{"hookStatus": "IN_PROGRESS", "callBackDelay": n, "hookDetails": {"jobId": ..., "submittedAt":
   ...}}``; ECS gives the ``hookDetails`` of an ``IN_PROGRESS`` answer back on the next invocation, which asks
   DescribeJobs for that job: ``SUBMITTED``, ``PENDING``, ``RUNNABLE``, ``STARTING`` or ``RUNNING`` is
   ``IN_PROGRESS``; ``SUCCEEDED`` is ``SUCCEEDED``; ``FAILED`` (with the job's ``statusReason`` in the log line), a
   job Batch does not know, or a job still unfinished :data:`TIMEOUT_MARGIN_SECONDS` after its own timeout is
   ``FAILED``, and ECS rolls the deployment back to the last successful revision, which keeps serving.
2. **A CloudFormation custom resource request** (``RequestType``): ``Create`` and ``Update`` submit the job with
   what the answer needs (:data:`CARRIED`: ``ResponseURL``, ``StackId``, ``RequestId``, ``LogicalResourceId``,
   ``PhysicalResourceId``) as the job's ``parameters``, and do not answer yet; a submission Batch refuses is answered
   ``FAILED`` at once, with the reason. ``Delete`` is answered ``SUCCESS`` at once: a finished compile leaves nothing
   to delete (its NEFFs belong to the cache).
3. **An EventBridge "Batch Job State Change" event** of a ``SUCCEEDED`` or ``FAILED`` job: the carried fields come
   back in the event's ``detail.parameters`` and the function PUTs the answer to the ``ResponseURL``: ``SUCCESS``
   with the job id as ``PhysicalResourceId``, or ``FAILED`` with a ``Reason`` sentence. A job that carries no
   ``ResponseURL`` (one the hook submitted) needs no answer.

Every invocation prints one JSON line, ``{"model", "cache", "jobId", "event", "decision", "message"}`` (``event``:
``lifecycle-hook``, ``custom-resource``, ``job-state-change`` or ``unknown``; ``message``: one sentence), and the
function never raises (an exception would be an answer ECS reads as ``FAILED`` without saying why). It returns the
hook's answer to a lifecycle hook or an event it does not know (``{"hookStatus": "FAILED"}``), and
``{"decision": ..., "jobId": ...}`` otherwise (``SUBMITTED``, ``SUCCESS``, ``FAILED``, ``REFUSED`` or ``IGNORED``),
which neither CloudFormation nor EventBridge reads.

The contract, from the AWS documentation (read 2026-12-07):

- ECS developer guide, "Lambda hooks for Amazon ECS service deployments": the function returns ``hookStatus``
  ``SUCCEEDED`` (the deployment goes on), ``FAILED`` (ECS rolls back to the last successful service revision) or
  ``IN_PROGRESS`` (ECS invokes it again after 30 s or the ``callBackDelay`` returned with it); ``hookDetails``
  returned with ``IN_PROGRESS`` is passed back to the function on the next invocation; no valid ``hookStatus``, or a
  function that fails, rolls the deployment back. Neither that page nor "Lifecycle hooks for Amazon ECS service
  deployments" states a largest ``callBackDelay`` or ``hookDetails``: the function holds the delay to 1 to
  :data:`MAX_CALLBACK_DELAY` seconds and its ``hookDetails`` to three short fields (under :data:`HOOK_DETAILS_LIMIT`
  bytes). The payload of every stage holds ``serviceArn`` and ``targetServiceRevisionArn`` ("Lifecycle payloads").
- ECS API reference, DeploymentLifecycleHookTimeoutConfiguration: ``timeoutInMinutes`` 1 to 20160 (default 1440),
  then ``action`` (default ``ROLLBACK``): the hook's own bound, which must exceed the job's timeout plus
  :data:`TIMEOUT_MARGIN_SECONDS` (the construct that wires the function checks it).
- AWS Batch API reference (botocore 1.44.8's model of ``batch`` 2016-08-10: protocol ``rest-json``, signing name
  ``batch``): SubmitJob is ``POST /v1/submitjob`` (``jobName``: up to 128 letters, numbers, hyphens and
  underscores, the first alphanumeric; answer ``jobId``, ``jobName``, ``jobArn``), DescribeJobs ``POST
  /v1/describejobs`` (up to 100 ids; a job it does not know is absent from ``jobs``); errors are ``ClientException``
  (400) and ``ServerException`` (500), and throttling is HTTP 429 ``TooManyRequestsException``. A throttled call is
  answered ``IN_PROGRESS`` with the same ``hookDetails`` (the next callback tries again), never ``FAILED``. Tags are
  not used: a tag value holds at most 256 characters and tagging on submission needs ``batch:TagResource`` too.
- AWS Batch user guide, "Job state change events": the event's ``detail`` resembles DescribeJobs' JobDetail, which
  holds the submission's ``parameters`` (so the CloudFormation fields travel there; container ``environment``
  would hand a presigned URL to the model's own container instead), and no event is sent for the submission itself.
- CloudFormation user guide, "Custom resource request objects" and "Custom resource response objects": the answer
  is a JSON PUT to the presigned S3 ``ResponseURL`` with ``Status``, ``Reason`` (required when ``FAILED``),
  ``PhysicalResourceId`` (non-empty, up to 1 KB), ``StackId``, ``RequestId`` and ``LogicalResourceId`` copied from
  the request; the body "can't exceed 4096 bytes" (:data:`RESPONSE_LIMIT`); an operation not answered within the
  resource's ``ServiceTimeout`` (1 to 3600 s, default 3600) fails. The PUT sends an empty ``Content-Type``, as
  CloudFormation's own ``cfn-response`` module does.
- Signature Version 4: IAM user guide, "Create a signed AWS API request" (canonical request, string to sign,
  derived key); the tests compare :func:`sign` with botocore's ``SigV4Auth``.
- Lambda developer guide, "Defined runtime environment variables": ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``. AWS SDKs and Tools reference guide, "Service-specific
  endpoints": ``AWS_ENDPOINT_URL_BATCH``, which overrides the global ``AWS_ENDPOINT_URL``, names the endpoint (the
  function takes a scheme, host and port, without the path the guide allows); otherwise it is
  ``https://batch.<region>.<suffix>`` with the partition's DNS suffix (:data:`PARTITIONS`, from botocore 1.44.8's
  ``endpoints.json``).

Its configuration is the environment (see :func:`read_configuration`). Every request has a timeout
(:data:`REQUEST_TIMEOUT`), goes direct (never through a proxy named by ``HTTP(S)_PROXY``), follows no redirect and
reads at most :data:`READ_LIMIT` bytes of the answer; an answer that is not what Batch documents is one sentence and
a decision: ``FAILED`` when Batch refused the call (400), ``IN_PROGRESS`` when it may pass (a timeout, a 5xx, an
answer that is not JSON) for at most :data:`MAX_TRANSIENT_FAILURES` callbacks in a row, then ``FAILED``.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, NamedTuple

STAGE = "PRE_SCALE_UP"
"""The lifecycle stage the hook runs at: before any task of the new revision starts."""
RUNNING = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING")
"""The Batch job statuses of a job that has not finished (Batch API reference, JobDetail ``status``)."""
READ_LIMIT = 1 << 20
"""The most bytes of an answer the function reads."""
REQUEST_TIMEOUT = 10
"""Seconds each request may take, from connecting to the last byte read."""
DEFAULT_CALLBACK_DELAY = 60
"""Seconds ECS waits before the next invocation when ``PRECOMPILE_CALLBACK_DELAY_SECONDS`` is not set."""
MAX_CALLBACK_DELAY = 3600
"""The longest ``callBackDelay`` the function answers with."""
JOB_TIMEOUT_RANGE = (60, 1_209_600)
"""``PRECOMPILE_JOB_TIMEOUT_SECONDS``: Batch's shortest attempt timeout (60 s) to the hook's longest (20160 min)."""
TIMEOUT_MARGIN_SECONDS = 1500
"""How long past the job's own timeout the hook waits before it answers ``FAILED``: the time a job may wait in its
queue for capacity and pull its image (Batch's timeout counts from the attempt's start). The hook's own timeout
(``timeoutInMinutes``) should exceed the job's timeout, this margin and one ``callBackDelay``, so that the hook's
answer, which says why, comes before ECS's timeout, which does not."""
MAX_TRANSIENT_FAILURES = 5
"""Callbacks in a row whose Batch call timed out, failed on Batch's side or got a malformed answer, before the hook
answers ``FAILED``. Throttling does not count."""
RETRY_PAUSE = 1.0
"""Seconds before the second SubmitJob attempt of a custom resource (twice that before the third)."""
FUNCTION_TIMEOUT_SECONDS = 60
"""The shortest Lambda timeout that holds the longest invocation: three SubmitJob attempts of
:data:`REQUEST_TIMEOUT` for a custom resource, 3 s apart, and the answer's PUT."""
HOOK_DETAILS_LIMIT = 1024
"""The most bytes of the ``hookDetails`` the function returns, as JSON."""
RESPONSE_LIMIT = 4096
"""CloudFormation's limit on the body of a custom resource response, in bytes."""
CARRIED = ("ResponseURL", "StackId", "RequestId", "LogicalResourceId", "PhysicalResourceId")
"""The request fields a custom resource's job carries to its answer, as job parameters named ``Cfn<field>``."""
PARTITIONS = (
    ("cn-", "amazonaws.com.cn"),
    ("us-isob-", "sc2s.sgov.gov"),
    ("us-isof-", "csp.hci.ic.gov"),
    ("us-iso-", "c2s.ic.gov"),
    ("eu-isoe-", "cloud.adc-e.uk"),
    ("eusc-", "amazonaws.eu"),
)
"""Region prefix to DNS suffix for the partitions other than ``aws`` and ``aws-us-gov`` (``amazonaws.com``)."""
THROTTLES = ("TooManyRequestsException", "ThrottlingException", "Throttling", "ThrottledException")
"""The error codes of a throttled call."""
_REGION = re.compile(r"[a-z]{2,5}(-[a-z]+)+-[0-9]{1,2}")
_NUMBER = re.compile(r"[0-9]{1,9}")
_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9:_-]{0,127}")
_SERVICE = "batch"


class Configuration(NamedTuple):
    """A valid configuration: the job to submit, where, with which credentials, and what to name in the log."""

    queue: str
    definition: str
    model: str
    cache: str
    delay: int
    job_timeout: int
    region: str
    endpoint: str
    dns_suffix: str
    key_id: str
    secret: str
    token: str | None
    response_origin: str | None


def _printable(text: object, limit: int) -> bool:
    return isinstance(text, str) and 0 < len(text) <= limit and text.isprintable()


def _origin(url: str) -> str | None:
    """``scheme://host[:port]`` of ``url`` when it is an http(s) URL with nothing else; otherwise None."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment or not _printable(url, 2048):
        return None
    return f"{parts.scheme}://{parts.hostname}" + (f":{port}" if port else "")


def read_configuration(environ: Any) -> Configuration | str:
    """The configuration ``environ`` describes, or the sentence saying what is wrong with it.

    ``PRECOMPILE_JOB_QUEUE`` (a job queue ARN) and ``PRECOMPILE_JOB_DEFINITION`` (a job definition ARN with its
    revision); ``PRECOMPILE_MODEL`` (the model's construct path) and ``PRECOMPILE_CACHE`` (the cache, in words),
    for the log; ``PRECOMPILE_CALLBACK_DELAY_SECONDS`` (60, 1 to 3600); ``PRECOMPILE_JOB_TIMEOUT_SECONDS`` (the
    job's timeout, 60 to 1209600); Lambda's ``AWS_REGION`` and credentials; ``AWS_ENDPOINT_URL_BATCH``, else
    ``AWS_ENDPOINT_URL`` (none: Batch's regional endpoint); ``PRECOMPILE_RESPONSE_ORIGIN`` (none; tests only: one ``http(s)://host[:port]``
    also trusted as a ``ResponseURL``)."""
    queue = environ.get("PRECOMPILE_JOB_QUEUE", "")
    if not (_printable(queue, 2048) and queue.startswith("arn:") and ":job-queue/" in queue):
        return f"PRECOMPILE_JOB_QUEUE must be a job queue ARN, not {queue[:200]!r}"
    definition = environ.get("PRECOMPILE_JOB_DEFINITION", "")
    if not (
        _printable(definition, 2048)
        and definition.startswith("arn:")
        and ":job-definition/" in definition
        and re.search(r":[0-9]+$", definition)
    ):
        return f"PRECOMPILE_JOB_DEFINITION must be a job definition ARN with its revision, not {definition[:200]!r}"
    model = environ.get("PRECOMPILE_MODEL", "")
    if not _printable(model, 1024):
        return f"PRECOMPILE_MODEL must name the model in printable text, not {model[:200]!r}"
    cache = environ.get("PRECOMPILE_CACHE", "")
    if not _printable(cache, 1024):
        return f"PRECOMPILE_CACHE must describe the cache in printable text, not {cache[:200]!r}"
    numbers = {}
    for name, default, low, high in (
        ("CALLBACK_DELAY_SECONDS", str(DEFAULT_CALLBACK_DELAY), 1, MAX_CALLBACK_DELAY),
        ("JOB_TIMEOUT_SECONDS", "", *JOB_TIMEOUT_RANGE),
    ):
        text = environ.get("PRECOMPILE_" + name, default)
        value = int(text) if isinstance(text, str) and _NUMBER.fullmatch(text) else -1
        if not low <= value <= high:
            return f"PRECOMPILE_{name} must be a whole number from {low} to {high}, not {str(text)[:20]!r}"
        numbers[name] = value
    region = environ.get("AWS_REGION", "")
    if not (isinstance(region, str) and _REGION.fullmatch(region)):
        return f"AWS_REGION must name a Region, not {str(region)[:40]!r}"
    suffix = next((s for prefix, s in PARTITIONS if region.startswith(prefix)), "amazonaws.com")
    endpoint = f"https://batch.{region}.{suffix}"
    for name in ("AWS_ENDPOINT_URL_BATCH", "AWS_ENDPOINT_URL"):
        override = environ.get(name)
        if override is not None:
            endpoint = _origin(override) or ""
            if not endpoint:
                return f"{name} must be http(s)://host[:port] and nothing more, not {override[:200]!r}"
            break
    key_id, secret = environ.get("AWS_ACCESS_KEY_ID", ""), environ.get("AWS_SECRET_ACCESS_KEY", "")
    token = environ.get("AWS_SESSION_TOKEN") or None
    if not (_printable(key_id, 256) and _printable(secret, 256) and (token is None or _printable(token, 8192))):
        return "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must hold the function's credentials"
    response_origin = environ.get("PRECOMPILE_RESPONSE_ORIGIN")
    if response_origin is not None:
        response_origin = _origin(response_origin)
        if response_origin is None:
            return "PRECOMPILE_RESPONSE_ORIGIN must be http(s)://host[:port] and nothing more"
    return Configuration(
        queue=queue,
        definition=definition,
        model=model,
        cache=cache,
        delay=numbers["CALLBACK_DELAY_SECONDS"],
        job_timeout=numbers["JOB_TIMEOUT_SECONDS"],
        region=region,
        endpoint=endpoint,
        dns_suffix=suffix,
        key_id=key_id,
        secret=secret,
        token=token,
        response_origin=response_origin,
    )


def _host(parts: urllib.parse.SplitResult) -> str:
    """The Host header: the host in lower case, with the port unless it is the scheme's default."""
    host = parts.hostname or ""
    port = parts.port
    if port is None or (parts.scheme, port) in (("http", 80), ("https", 443)):
        return host
    return f"{host}:{port}"


def sign(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    credentials: tuple[str, str, str | None],
    region: str,
    service: str,
    amz_date: str,
) -> dict[str, str]:
    """``headers`` with ``Host``, ``X-Amz-Date``, ``X-Amz-Security-Token`` (with a session token) and the Signature
    Version 4 ``Authorization`` for the request; every header given is signed. ``amz_date``: ``YYYYMMDDTHHMMSSZ``."""
    key_id, secret, token = credentials
    parts = urllib.parse.urlsplit(url)
    signed = {**headers, "Host": _host(parts), "X-Amz-Date": amz_date}
    if token:
        signed["X-Amz-Security-Token"] = token
    canonical = {name.lower(): " ".join(value.split()) for name, value in signed.items()}
    names = ";".join(sorted(canonical))
    query = "&".join(
        sorted(
            f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        )
    )
    request = "\n".join(
        [
            method,
            urllib.parse.quote(parts.path or "/", safe="/-_.~"),
            query,
            "".join(f"{name}:{canonical[name]}\n" for name in sorted(canonical)),
            names,
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(request.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (amz_date[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={key_id}/{scope}, SignedHeaders={names}, Signature={signature}"
    )
    return signed


class Answer(NamedTuple):
    """What a request got: the HTTP status and body, or (status 0) the sentence saying why there is none."""

    status: int
    body: bytes
    error_type: str
    problem: str


def _opener() -> urllib.request.OpenerDirector:
    """Direct HTTP(S) only: no proxy, no redirect, no exception for an error status."""
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler({}), urllib.request.HTTPHandler(), urllib.request.HTTPSHandler()):
        opener.add_handler(handler)
    return opener


def send(method: str, url: str, headers: dict[str, str], body: bytes) -> Answer:
    """One request, bounded by :data:`REQUEST_TIMEOUT` and :data:`READ_LIMIT`; never raises."""
    target = f"{method} {urllib.parse.urlsplit(url).netloc}"
    deadline = time.monotonic() + REQUEST_TIMEOUT
    try:
        request = urllib.request.Request(url, data=body, headers=headers, method=method)
        with _opener().open(request, timeout=REQUEST_TIMEOUT) as response:
            status, chunks, read = response.status, [], 0
            while read <= READ_LIMIT and time.monotonic() < deadline:
                chunk = response.read(min(65536, READ_LIMIT + 1 - read))
                if not chunk:
                    break
                chunks.append(chunk)
                read += len(chunk)
            if time.monotonic() >= deadline:
                raise TimeoutError
            if read > READ_LIMIT:
                return Answer(0, b"", "", f"{target} answered more than {READ_LIMIT} bytes")
            return Answer(status, b"".join(chunks), response.headers.get("x-amzn-ErrorType") or "", "")
    except TimeoutError:
        return Answer(0, b"", "", f"{target} did not answer within {REQUEST_TIMEOUT} s")
    except urllib.error.URLError as error:
        if isinstance(error.reason, TimeoutError):
            return Answer(0, b"", "", f"{target} did not answer within {REQUEST_TIMEOUT} s")
        return Answer(0, b"", "", f"{target} unreachable: {str(error.reason)[:200]}")
    except (OSError, ValueError) as error:
        return Answer(0, b"", "", f"{target} unreachable: {type(error).__name__} {str(error)[:200]}")


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


class Call(NamedTuple):
    """A Batch call's outcome: ``ok`` (with the answer), ``throttled``, ``transient`` or ``refused`` (a sentence)."""

    outcome: str
    answer: dict[str, Any]
    sentence: str


def call_batch(config: Configuration, action: str, payload: dict[str, Any]) -> Call:
    """``POST /v1/<action lower-cased>`` with ``payload``, signed; the answer classified."""
    url = f"{config.endpoint}/v1/{action.lower()}"
    body = json.dumps(payload, separators=(",", ":")).encode()
    amz_date = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    headers = sign(
        "POST",
        url,
        {"Content-Type": "application/json"},
        body,
        (config.key_id, config.secret, config.token),
        config.region,
        _SERVICE,
        amz_date,
    )
    headers["User-Agent"] = "neuron-precompile-hook"
    answer = send("POST", url, headers, body)
    if not answer.status:
        return Call("transient", {}, f"Batch {action}: {answer.problem}")
    parsed = _json(answer.body)
    fields = parsed if isinstance(parsed, dict) else {}
    code = answer.error_type or str(fields.get("__type") or fields.get("code") or fields.get("Code") or "")
    code = code.split(":")[0].split("#")[-1][:100]
    message = str(fields.get("message") or fields.get("Message") or "")[:300]
    if answer.status == 429 or code in THROTTLES:
        return Call("throttled", {}, f"Batch {action} was throttled ({answer.status} {code or 'no code'})")
    if answer.status >= 500:
        return Call("transient", {}, f"Batch {action} failed on Batch's side ({answer.status} {code}): {message}")
    if answer.status >= 300:
        return Call("refused", {}, f"Batch refused {action} ({answer.status} {code}): {message}")
    if not isinstance(parsed, dict):
        return Call("transient", {}, f"Batch answered {action} with something that is not a JSON object")
    return Call("ok", parsed, "")


def job_name(model: str, suffix: str) -> str:
    """``precompile-<model>-<suffix>`` within Batch's rule: 128 letters, numbers, hyphens and underscores."""
    clean_suffix = re.sub(r"[^A-Za-z0-9_-]+", "-", suffix).strip("-_")[-24:] or "job"
    clean_model = re.sub(r"[^A-Za-z0-9_-]+", "-", model).strip("-_")
    room = 128 - len("precompile--") - len(clean_suffix)
    return f"precompile-{clean_model[-room:].strip('-_') or 'model'}-{clean_suffix}"


def submit(config: Configuration, suffix: str, parameters: dict[str, str] | None = None) -> Call:
    """SubmitJob of the configured definition on the configured queue; ``ok`` carries a valid ``jobId``."""
    payload: dict[str, Any] = {
        "jobName": job_name(config.model, suffix),
        "jobQueue": config.queue,
        "jobDefinition": config.definition,
        "timeout": {"attemptDurationSeconds": config.job_timeout},
    }
    if parameters:
        payload["parameters"] = parameters
    result = call_batch(config, "SubmitJob", payload)
    if result.outcome == "ok" and not (isinstance(job := result.answer.get("jobId"), str) and _JOB_ID.fullmatch(job)):
        return Call("transient", {}, "Batch answered SubmitJob without a job id")
    return result


class Decision(NamedTuple):
    """An answer and the sentence that explains it."""

    status: str
    sentence: str
    job_id: str
    details: dict[str, Any]


def _details(event: dict[str, Any]) -> dict[str, Any]:
    """The hook's own fields of the event's ``hookDetails`` (a JSON object, or its text), each checked."""
    raw = event.get("hookDetails")
    if isinstance(raw, str) and len(raw) <= 65536:
        raw = _json(raw.encode())
    if not isinstance(raw, dict):
        return {}
    kept: dict[str, Any] = {}
    if isinstance(job := raw.get("jobId"), str) and _JOB_ID.fullmatch(job):
        kept["jobId"] = job
    for name in ("submittedAt", "transientFailures"):
        value = raw.get(name)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 40:
            kept[name] = value
    return kept


def _transient(details: dict[str, Any], sentence: str) -> Decision:
    failures = details.get("transientFailures", 0) + 1
    if failures > MAX_TRANSIENT_FAILURES:
        return Decision("FAILED", f"{sentence}, {failures} times in a row", details.get("jobId", ""), details)
    again = {**details, "transientFailures": failures}
    return Decision("IN_PROGRESS", f"{sentence}; trying again at the next callback", details.get("jobId", ""), again)


def decide_hook(config: Configuration, event: dict[str, Any], now: int) -> Decision:
    """The hook's answer to ``event``: submit on the first invocation, then follow the job in ``hookDetails``."""
    details = _details(event)
    started = details.setdefault("submittedAt", now)
    deadline = config.job_timeout + TIMEOUT_MARGIN_SECONDS
    job = details.get("jobId")
    if job is None:
        if now - started > deadline:
            return Decision("FAILED", f"no job submitted within {deadline} s", "", details)
        revision = event.get("targetServiceRevisionArn")
        suffix = revision.rsplit("/", 1)[-1] if isinstance(revision, str) else str(now)
        result = submit(config, suffix)
        if result.outcome == "ok":
            job = result.answer["jobId"]
            return Decision("IN_PROGRESS", "submitted the precompile job", job, {"jobId": job, "submittedAt": started})
        if result.outcome == "throttled":
            return Decision("IN_PROGRESS", f"{result.sentence}; submitting at the next callback", "", details)
        if result.outcome == "transient":
            return _transient(details, result.sentence)
        return Decision("FAILED", result.sentence, "", details)
    result = call_batch(config, "DescribeJobs", {"jobs": [job]})
    if result.outcome == "throttled":
        return Decision("IN_PROGRESS", f"{result.sentence}; asking again at the next callback", job, details)
    if result.outcome == "transient":
        return _transient(details, result.sentence)
    if result.outcome == "refused":
        return Decision("FAILED", result.sentence, job, details)
    jobs = result.answer.get("jobs")
    if not isinstance(jobs, list):
        return _transient(details, "Batch answered DescribeJobs without a list of jobs")
    found = next((j for j in jobs if isinstance(j, dict) and j.get("jobId") == job), None)
    if found is None:
        return Decision("FAILED", "Batch does not know the job (DescribeJobs returned no job)", job, details)
    status = found.get("status")
    details.pop("transientFailures", None)
    if status == "SUCCEEDED":
        return Decision("SUCCEEDED", "the precompile job succeeded", job, details)
    if status == "FAILED":
        return Decision("FAILED", f"the precompile job failed: {_reason(found)}", job, details)
    if status not in RUNNING:
        return _transient(details, f"Batch answered an unknown job status {str(status)[:40]!r}")
    if now - started > deadline:
        return Decision(
            "FAILED",
            f"the job is still {status} after {now - started} s, beyond its timeout of {config.job_timeout} s "
            f"and {TIMEOUT_MARGIN_SECONDS} s of margin",
            job,
            details,
        )
    return Decision("IN_PROGRESS", f"the job is {status}", job, details)


def _reason(job: dict[str, Any]) -> str:
    """The job's ``statusReason``, and its last attempt's exit code and reason when Batch gives them."""
    reason = str(job.get("statusReason") or "no statusReason given")[:300]
    attempts = job.get("attempts")
    if isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict):
        container = attempts[-1].get("container")
        if isinstance(container, dict):
            code, why = container.get("exitCode"), container.get("reason")
            if isinstance(code, int) and not isinstance(code, bool):
                reason += f" (exit code {code})"
            if isinstance(why, str) and why:
                reason += f" ({why[:200]})"
    return reason


def response_url_problem(url: object, config: Configuration) -> str:
    """Why the function will not PUT to ``url`` ("" when it will): only https on the default port to an Amazon S3
    host of the function's partition (a label ``s3`` or ``s3-<region>`` before ``amazonaws.com``,
    ``amazonaws.com.cn``, ...: ``<bucket>.s3.amazonaws.com``, ``<bucket>.s3-us-west-2.amazonaws.com``, the forms
    CloudFormation's presigned URLs take), or the origin ``PRECOMPILE_RESPONSE_ORIGIN`` names. Another
    ``amazonaws.com`` host (an API Gateway stage, say) is refused."""
    if not (isinstance(url, str) and len(url) <= 8192 and all(0x20 < ord(c) < 0x7F for c in url)):
        return "the ResponseURL is not a URL of printable ASCII"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return "the ResponseURL is not a URL"
    host = parts.hostname or ""
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    if config.response_origin and origin == config.response_origin and "@" not in parts.netloc:
        return ""
    if parts.scheme != "https" or "@" in parts.netloc or port not in (None, 443):
        return f"the ResponseURL must be https on the default port, not {origin[:100]}"
    if not host.endswith("." + config.dns_suffix):
        return f"the ResponseURL's host {host[:100]} is not an {config.dns_suffix} host"
    labels = host[: -len(config.dns_suffix) - 1].split(".")
    if not any(label == "s3" or label.startswith("s3-") for label in labels):
        return f"the ResponseURL's host {host[:100]} is not an Amazon S3 host"
    return ""


def respond(url: str, request: dict[str, Any], status: str, physical_id: str, reason: str) -> str:
    """PUT the custom resource's answer to ``url``; the sentence saying how it went."""
    answer: dict[str, Any] = {
        "Status": status,
        "PhysicalResourceId": physical_id[:1024],
        **{name: str(request.get(name, ""))[:1024] for name in ("StackId", "RequestId", "LogicalResourceId")},
    }
    if reason:
        answer["Reason"] = reason
    body = json.dumps(answer).encode()
    if len(body) > RESPONSE_LIMIT:
        answer["Reason"] = reason[: max(0, len(reason) - (len(body) - RESPONSE_LIMIT) - 8)] + "..."
        body = json.dumps(answer).encode()
    headers = {"Content-Type": "", "User-Agent": "neuron-precompile-hook"}
    result = send("PUT", url, headers, body)
    host = urllib.parse.urlsplit(url).hostname
    if not result.status:
        return f"the {status} answer to CloudFormation was not delivered: {result.problem}"
    if not 200 <= result.status < 300:
        return f"the {status} answer to CloudFormation was refused by {host} ({result.status})"
    return f"answered {status} to CloudFormation ({host} took it)"


def decide_custom_resource(config: Configuration, event: dict[str, Any]) -> Decision:
    """Submit on Create and Update (the answer waits for the job), answer Delete at once, a failed submit FAILED."""
    kind, url = event.get("RequestType"), event.get("ResponseURL")
    problem = response_url_problem(url, config)
    if problem:
        return Decision("REFUSED", f"{problem}: no answer is sent", "", {})
    url = str(url)
    previous = event.get("PhysicalResourceId")
    request_id = str(event.get("RequestId", ""))[:64]
    fallback = f"precompile-not-submitted-{request_id or 'request'}"
    if isinstance(previous, str) and _printable(previous, 1024):
        fallback = previous
    if kind == "Delete":
        return Decision("SUCCESS", respond(url, event, "SUCCESS", fallback, ""), "", {})
    if kind not in ("Create", "Update"):
        reason = f"Unknown RequestType {str(kind)[:40]!r}."
        return Decision("FAILED", respond(url, event, "FAILED", fallback, reason), "", {})
    carried = {f"Cfn{name}": event[name] for name in CARRIED if _printable(event.get(name), 8192)}
    result = Call("transient", {}, "")
    for attempt in range(3):
        if attempt:
            time.sleep(attempt * RETRY_PAUSE)
        result = submit(config, f"cfn-{request_id[:8]}", carried)
        if result.outcome in ("ok", "refused"):
            break
    if result.outcome == "ok":
        job = result.answer["jobId"]
        return Decision("SUBMITTED", "submitted the precompile job; CloudFormation is answered when it ends", job, {})
    reason = f"The precompile job of {config.model[:300]} was not submitted: {result.sentence}."
    return Decision("FAILED", f"{result.sentence}; {respond(url, event, 'FAILED', fallback, reason)}", "", {})


def decide_job_event(config: Configuration, event: dict[str, Any]) -> Decision:
    """Answer CloudFormation for a finished job that carries a custom resource request; ignore any other."""
    detail = event.get("detail")
    if not isinstance(detail, dict):
        return Decision("IGNORED", "the event has no detail", "", {})
    job = detail.get("jobId")
    job = job if isinstance(job, str) and _printable(job, 128) else ""
    status, queue = detail.get("status"), detail.get("jobQueue")
    if isinstance(queue, str) and queue != config.queue:
        return Decision("IGNORED", f"the job ran on another queue ({queue[:200]})", job, {})
    if status not in ("SUCCEEDED", "FAILED"):
        return Decision("IGNORED", f"the job is {str(status)[:40]}, not finished", job, {})
    parameters = detail.get("parameters")
    parameters = parameters if isinstance(parameters, dict) else {}
    request = {name: parameters.get(f"Cfn{name}") for name in CARRIED}
    if request["ResponseURL"] is None:
        return Decision("IGNORED", f"the job {status} and carries no CloudFormation request", job, {})
    problem = response_url_problem(request["ResponseURL"], config)
    if problem:
        return Decision("REFUSED", f"{problem}: no answer is sent", job, {})
    previous = request["PhysicalResourceId"]
    if not job:
        return Decision("FAILED", "the event names no job", "", {})
    if status == "SUCCEEDED":
        return Decision("SUCCESS", respond(request["ResponseURL"], request, "SUCCESS", job, ""), job, {})
    reason = f"The precompile job {job} of {config.model[:300]} failed: {_reason(detail)}."
    physical = previous if isinstance(previous, str) and _printable(previous, 1024) else job
    return Decision("FAILED", respond(request["ResponseURL"], request, "FAILED", physical, reason), job, {})


def handler(event: Any, context: Any) -> dict[str, Any]:
    """The Lambda entry point: the hook's answer (or, for the other events, the decision), with one JSON line
    printed to the function's log."""
    kind, config = "unknown", None
    decision = Decision("FAILED", "the event is none this function knows", "", {})
    try:
        config = read_configuration(os.environ)
        if not isinstance(event, dict):
            decision = Decision("FAILED", "the event is not a JSON object", "", {})
        elif "RequestType" in event:
            kind = "custom-resource"
        elif event.get("detail-type") == "Batch Job State Change" and event.get("source") == "aws.batch":
            kind = "job-state-change"
        elif "targetServiceRevisionArn" in event or "serviceArn" in event:
            kind = "lifecycle-hook"
        if isinstance(config, str):
            decision = Decision("FAILED", f"malformed configuration: {config}", "", {})
        elif kind == "custom-resource":
            decision = decide_custom_resource(config, event)
        elif kind == "job-state-change":
            decision = decide_job_event(config, event)
        elif kind == "lifecycle-hook":
            decision = decide_hook(config, event, int(time.time()))
    except Exception as error:  # never raise: the sentence would be lost
        decision = Decision("FAILED", f"unexpected error: {type(error).__name__}", "", {})
    named = config if isinstance(config, Configuration) else None
    line = {
        "model": named.model if named else os.environ.get("PRECOMPILE_MODEL", "")[:300],
        "cache": named.cache if named else os.environ.get("PRECOMPILE_CACHE", "")[:300],
        "jobId": decision.job_id,
        "event": kind,
        "decision": decision.status,
        "message": decision.sentence[:1000] + ".",
    }
    print(json.dumps(line))
    if kind in ("custom-resource", "job-state-change"):
        return {"decision": decision.status, "jobId": decision.job_id}
    if decision.status == "IN_PROGRESS":
        delay = named.delay if named else DEFAULT_CALLBACK_DELAY
        return {"hookStatus": "IN_PROGRESS", "callBackDelay": delay, "hookDetails": decision.details}
    return {"hookStatus": decision.status if decision.status == "SUCCEEDED" else "FAILED"}
