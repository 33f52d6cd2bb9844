"""The precompile function against a local stand-in for AWS Batch (and for CloudFormation's response bucket): each
outcome of the lifecycle hook, the custom resource and the job state change is an answer and one JSON log line."""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import botocore.session
import botocore.validate
import pytest
from conftest import MEASURED_IN_CI, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ports import unused_port

from neuron_constructs.programs import precompile_hook
from neuron_constructs.programs.carrying import program_source

QUEUE = "arn:aws:batch:us-east-1:123456789012:job-queue/precompile"
DEFINITION = "arn:aws:batch:us-east-1:123456789012:job-definition/llm-precompile:3"
MODEL = "Models/Llm"
CACHE = "EFS fs-0123 access point fsap-4567 for Models/Llm"
REVISION = "arn:aws:ecs:us-east-1:123456789012:service-revision/cluster/llm/4980306466373577095"
JOB = "4c7599ae-0a82-49aa-ba5a-4727fcce14a8"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SOURCE_BUDGET = 32768
"""This function's own budget in characters of carried source: a small part of a template (CloudFormation caps a
template at 1 MB and ``Code.ZipFile`` at 4 MB)."""


class Seen(NamedTuple):
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Script = tuple[int, dict[str, str], bytes]
"""An answer of the stand-in: status (0: never answer), headers, body."""


class StandIn(ThreadingHTTPServer):
    """Records each request and answers with the next scripted answer (200 ``{}`` when the script is empty)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[Seen] = []
        self.script: list[Script | Callable[[Seen], Script]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def batch_calls(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST"]

    def responses(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "PUT"]


class _Handler(BaseHTTPRequestHandler):
    server: StandIn

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        seen = Seen(self.command, self.path, dict(self.headers), self.rfile.read(length) if length else b"")
        self.server.seen.append(seen)
        answer = self.server.script.pop(0) if self.server.script else (200, {}, b"{}")
        status, headers, body = answer(seen) if callable(answer) else answer
        if status == 0:
            time.sleep(3)
            return
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[StandIn]:
    httpd = StandIn()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def batch(server: StandIn, monkeypatch: pytest.MonkeyPatch) -> StandIn:
    """The stand-in, with nothing seen or scripted, named as Batch's endpoint and as the one trusted response origin
    in the function's environment."""
    server.seen.clear()
    server.script.clear()
    for name, value in _environment(server.url).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(precompile_hook, "RETRY_PAUSE", 0.01)
    return server


def _environment(url: str) -> dict[str, str]:
    return {
        "PRECOMPILE_JOB_QUEUE": QUEUE,
        "PRECOMPILE_JOB_DEFINITION": DEFINITION,
        "PRECOMPILE_MODEL": MODEL,
        "PRECOMPILE_CACHE": CACHE,
        "PRECOMPILE_CALLBACK_DELAY_SECONDS": "45",
        "PRECOMPILE_JOB_TIMEOUT_SECONDS": "3600",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_SESSION_TOKEN": "session-token",
        "AWS_ENDPOINT_URL_BATCH": url,
        "PRECOMPILE_RESPONSE_ORIGIN": url,
    }


def invoke(event: Any, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The handler's answer to ``event`` and its one log line, parsed."""
    answer = precompile_hook.handler(event, None)
    out = capsys.readouterr().out
    assert out.count("\n") == 1, "one JSON line per invocation"
    line = json.loads(out)
    assert set(line) == {"model", "cache", "jobId", "event", "decision", "message"}
    assert line["message"].endswith(".") and len(line["message"]) <= 1001
    return answer, line


def answer_json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Script:
    return (status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(payload).encode())


def described(status: str, **fields: Any) -> Script:
    return answer_json({"jobs": [{"jobId": JOB, "jobName": "precompile-Models-Llm", "status": status, **fields}]})


def hook_event(**details: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "serviceArn": "arn:aws:ecs:us-east-1:123456789012:service/cluster/llm",
        "targetServiceRevisionArn": REVISION,
        "testTrafficWeights": {},
        "productionTrafficWeights": {},
    }
    if details:
        event["hookDetails"] = details
    return event


def running_details() -> dict[str, Any]:
    return {"jobId": JOB, "submittedAt": int(time.time()) - 60}


# The lifecycle hook


def test_the_first_invocation_submits_the_job_and_answers_in_progress_with_its_id(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN Batch that takes the submission
    batch.script = [answer_json({"jobId": JOB, "jobName": "n", "jobArn": f"arn:aws:batch:us-east-1:1:job/{JOB}"})]
    # WHEN ECS invokes the hook at PRE_SCALE_UP for the first time
    answer, log = invoke(hook_event(), capsys)
    # THEN the job of the configured definition is submitted on the configured queue, named for model and revision
    (call,) = batch.batch_calls()
    assert call.path == "/v1/submitjob"
    submitted = json.loads(call.body)
    assert (submitted["jobQueue"], submitted["jobDefinition"]) == (QUEUE, DEFINITION)
    assert submitted["jobName"] == "precompile-Models-Llm-4980306466373577095"
    assert submitted["timeout"] == {"attemptDurationSeconds": 3600}
    # AND the answer is IN_PROGRESS with the configured delay and the job id in hookDetails
    assert answer["hookStatus"] == "IN_PROGRESS" and answer["callBackDelay"] == 45
    assert answer["hookDetails"]["jobId"] == JOB
    assert abs(answer["hookDetails"]["submittedAt"] - time.time()) < 5
    assert len(json.dumps(answer["hookDetails"]).encode()) <= precompile_hook.HOOK_DETAILS_LIMIT
    assert (log["model"], log["cache"], log["jobId"], log["decision"]) == (MODEL, CACHE, JOB, "IN_PROGRESS")


@pytest.mark.parametrize("status", precompile_hook.RUNNING)
def test_a_job_that_has_not_finished_is_in_progress(
    status: str, batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    batch.script = [described(status)]
    details = running_details()
    answer, log = invoke(hook_event(**details), capsys)
    assert answer == {"hookStatus": "IN_PROGRESS", "callBackDelay": 45, "hookDetails": details}
    assert status in log["message"]


def test_a_succeeded_job_succeeds(batch: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    batch.script = [described("SUCCEEDED")]
    answer, log = invoke(hook_event(**running_details()), capsys)
    assert answer == {"hookStatus": "SUCCEEDED"}
    assert (log["jobId"], log["decision"]) == (JOB, "SUCCEEDED")


def test_a_failed_job_fails_with_one_line_naming_model_cache_job_and_reason(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a job Batch reports FAILED, with its reason and the container's exit code
    reason = "Essential container in task exited"
    attempt = {"container": {"exitCode": 70, "reason": "neuronx-cc: out of memory"}}
    batch.script = [described("FAILED", statusReason=reason, attempts=[attempt])]
    # WHEN the hook asks
    answer, log = invoke(hook_event(**running_details()), capsys)
    # THEN it answers FAILED (ECS rolls back; the running revision keeps serving), and the line says why
    assert answer == {"hookStatus": "FAILED"}
    assert (log["model"], log["cache"], log["jobId"], log["decision"]) == (MODEL, CACHE, JOB, "FAILED")
    assert reason in log["message"] and "exit code 70" in log["message"] and "out of memory" in log["message"]


def test_a_job_batch_does_not_know_fails(batch: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    batch.script = [answer_json({"jobs": []})]
    answer, log = invoke(hook_event(**running_details()), capsys)
    assert answer == {"hookStatus": "FAILED"}
    assert "does not know the job" in log["message"] and log["jobId"] == JOB


def test_a_job_still_running_past_its_timeout_and_margin_fails(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    late = 3600 + precompile_hook.TIMEOUT_MARGIN_SECONDS + 30
    batch.script = [described("RUNNABLE")]
    answer, log = invoke(hook_event(jobId=JOB, submittedAt=int(time.time()) - late), capsys)
    assert answer == {"hookStatus": "FAILED"}
    assert "still RUNNABLE" in log["message"] and "timeout of 3600 s" in log["message"]


@pytest.mark.parametrize(
    "throttle",
    [
        answer_json({"message": "Too Many Requests"}, 429),
        answer_json({"__type": "TooManyRequestsException", "message": "slow down"}, 400),
        answer_json({"message": "Rate exceeded"}, 400, {"x-amzn-ErrorType": "ThrottlingException:http://internal"}),
    ],
)
def test_throttling_is_in_progress_keeping_the_hook_details(
    throttle: Script, batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN Batch throttling DescribeJobs
    batch.script = [throttle]
    details = running_details()
    # WHEN the hook asks
    answer, log = invoke(hook_event(**details), capsys)
    # THEN it asks again at the next callback, with the same hookDetails: never FAILED for a throttle
    assert answer == {"hookStatus": "IN_PROGRESS", "callBackDelay": 45, "hookDetails": details}
    assert "throttled" in log["message"]


def test_a_throttled_submission_is_submitted_at_the_next_callback(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    batch.script = [answer_json({"message": "Too Many Requests"}, 429), answer_json({"jobId": JOB, "jobName": "n"})]
    first, _ = invoke(hook_event(), capsys)
    assert first["hookStatus"] == "IN_PROGRESS" and "jobId" not in first["hookDetails"]
    second, _ = invoke(hook_event(**first["hookDetails"]), capsys)
    assert second["hookDetails"] == {"jobId": JOB, "submittedAt": first["hookDetails"]["submittedAt"]}
    assert [c.path for c in batch.batch_calls()] == ["/v1/submitjob", "/v1/submitjob"]


def test_an_answer_that_is_not_json_is_in_progress_then_failed_after_the_limit(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN Batch answering DescribeJobs with an HTML page, every time
    details: dict[str, Any] = running_details()
    answers = []
    for _ in range(precompile_hook.MAX_TRANSIENT_FAILURES + 1):
        batch.script = [(200, {"Content-Type": "text/html"}, b"<html>gateway</html>")]
        answer, log = invoke(hook_event(**details), capsys)
        answers.append(answer["hookStatus"])
        details = answer.get("hookDetails", details)
        assert "not a JSON object" in log["message"]
    # THEN each is a sentence and a decision: IN_PROGRESS while it may pass, then FAILED
    assert answers == ["IN_PROGRESS"] * precompile_hook.MAX_TRANSIENT_FAILURES + ["FAILED"]


@MEASURED_IN_CI
def test_a_batch_that_never_answers_is_retried_at_the_next_callback_within_the_timeout(
    batch: StandIn, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(precompile_hook, "REQUEST_TIMEOUT", 0.3)
    batch.script = [(0, {}, b"")]
    started = time.monotonic()
    answer, log = invoke(hook_event(**running_details()), capsys)
    took = time.monotonic() - started
    assert answer["hookStatus"] == "IN_PROGRESS" and answer["hookDetails"]["transientFailures"] == 1
    assert "did not answer within 0.3 s" in log["message"]
    assert 0.25 < took < 1.2


def test_an_answer_beyond_the_read_limit_is_not_read(
    batch: StandIn, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(precompile_hook, "READ_LIMIT", 4096)
    batch.script = [(200, {"Content-Type": "application/json"}, b" " * 10_000 + b"{}")]
    answer, log = invoke(hook_event(**running_details()), capsys)
    assert answer["hookStatus"] == "IN_PROGRESS" and "more than 4096 bytes" in log["message"]


def test_a_closed_endpoint_is_a_sentence(
    batch: StandIn, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_BATCH", f"http://127.0.0.1:{unused_port()}")
    answer, log = invoke(hook_event(**running_details()), capsys)
    assert answer["hookStatus"] == "IN_PROGRESS" and "unreachable" in log["message"]


def test_a_submission_batch_refuses_fails_with_its_message(batch: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    batch.script = [answer_json({"__type": "ClientException", "message": "Job queue does not exist."}, 400)]
    answer, log = invoke(hook_event(), capsys)
    assert answer == {"hookStatus": "FAILED"}
    assert "refused SubmitJob (400 ClientException): Job queue does not exist." in log["message"]


def test_the_hook_details_round_trip_to_describe_jobs_of_that_job(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the first invocation's answer
    batch.script = [answer_json({"jobId": JOB, "jobName": "n"}), described("RUNNING"), described("SUCCEEDED")]
    first, _ = invoke(hook_event(), capsys)
    # WHEN ECS gives its hookDetails back, as a JSON object and then as text
    second, _ = invoke(hook_event(**first["hookDetails"]), capsys)
    third_event = hook_event()
    third_event["hookDetails"] = json.dumps(second["hookDetails"])
    third, _ = invoke(third_event, capsys)
    # THEN each later invocation asks DescribeJobs for that job, and the details stay the same
    calls = batch.batch_calls()
    assert [c.path for c in calls] == ["/v1/submitjob", "/v1/describejobs", "/v1/describejobs"]
    assert [json.loads(c.body) for c in calls[1:]] == [{"jobs": [JOB]}, {"jobs": [JOB]}]
    assert second["hookDetails"] == first["hookDetails"] and third == {"hookStatus": "SUCCEEDED"}


def test_requests_are_signed_as_botocore_signs_them(batch: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a DescribeJobs the function sent
    batch.script = [described("RUNNING")]
    invoke(hook_event(**running_details()), capsys)
    (call,) = batch.batch_calls()
    sent = {name.lower(): value for name, value in call.headers.items()}
    # WHEN botocore signs the same request at the same time with the same credentials
    signed_names = sent["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert signed_names == ["content-type", "host", "x-amz-date", "x-amz-security-token"]
    request = botocore.awsrequest.AWSRequest(
        method="POST", url=batch.url + call.path, data=call.body, headers={"Content-Type": sent["content-type"]}
    )
    when = datetime.datetime.strptime(sent["x-amz-date"], "%Y%m%dT%H%M%SZ")
    credentials = botocore.credentials.Credentials("AKIDEXAMPLE", SECRET, "session-token")
    original = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda *a, **k: when  # type: ignore[assignment]
    try:
        botocore.auth.SigV4Auth(credentials, "batch", "us-east-1").add_auth(request)
    finally:
        botocore.auth.get_current_datetime = original
    # THEN the Authorization headers are the same
    assert sent["authorization"] == request.headers["Authorization"]


def test_the_requests_are_those_batch_s_model_describes(batch: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN the three requests the function sends: SubmitJob for a hook and for a custom resource, and DescribeJobs
    batch.script = [answer_json({"jobId": JOB, "jobName": "n"}), answer_json({"jobId": JOB, "jobName": "n"})]
    invoke(hook_event(), capsys)
    invoke(cfn_event(batch, "Update", PhysicalResourceId="old"), capsys)
    invoke(hook_event(**running_details()), capsys)
    # THEN each goes where botocore's model of Batch puts the operation, and its body is valid input for it
    model = botocore.session.get_session().get_service_model("batch")
    validator = botocore.validate.ParamValidator()
    operations = ["SubmitJob", "SubmitJob", "DescribeJobs"]
    for call, name in zip(batch.batch_calls(), operations, strict=True):
        operation = model.operation_model(name)
        assert (call.method, call.path) == (operation.http["method"], operation.http["requestUri"])
        report = validator.validate(json.loads(call.body), operation.input_shape)
        assert not report.has_errors(), report.generate_report()
    assert model.signing_name == "batch" and model.protocol == "rest-json"


def test_the_signature_matches_the_published_get_vanilla_vector() -> None:
    # The Signature Version 4 test suite's "get-vanilla" request and its published signature
    headers = precompile_hook.sign(
        "GET",
        "https://example.amazonaws.com/",
        {},
        b"",
        ("AKIDEXAMPLE", SECRET, None),
        "us-east-1",
        "service",
        "20150830T123600Z",
    )
    assert headers["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    )


@pytest.mark.parametrize(
    ("region", "endpoint"),
    [
        ("us-east-1", "https://batch.us-east-1.amazonaws.com"),
        ("us-gov-west-1", "https://batch.us-gov-west-1.amazonaws.com"),
        ("cn-north-1", "https://batch.cn-north-1.amazonaws.com.cn"),
        ("cn-northwest-1", "https://batch.cn-northwest-1.amazonaws.com.cn"),
    ],
)
def test_the_endpoint_follows_the_partition_of_the_region(region: str, endpoint: str) -> None:
    environment = {k: v for k, v in _environment("").items() if "URL" not in k and "ORIGIN" not in k}
    config = precompile_hook.read_configuration({**environment, "AWS_REGION": region})
    assert isinstance(config, precompile_hook.Configuration) and config.endpoint == endpoint


def test_the_global_endpoint_variable_applies_when_batch_has_none_of_its_own() -> None:
    environment = {k: v for k, v in _environment("").items() if "URL" not in k and "ORIGIN" not in k}
    config = precompile_hook.read_configuration({**environment, "AWS_ENDPOINT_URL": "http://localhost:4566"})
    assert isinstance(config, precompile_hook.Configuration) and config.endpoint == "http://localhost:4566"
    both = {**environment, "AWS_ENDPOINT_URL": "http://localhost:4566", "AWS_ENDPOINT_URL_BATCH": "http://b:1"}
    config = precompile_hook.read_configuration(both)
    assert isinstance(config, precompile_hook.Configuration) and config.endpoint == "http://b:1"


def test_hook_details_given_back_with_whole_numbers_as_floats_are_read(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    batch.script = [described("RUNNING")]
    submitted = int(time.time()) - 60
    answer, _ = invoke(hook_event(jobId=JOB, submittedAt=float(submitted)), capsys)
    assert answer["hookDetails"] == {"jobId": JOB, "submittedAt": submitted}
    assert json.loads(batch.batch_calls()[0].body) == {"jobs": [JOB]}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PRECOMPILE_JOB_QUEUE", "precompile"),
        ("PRECOMPILE_JOB_DEFINITION", "arn:aws:batch:us-east-1:1:job-definition/llm"),
        ("PRECOMPILE_MODEL", ""),
        ("PRECOMPILE_CACHE", "line\nbreak"),
        ("PRECOMPILE_CALLBACK_DELAY_SECONDS", "0"),
        ("PRECOMPILE_JOB_TIMEOUT_SECONDS", "59"),
        ("PRECOMPILE_JOB_TIMEOUT_SECONDS", ""),
        ("AWS_REGION", "moon"),
        ("AWS_ENDPOINT_URL_BATCH", "ftp://127.0.0.1"),
        ("AWS_ACCESS_KEY_ID", ""),
        ("PRECOMPILE_RESPONSE_ORIGIN", "http://127.0.0.1/path"),
    ],
)
def test_a_malformed_configuration_fails_with_a_sentence_naming_the_setting(
    name: str, value: str, batch: StandIn, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    answer, log = invoke(hook_event(), capsys)
    assert answer == {"hookStatus": "FAILED"}
    assert "malformed configuration" in log["message"] and name in log["message"]
    assert not batch.seen


# The custom resource and the job state change


def cfn_event(batch: StandIn, kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "RequestType": kind,
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:precompile",
        "ResponseURL": f"{batch.url}/cloudformation-custom-resource-response?X-Amz-Signature=abc",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/Models/guid",
        "RequestId": "1f0e6a12-5d1c-4b4e-9d2a-0123456789ab",
        "ResourceType": "Custom::Precompile",
        "LogicalResourceId": "LlmPrecompile",
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:precompile"},
        **fields,
    }


def state_change(detail: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "0",
        "detail-type": "Batch Job State Change",
        "source": "aws.batch",
        "region": "us-east-1",
        "resources": [f"arn:aws:batch:us-east-1:123456789012:job/{JOB}"],
        "detail": detail,
    }


@pytest.mark.parametrize(("final", "status"), [("SUCCEEDED", "SUCCESS"), ("FAILED", "FAILED")])
def test_a_custom_resource_is_answered_when_its_job_ends(
    final: str, status: str, batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a Create request
    batch.script = [answer_json({"jobId": JOB, "jobName": "n"})]
    create = cfn_event(batch, "Create")
    answer, log = invoke(create, capsys)
    # THEN the job is submitted with the request's fields as its parameters, and CloudFormation is not answered yet
    (call,) = batch.batch_calls()
    submitted = json.loads(call.body)
    assert submitted["jobName"] == "precompile-Models-Llm-cfn-1f0e6a12"
    assert submitted["parameters"] == {f"Cfn{k}": create[k] for k in precompile_hook.CARRIED if k in create}
    assert (answer["decision"], log["decision"], log["jobId"]) == ("SUBMITTED", "SUBMITTED", JOB)
    assert not batch.responses()
    # WHEN Batch's state change event for the finished job arrives, its detail holding the submission's parameters
    detail = {"jobId": JOB, "jobQueue": QUEUE, "status": final, "parameters": submitted["parameters"]}
    if final == "FAILED":
        detail["statusReason"] = "Essential container in task exited"
    answer, log = invoke(state_change(detail), capsys)
    # THEN the answer is PUT to the ResponseURL, with the request's ids and the job id as the physical id
    (put,) = batch.responses()
    assert put.path == "/cloudformation-custom-resource-response?X-Amz-Signature=abc"
    assert put.headers.get("Content-Type") == ""
    body = json.loads(put.body)
    assert body["Status"] == status and body["PhysicalResourceId"] == JOB
    assert {k: body[k] for k in ("StackId", "RequestId", "LogicalResourceId")} == {
        k: create[k] for k in ("StackId", "RequestId", "LogicalResourceId")
    }
    if final == "FAILED":
        assert "Essential container in task exited" in body["Reason"] and MODEL in body["Reason"]
    assert (log["decision"], log["jobId"]) == (status, JOB)


def test_delete_is_answered_at_once_without_batch(batch: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    answer, log = invoke(cfn_event(batch, "Delete", PhysicalResourceId=JOB), capsys)
    assert not batch.batch_calls()
    (put,) = batch.responses()
    body = json.loads(put.body)
    assert (body["Status"], body["PhysicalResourceId"]) == ("SUCCESS", JOB)
    assert answer["decision"] == "SUCCESS" and "answered SUCCESS" in log["message"]


def test_a_submission_that_fails_answers_cloudformation_failed_at_once(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    batch.script = [answer_json({"__type": "ClientException", "message": "Job definition is inactive."}, 400)]
    answer, log = invoke(cfn_event(batch, "Create"), capsys)
    assert len(batch.batch_calls()) == 1, "a refusal is not retried"
    (put,) = batch.responses()
    body = json.loads(put.body)
    assert body["Status"] == "FAILED" and "Job definition is inactive." in body["Reason"]
    assert len(put.body) <= precompile_hook.RESPONSE_LIMIT
    assert answer["decision"] == "FAILED" and log["decision"] == "FAILED"


def test_a_throttled_custom_resource_submission_is_tried_again_within_the_invocation(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    batch.script = [answer_json({}, 429), answer_json({}, 429), answer_json({"jobId": JOB, "jobName": "n"})]
    answer, _ = invoke(cfn_event(batch, "Update", PhysicalResourceId="old"), capsys)
    assert answer == {"decision": "SUBMITTED", "jobId": JOB}
    assert len(batch.batch_calls()) == 3 and not batch.responses()


def test_a_long_reason_is_cut_to_the_response_limit(batch: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    parameters = {
        "CfnResponseURL": f"{batch.url}/r",
        "CfnStackId": "s",
        "CfnRequestId": "r",
        "CfnLogicalResourceId": "l",
    }
    detail = {"jobId": JOB, "status": "FAILED", "parameters": parameters, "statusReason": "x" * 300}
    detail["attempts"] = [{"container": {"reason": "y" * 5000}}]
    invoke(state_change(detail), capsys)
    (put,) = batch.responses()
    assert len(put.body) <= precompile_hook.RESPONSE_LIMIT and json.loads(put.body)["Status"] == "FAILED"


@pytest.mark.parametrize(
    "url",
    [
        "http://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/r",
        "https://attacker.example.com/r",
        "https://s3.amazonaws.com.attacker.example/r",
        "https://user@cloudformation-custom-resource-response-useast1.s3.amazonaws.com/r",
        "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com:8443/r",
        "https://amazonaws.com/r",
        "https://abc123.execute-api.us-east-1.amazonaws.com/prod/r",
        "https://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
        "http://127.0.0.2:1/r",
    ],
)
def test_a_response_url_that_is_not_https_on_an_s3_host_is_refused(
    url: str, batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a request whose ResponseURL is not CloudFormation's bucket
    answer, log = invoke(cfn_event(batch, "Delete", ResponseURL=url), capsys)
    # THEN nothing is sent anywhere, and the line says why
    assert answer["decision"] == "REFUSED" and "no answer is sent" in log["message"]
    parameters = {"CfnResponseURL": url, "CfnStackId": "s", "CfnRequestId": "r", "CfnLogicalResourceId": "l"}
    answer, _ = invoke(state_change({"jobId": JOB, "status": "SUCCEEDED", "parameters": parameters}), capsys)
    assert answer["decision"] == "REFUSED"
    assert not batch.seen


def test_an_s3_response_url_of_the_partition_is_accepted() -> None:
    environment = {k: v for k, v in _environment("http://127.0.0.1:1").items() if "ORIGIN" not in k}
    config = precompile_hook.read_configuration(environment)
    assert isinstance(config, precompile_hook.Configuration)
    url = "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/arn%3A/x?X-Amz-Signature=a"
    assert precompile_hook.response_url_problem(url, config) == ""
    regional = "https://cloudformation-custom-resource-response-uswest2.s3-us-west-2.amazonaws.com/x?a=b"
    assert precompile_hook.response_url_problem(regional, config) == ""
    china = config._replace(dns_suffix="amazonaws.com.cn")
    assert precompile_hook.response_url_problem(url.replace(".com/", ".com.cn/"), china) == ""
    assert "not an amazonaws.com.cn host" in precompile_hook.response_url_problem(url, china)


@pytest.mark.parametrize(
    "detail",
    [
        {"jobId": JOB, "jobQueue": QUEUE, "status": "RUNNING", "parameters": {"CfnResponseURL": "x"}},
        {"jobId": JOB, "jobQueue": QUEUE, "status": "SUCCEEDED", "parameters": {}},
        {"jobId": JOB, "jobQueue": QUEUE + "-other", "status": "SUCCEEDED", "parameters": {"CfnResponseURL": "x"}},
    ],
)
def test_state_changes_with_nothing_to_answer_are_ignored(
    detail: dict[str, Any], batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    answer, log = invoke(state_change(detail), capsys)
    assert answer["decision"] == "IGNORED" and log["jobId"] == JOB
    assert not batch.seen


# Never a traceback

_HERE = "response-url-of-the-stand-in"
"""Replaced, in a drawn event, by a URL on the stand-in, so that answers to CloudFormation are sent too."""
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30))
_KEYS = st.sampled_from(
    [
        "RequestType",
        "ResponseURL",
        "StackId",
        "RequestId",
        "LogicalResourceId",
        "PhysicalResourceId",
        "detail-type",
        "source",
        "detail",
        "jobId",
        "status",
        "jobQueue",
        "parameters",
        "statusReason",
        "attempts",
        "container",
        "exitCode",
        "reason",
        "serviceArn",
        "targetServiceRevisionArn",
        "hookDetails",
        "submittedAt",
        "transientFailures",
        "CfnResponseURL",
        "jobs",
        "__type",
        "message",
    ]
)
_VALUES = st.recursive(
    st.one_of(
        _SCALARS,
        st.sampled_from(["Create", "Update", "Delete", "aws.batch", "Batch Job State Change", JOB, QUEUE]),
        st.sampled_from(["SUCCEEDED", "FAILED", "RUNNING", "https://x.s3.amazonaws.com/r", "http://127.0.0.1:1/r"]),
        st.just(_HERE),
    ),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_KEYS, children, max_size=5),
    max_leaves=20,
)


def _or_any(value: Any) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(value), _VALUES)


_CUSTOM_RESOURCE = st.fixed_dictionaries(
    {"RequestType": st.sampled_from(["Create", "Update", "Delete"]) | _VALUES, "ResponseURL": _or_any(_HERE)},
    optional={name: _VALUES for name in ("StackId", "RequestId", "LogicalResourceId", "PhysicalResourceId")},
)
_PARAMETERS = st.fixed_dictionaries(
    {"CfnResponseURL": _or_any(_HERE)}, optional={f"Cfn{name}": _VALUES for name in precompile_hook.CARRIED[1:]}
)
_JOB_EVENT = st.fixed_dictionaries(
    {
        "detail-type": st.just("Batch Job State Change"),
        "source": st.just("aws.batch"),
        "detail": st.fixed_dictionaries(
            {"status": st.sampled_from(["SUCCEEDED", "FAILED"]) | _VALUES},
            optional={
                "jobId": _or_any(JOB),
                "jobQueue": _or_any(QUEUE),
                "parameters": _PARAMETERS | _VALUES,
                "statusReason": _VALUES,
                "attempts": _VALUES,
            },
        )
        | _VALUES,
    }
)
_HOOK_EVENT = st.fixed_dictionaries(
    {"targetServiceRevisionArn": _or_any(REVISION)},
    optional={
        "hookDetails": st.fixed_dictionaries(
            {}, optional={"jobId": _or_any(JOB), "submittedAt": _VALUES, "transientFailures": _VALUES}
        )
        | _VALUES
    },
)
_BATCH_ANSWERS = st.one_of(
    st.binary(max_size=64),
    _VALUES.map(lambda v: json.dumps(v).encode()),
    st.builds(
        lambda status, extra: json.dumps({"jobId": JOB, "jobs": [{"jobId": JOB, "status": status, **extra}]}).encode(),
        st.sampled_from([*precompile_hook.RUNNING, "SUCCEEDED", "FAILED"]) | _VALUES,
        st.dictionaries(_KEYS, _VALUES, max_size=3),
    ),
)


@settings(
    max_examples=examples(150, loop=50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    event=st.one_of(_VALUES, st.dictionaries(_KEYS, _VALUES, max_size=8), _CUSTOM_RESOURCE, _JOB_EVENT, _HOOK_EVENT),
    status=st.sampled_from([200, 400, 429, 500]),
    body=_BATCH_ANSWERS,
)
def test_no_event_and_no_answer_of_batch_makes_the_handler_raise(
    event: Any, status: int, body: bytes, batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    batch.script = [(status, {}, body)] * 4
    here = f"{batch.url}/cloudformation-custom-resource-response"
    event = json.loads(json.dumps(event).replace(json.dumps(_HERE), json.dumps(here)))
    answer = precompile_hook.handler(event, None)
    batch.script.clear()
    assert capsys.readouterr().out.count("\n") == 1
    assert answer.get("hookStatus") in (None, "SUCCEEDED", "FAILED", "IN_PROGRESS")
    if answer.get("hookStatus") == "IN_PROGRESS":
        assert 1 <= answer["callBackDelay"] <= precompile_hook.MAX_CALLBACK_DELAY
        assert len(json.dumps(answer["hookDetails"]).encode()) <= precompile_hook.HOOK_DETAILS_LIMIT


# As carried


def test_the_carried_source_fits_its_budget_and_answers_as_lambda_loads_it(
    batch: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    source = program_source("neuron_constructs.programs", "precompile_hook.py")
    assert len(source) <= SOURCE_BUDGET, len(source)
    namespace: dict[str, Any] = {"__name__": "index"}
    exec(compile(source, "index.py", "exec"), namespace)  # what Lambda loads as index.handler
    batch.script = [described("SUCCEEDED")]
    assert namespace["handler"](hook_event(**running_details()), None) == {"hookStatus": "SUCCEEDED"}
    assert json.loads(capsys.readouterr().out)["decision"] == "SUCCEEDED"
