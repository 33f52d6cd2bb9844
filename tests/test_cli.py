"""``neuron-ecs`` end to end, in process: moto for multi-call flows, Stubber where moto cannot say it.

moto does not model Neuron devices; ``moto_fleet.build_fleet`` writes ``NEURON_DEVICES`` and
``neuronDeviceIds`` into its backend objects directly.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from conftest import MEASURED_IN_CI
from local_server import Answer, LocalServer
from moto_fleet import TaskSpec, build_fleet
from ports import unused_port

from neuron_constructs.knowledge import ami as ami_module
from neuron_constructs.knowledge.ami import (
    NEURON_AMI_IMAGE_ID_PARAMETER,
    NEURON_AMI_PARAMETER_PATH,
    AmiNotPublishedError,
    resolve_neuron_ami,
)
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.tools import inspection
from neuron_constructs.tools.cli import EXIT_AWS_ERROR, EXIT_CONFLICT, EXIT_OK, EXIT_USAGE, main

pytestmark = pytest.mark.xdist_group("moto")  # one worker loads moto

REGION = "us-east-1"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*argv: str, stdout: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = stdout or io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


# --- catalog ---------------------------------------------------------------------------------------


def test_catalog_lists_every_type_plain_when_piped() -> None:
    status, out, _ = run("catalog")
    assert status == EXIT_OK
    assert "\033[" not in out
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["type", "vCPUs", "memory", "GiB"]
    assert [line.split()[0] for line in lines[1:]] == [e.name for e in NeuronInstanceType.all()]


def test_catalog_on_a_terminal_has_a_bold_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    _, out, _ = run("catalog", stdout=Terminal())
    assert out.startswith("\033[1mtype")
    monkeypatch.setenv("NO_COLOR", "1")
    _, plain, _ = run("catalog", stdout=Terminal())
    assert "\033[" not in plain


def test_catalog_json_is_every_entry() -> None:
    status, out, _ = run("catalog", "--json")
    entries = json.loads(out)
    assert status == EXIT_OK
    assert [e["name"] for e in entries] == [e.name for e in NeuronInstanceType.all()]
    trn1 = next(e for e in entries if e["name"] == "trn1.32xlarge")
    assert trn1["chips"] == 16 and trn1["device_paths"][-1] == "/dev/neuron15" and trn1["topology"] == "2d-torus"


def test_catalog_starts_neither_the_cdk_nor_boto3() -> None:
    code = (
        "import sys; from neuron_constructs.tools.cli import main; main(['catalog']);"
        "loaded = [m for m in ('aws_cdk', 'jsii', 'boto3', 'botocore') if m in sys.modules];"
        "assert not loaded, loaded"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "Node" not in result.stderr


def test_plan_rollout_starts_neither_the_cdk_nor_boto3_and_answers_for_a_template_without_neuron(
    tmp_path: Path,
) -> None:
    """``plan --rollout`` reads templates as ``plan`` does, in plain Python: exit 0 and a sentence where no Neuron
    capacity is; the help names the option and the exit status it adds."""
    template = tmp_path / "app.template.json"
    template.write_text(json.dumps({"Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}}}))
    code = (
        "import sys; from neuron_constructs.tools.cli import main;"
        f"assert main(['plan', '--rollout', {str(template)!r}]) == 0;"
        "loaded = [m for m in ('aws_cdk', 'jsii', 'boto3', 'botocore') if m in sys.modules];"
        "assert not loaded, loaded"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "No Neuron capacity in these templates, so no rollout to plan.\n"
    status, out, _ = run("plan", "--help")
    assert status == EXIT_OK and "--rollout" in out
    _, out, _ = run("--help")
    assert "a rollout whose peak does not fit or that ECS refuses (plan --rollout)" in " ".join(out.split())


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "neuron-ecs"
    result = subprocess.run([str(script), "catalog"], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and "trn2.48xlarge" in result.stdout


@pytest.mark.parametrize("argv", [[], ["inspect"], ["bogus"], ["catalog", "--cluster", "x"]])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    assert main(argv, stdout=io.StringIO(), stderr=io.StringIO()) == EXIT_USAGE


# --- ami -------------------------------------------------------------------------------------------


def _ssm_stub(parameters: dict[str, str], invalid: list[str] | None = None) -> Any:
    session = boto3.Session(aws_access_key_id="stub", aws_secret_access_key="stub", region_name=REGION)
    client = session.client("ssm")
    stubber = Stubber(client)
    response: dict[str, Any] = {
        "Parameters": [{"Name": k, "Type": "String", "Value": v} for k, v in parameters.items()]
    }
    if invalid:
        response["InvalidParameters"] = invalid
    stubber.add_response(
        "get_parameters",
        response,
        {"Names": [NEURON_AMI_PARAMETER_PATH, NEURON_AMI_IMAGE_ID_PARAMETER]},
    )
    stubber.activate()
    return client


def test_ami_json_value_is_parsed_in_one_call() -> None:
    value = {
        "image_id": "ami-0123456789abcdef0",
        "image_name": "al2023-ami-ecs-neuron-hvm-2023.0.20261101-kernel-6.1-x86_64",
        "ecs_agent_version": "1.110.0",
        "os": "Amazon Linux 2023",
    }
    client = _ssm_stub({NEURON_AMI_PARAMETER_PATH: json.dumps(value), NEURON_AMI_IMAGE_ID_PARAMETER: value["image_id"]})
    ami = resolve_neuron_ami(client, REGION)
    assert ami.image_id == "ami-0123456789abcdef0"
    assert ami.details["ecs_agent_version"] == "1.110.0"
    assert ami.parse_error is None


def test_ami_without_json_value_falls_back_to_image_id() -> None:
    client = _ssm_stub({NEURON_AMI_PARAMETER_PATH: "{'image_id': 'ami-1'}", NEURON_AMI_IMAGE_ID_PARAMETER: "ami-1"})
    ami = resolve_neuron_ami(client, REGION)
    assert ami.image_id == "ami-1" and ami.details == {}
    assert ami.parse_error is not None and "is not JSON" in ami.parse_error


def test_region_without_the_parameters_raises_a_sentence() -> None:
    client = _ssm_stub({}, invalid=[NEURON_AMI_PARAMETER_PATH, NEURON_AMI_IMAGE_ID_PARAMETER])
    with pytest.raises(AmiNotPublishedError, match=r"^Region us-east-1 does not publish .* pass --region"):
        resolve_neuron_ami(client, REGION)


def test_ami_on_the_local_endpoint_value_says_what_could_not_be_parsed(aws: boto3.Session) -> None:
    image_id = aws.client("ssm").get_parameter(Name=NEURON_AMI_IMAGE_ID_PARAMETER)["Parameter"]["Value"]
    status, out, err = run("ami")
    assert status == EXIT_OK and not err
    assert f"image id   {image_id}" in out
    assert f"note: the value of {NEURON_AMI_PARAMETER_PATH} is not JSON" in out
    status, out, _ = run("ami", "--json")
    document = json.loads(out)
    assert document["image_id"] == image_id and "is not JSON" in document["parse_error"]


def test_ami_cli_names_a_region_without_the_parameter(aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    def unpublished(ssm: Any, region: str) -> Any:
        raise AmiNotPublishedError(region)

    monkeypatch.setattr(ami_module, "resolve_neuron_ami", unpublished)
    status, out, err = run("ami", "--region", "eu-south-2")
    assert status == EXIT_AWS_ERROR and not out
    assert err.startswith("neuron-ecs ami: Region eu-south-2 does not publish /aws/service/ecs/optimized-ami/")


# --- inspect ---------------------------------------------------------------------------------------


def test_inspect_clean_cluster_exits_0(aws: boto3.Session) -> None:
    fleet = build_fleet(
        aws,
        cluster="neuron",
        instance_types=["inf2.24xlarge", "trn1.32xlarge"],
        tasks=[
            *(TaskSpec(f"slice{i}", on_instances=[0], mapped_devices=[2 * i, 2 * i + 1]) for i in range(3)),
            TaskSpec("training", on_instances=[1], managed_device_ids=[list(range(16))]),
        ],
    )
    status, out, err = run("inspect", "--cluster", "neuron")
    assert (status, err) == (EXIT_OK, "")
    assert "Cluster neuron: 2 container instances, 4 tasks" in out
    for instance_id in fleet.ec2_instance_ids:
        assert instance_id in out
    assert "neuronDeviceIds 0-15" in out
    assert "/dev/neuron 4-5 (mapped)" in out
    assert out.rstrip().endswith("No findings: no NeuronCore is held twice, every task's devices exist, nothing idle.")


def test_inspect_conflict_exits_3_and_json_names_it(aws: boto3.Session) -> None:
    build_fleet(
        aws,
        cluster="neuron",
        instance_types=["inf2.48xlarge"],
        tasks=[
            TaskSpec("model-a", on_instances=[0], mapped_devices=[0, 1]),
            TaskSpec("model-a-copy", on_instances=[0], mapped_devices=[0, 1]),
        ],
    )
    status, out, _ = run("inspect", "--cluster", "neuron")
    assert status == EXIT_CONFLICT
    assert "conflict: " in out and "/dev/neuron0 (NeuronCores 0-1) is held by 2 tasks" in out
    assert "    !  /dev/neuron0 (cores 0-1) held by A and B" in out
    status, out, _ = run("inspect", "--cluster", "neuron", "--json")
    document = json.loads(out)
    assert status == EXIT_CONFLICT
    assert set(document) == {"container_instances", "tasks", "findings"}
    assert [f["kind"] for f in document["findings"]] == ["conflict", "conflict", "idle"]
    (instance,) = document["container_instances"]
    assert set(instance) == {"arn", "ec2_instance_id", "instance_type", "neuron_devices", "neuron_cores"}
    assert instance["neuron_cores"] == {
        "logical_nc_config": 1,
        "per_device": 2,
        "count": 24,
        "idle": list(range(4, 24)),
    }
    assert all(t["neuron_cores"] == [0, 1, 2, 3] for t in document["tasks"])
    assert instance["neuron_devices"]["registered"] == [str(i) for i in range(12)]
    assert {c["name"] for t in document["tasks"] for c in t["containers"]} == {"model"}
    assert all(t["containers"][0]["device_paths"] == ["/dev/neuron0", "/dev/neuron1"] for t in document["tasks"])


def test_inspect_two_tasks_on_disjoint_cores_of_one_chip_share_it(aws: boto3.Session) -> None:
    build_fleet(
        aws,
        cluster="neuron",
        instance_types=["inf2.xlarge"],
        tasks=[
            TaskSpec("embedding-0", on_instances=[0], mapped_devices=[0], visible_cores="0"),
            TaskSpec("embedding-1", on_instances=[0], mapped_devices=[0], visible_cores="1"),
        ],
    )
    status, out, err = run("inspect", "--cluster", "neuron")
    assert (status, err) == (EXIT_OK, "")
    assert "(inf2.xlarge): 1 chip, 2 cores\n  chip  0\n  core  0\n        AB\n" in out
    assert out.rstrip().endswith("No findings: no NeuronCore is held twice, every task's devices exist, nothing idle.")
    status, out, _ = run("inspect", "--cluster", "neuron", "--json")
    document = json.loads(out)
    assert [c["visible_cores"] for t in document["tasks"] for c in t["containers"]] == ["0", "1"]
    assert [t["neuron_cores"] for t in document["tasks"]] == [[0], [1]]


def test_inspect_two_tasks_on_one_core_conflict(aws: boto3.Session) -> None:
    build_fleet(
        aws,
        cluster="neuron",
        instance_types=["inf2.xlarge"],
        tasks=[
            TaskSpec("embedding-0", on_instances=[0], mapped_devices=[0], visible_cores="1"),
            TaskSpec("embedding-1", on_instances=[0], mapped_devices=[0], visible_cores="1"),
        ],
    )
    status, out, _ = run("inspect", "--cluster", "neuron")
    assert status == EXIT_CONFLICT
    assert "(inf2.xlarge): NeuronCore 1 of /dev/neuron0 is held by 2 tasks" in out
    assert "        .!\n" in out and "    !  core 1 of /dev/neuron0 held by A and B" in out
    assert "idle: " in out and "1 NeuronCore idle on devices in use: 0 of /dev/neuron0" in out


def test_inspect_unknown_cluster_is_a_sentence(aws: boto3.Session) -> None:
    status, out, err = run("inspect", "--cluster", "nope")
    assert status == EXIT_AWS_ERROR and not out
    assert err == (
        "neuron-ecs inspect: Cluster 'nope' was not found in us-east-1: check the name and region "
        "(aws ecs list-clusters --region us-east-1).\n"
    )


def test_no_credentials_is_a_sentence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    status, _, err = run("inspect", "--cluster", "neuron", "--region", REGION)
    assert status == EXIT_AWS_ERROR
    assert err.startswith("neuron-ecs inspect: No AWS credentials were found: set AWS_PROFILE")


def test_access_denied_names_the_permissions(monkeypatch: pytest.MonkeyPatch) -> None:
    session = boto3.Session(aws_access_key_id="stub", aws_secret_access_key="stub", region_name=REGION)
    client = inspection.ecs_client(session=session, region=REGION)
    stubber = Stubber(client)
    stubber.add_client_error(
        "list_container_instances",
        service_error_code="AccessDeniedException",
        service_message="User: arn:aws:iam::123456789012:user/dev is not authorized to perform: "
        "ecs:ListContainerInstances",
        http_status_code=400,
    )
    stubber.activate()
    monkeypatch.setattr(inspection, "ecs_client", lambda **_: client)
    status, _, err = run("inspect", "--cluster", "neuron", "--region", REGION)
    assert status == EXIT_AWS_ERROR
    assert err.startswith(
        "neuron-ecs inspect: Access denied for ListContainerInstances in us-east-1: neuron-ecs inspect needs "
        "ecs:ListContainerInstances, ecs:DescribeContainerInstances, ecs:ListTasks"
    )
    assert "Traceback" not in err


# --- the CLI never breaks ----------------------------------------------------------------------------


class _Server(LocalServer):
    """A local HTTP endpoint that answers every request with ``body`` (200), or not until it is closed (``hang``)."""

    def __init__(self, *, body: bytes = b"", hang: bool = False) -> None:
        self.release = threading.Event()
        self.requested = threading.Event()

        def answer(path: str, headers: Mapping[str, str], request: bytes) -> Answer:
            self.requested.set()
            if hang:
                self.release.wait(60)
            return 200, "text/html", body

        super().__init__(answer)

    def close(self) -> None:
        self.release.set()
        super().close()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["inspect", "--cluster", "c", "--endpoint-url", "not a url"], "'not a url' is not an http(s) URL"),
        (["inspect", "--cluster", "c", "--endpoint-url", "http://[::1"], "is not an http(s) URL"),
        (["ami", "--endpoint-url", "ftp://127.0.0.1:21"], "is not an http(s) URL"),
        (["inspect", "--cluster", "c", "--region", "us east 1"], "'us east 1' is not an AWS region name"),
        # What botocore refuses only at the first call, with a traceback before: each a usage error now.
        *(
            (["inspect", "--cluster", "c", "--endpoint-url", url], "is not a host name or address an AWS SDK accepts")
            for url in ("http://a b:5000", "http://my_host:5000", "http://hôst:5000", "http://%41:5000", "http://-host")
        ),
        *(
            (["inspect", "--cluster", "c", "--endpoint-url", url], "is not an http(s) URL")
            for url in ("", "http://", "https://:80", "http://127.0.0.1:99999", "127.0.0.1:5000", "javascript:x")
        ),
        (["ami", "--endpoint-url", "http://host:port"], "is not an http(s) URL"),
    ],
)
def test_malformed_endpoint_or_region_is_a_usage_error(argv: list[str], message: str) -> None:
    """Exit 2 with a sentence, before any call: no traceback, and no time spent on a network."""
    import time

    started = time.monotonic()
    status, _, err = run(*argv)
    assert status == EXIT_USAGE and message in err and "Traceback" not in err
    assert time.monotonic() - started < 2


def test_a_200_that_is_not_the_ecs_api_is_a_sentence(fake_aws_credentials: None) -> None:
    server = _Server(body=b"<html>captive portal</html>")
    try:
        status, out, err = run("inspect", "--cluster", "c", "--region", REGION, "--endpoint-url", server.url)
    finally:
        server.close()
    assert status == EXIT_AWS_ERROR and not out
    assert err == (
        "neuron-ecs inspect: The endpoint answered, but ListContainerInstances returned a response that is not the "
        "ECS API's: no containerInstanceArns list in it: check --endpoint-url and any proxy in between.\n"
    )


def test_ami_against_an_endpoint_that_answers_html_says_it_is_not_ssm(fake_aws_credentials: None) -> None:
    """Once this said the region publishes no AMI."""
    import time

    server = _Server(body=b"<html>captive portal</html>")
    started = time.monotonic()
    try:
        status, out, err = run("ami", "--region", REGION, "--endpoint-url", server.url)
    finally:
        server.close()
    assert time.monotonic() - started < 10
    assert status == EXIT_AWS_ERROR and not out
    assert err == (
        "neuron-ecs ami: The endpoint answered, but GetParameters returned a response that is not the SSM API's: no "
        "Parameters list in it: check --endpoint-url and any proxy in between.\n"
    )


@MEASURED_IN_CI
def test_a_hung_endpoint_is_given_up_on_with_a_sentence(
    fake_aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    monkeypatch.setattr(inspection, "READ_TIMEOUT_S", 0.2)
    monkeypatch.setattr(inspection, "MAX_ATTEMPTS", 2)
    server = _Server(hang=True)
    started = time.monotonic()
    try:
        status, _, err = run("inspect", "--cluster", "c", "--region", REGION, "--endpoint-url", server.url)
    finally:
        server.close()
    assert status == EXIT_AWS_ERROR
    assert err.startswith(f"neuron-ecs inspect: {server.url}/ did not answer within 0.2 s, 2 times")
    assert time.monotonic() - started < 10


def test_ctrl_c_exits_130_without_a_traceback(fake_aws_credentials: None) -> None:
    import os
    import signal
    import time

    server = _Server(hang=True)
    script = Path(sys.executable).parent / "neuron-ecs"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    try:
        process = subprocess.Popen(
            [str(script), "inspect", "--cluster", "c", "--region", REGION, "--endpoint-url", server.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            # As in a terminal: a shell without job control starts background jobs with SIGINT ignored, and
            # Python then installs no KeyboardInterrupt handler.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        assert server.requested.wait(20)  # started, and waiting for the endpoint
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        server.close()
    assert process.returncode == 130
    assert "Traceback" not in err and "interrupted" in err


def test_a_closed_pipe_keeps_the_exit_status(tmp_path: Path) -> None:
    from cfn import ecs_template, manual_task, with_resources

    broken = {f"Task{i}": manual_task("inf2.2xlarge") for i in range(400)}  # an error each, 100 KiB of output
    path = tmp_path / "many.json"
    path.write_text(json.dumps(with_resources(ecs_template(), **broken)))
    script = Path(sys.executable).parent / "neuron-ecs"
    result = subprocess.run(
        ["bash", "-c", f'"{script}" lint "{path}" | head -c 20; echo "status=${{PIPESTATUS[0]}}"'],
        capture_output=True,
        text=True,
    )
    assert result.stdout.endswith("status=3\n"), result.stdout
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_a_long_inspection_shows_progress_on_stderr(aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_constructs.tools.commands import inspect as inspect_command

    build_fleet(aws, cluster="neuron", instance_types=["inf2.xlarge"] * 3, tasks=[])
    monkeypatch.setattr(inspect_command, "_PROGRESS_AFTER_S", 0.0)
    status, out, err = run("inspect", "--cluster", "neuron")
    assert status == EXIT_OK and "Cluster neuron: 3 container instances" in out
    assert err.startswith("neuron-ecs inspect: listed 3 containerInstanceArns\n")


# --- the local endpoint is reached directly, whatever proxy the environment names -----------------------------


_CALLER_IDENTITY = (
    b'<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>'
    b"<Arn>arn:aws:iam::123456789012:user/local</Arn><UserId>AIDLOCAL</UserId><Account>123456789012</Account>"
    b"</GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>"
    b"</GetCallerIdentityResponse>"
)


@pytest.fixture
def loopback_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 answering the readiness probe and STS GetCallerIdentity, recording each request path;
    and every proxy variable pointing at a port where nothing listens."""
    import http.server
    import threading

    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, body: bytes) -> None:
            asked.append(f"{self.command} {self.path}")
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self.answer(b"{}")

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.answer(_CALLER_IDENTITY)

        def log_message(self, *args: Any) -> None:
            pass

    nowhere = f"http://127.0.0.1:{unused_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, nowhere)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}", asked
    httpd.shutdown()
    httpd.server_close()


def test_the_readiness_probe_reaches_the_local_endpoint_past_any_proxy(
    loopback_endpoint: tuple[str, list[str]],
) -> None:
    import urllib.error
    import urllib.request

    from neuron_constructs.local_endpoint.start_or_attach import _wait_until_ready

    url, asked = loopback_endpoint
    with pytest.raises(urllib.error.URLError):  # a plain urlopen goes to the proxy, where nothing listens
        urllib.request.urlopen(f"{url}/moto-api/", timeout=2)

    class Running:
        def poll(self) -> None:
            return None

    assert _wait_until_ready(Running(), url) is True  # type: ignore[arg-type]
    assert asked == ["GET /moto-api/"]


def test_the_local_endpoint_s_boto3_clients_reach_it_past_any_proxy(loopback_endpoint: tuple[str, list[str]]) -> None:
    from urllib.parse import urlsplit

    from neuron_constructs.local_endpoint import LocalAwsEndpoint

    url, asked = loopback_endpoint
    endpoint = LocalAwsEndpoint(port=int(urlsplit(url).port or 0))
    assert endpoint.client("sts").get_caller_identity()["Account"] == "123456789012"
    assert asked == ["POST /"]


# --- untrusted text and the ami deadline -----------------------------------------------------------------------------

_HOSTILE = "\x1b]0;owned\x07\x1b[2J\r\u202e"
"""A window title, a cleared screen, a carriage return and a right-to-left override."""


def test_ami_prints_what_the_parameter_holds_with_every_control_character_escaped(fake_aws_credentials: None) -> None:
    """GIVEN an endpoint whose AMI parameter holds terminal escape sequences in its values and keys WHEN ami prints
    them THEN no control character reaches the terminal: each is printed as its escape."""
    value = {"image_id": f"ami-1{_HOSTILE}", "os": f"AL2023{_HOSTILE}", f"k{_HOSTILE}": "v"}
    body = json.dumps(
        {
            "Parameters": [
                {"Name": NEURON_AMI_PARAMETER_PATH, "Type": "String", "Value": json.dumps(value)},
                {"Name": NEURON_AMI_IMAGE_ID_PARAMETER, "Type": "String", "Value": f"ami-1{_HOSTILE}"},
            ],
            "InvalidParameters": [],
        }
    ).encode()
    server = _Server(body=body)
    try:
        status, out, err = run("ami", "--region", REGION, "--endpoint-url", server.url)
    finally:
        server.close()
    assert (status, err) == (EXIT_OK, "")
    assert not any(c in out for c in "\x1b\x07\r\u202e")
    assert "image id   ami-1\\x1b]0;owned\\x07\\x1b[2J\\r\\u202e" in out
    assert "AL2023\\x1b]0;owned" in out and "k\\x1b]0;owned" in out


def test_lint_prints_a_template_s_names_with_every_control_character_escaped(tmp_path: Path) -> None:
    """GIVEN a template whose container name and file name hold escape sequences and a newline that would forge a
    finding WHEN linted, as text, parseable or JSON THEN no control character reaches the terminal."""
    name = f"x{_HOSTILE}\nE0000 forged"
    template = {
        "Resources": {
            "Task": {
                "Type": "AWS::ECS::TaskDefinition",
                "Properties": {
                    "ContainerDefinitions": [{"Name": name, "Image": "busybox", "Privileged": True}],
                },
            }
        }
    }
    path = tmp_path / "t\x1b[2J.json"
    path.write_text(json.dumps(template))
    for form in (["--format", "text"], ["--format", "parseable"], ["--json"]):
        status, out, err = run("lint", str(path), *form)
        assert status == EXIT_OK, err
        assert "NEURON115" in out or "W9215" in out
        assert not any(c in out + err for c in "\x1b\x07\r\u202e"), form
        assert "\nE0000 forged" not in out
    status, out, _ = run("lint", str(path), "--format", "text")
    assert "container x\\x1b]0;owned\\x07\\x1b[2J\\r\\u202e\\nE0000 forged" in out and "t\\x1b[2J.json" in out


def test_an_unreadable_template_s_name_is_printed_escaped(tmp_path: Path) -> None:
    path = tmp_path / "bad\x1b]0;x\x07.json"
    path.write_text("{")
    status, _, err = run("lint", str(path))
    assert status == EXIT_USAGE and "bad\\x1b]0;x\\x07.json" in err and "\x1b" not in err


def _dripping_ssm(connection: Any) -> None:
    """Reads a request, then answers a byte every 50 ms (well within any per-read timeout) for at most 3 s."""
    import time

    connection.recv(65536)
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    for _ in range(60):
        connection.sendall(b"X")
        time.sleep(0.05)


@MEASURED_IN_CI
def test_ami_against_a_dripping_endpoint_ends_at_its_deadline_with_a_sentence(fake_aws_credentials: None) -> None:
    """GIVEN an endpoint that sends a byte every 50 ms and never finishes WHEN ami runs with a deadline of 0.5 s
    THEN it exits 1 within about that time with one sentence naming the endpoint and the deadline."""
    import contextlib
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection, contextlib.suppress(OSError):
                _dripping_ssm(connection)

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        started = time.monotonic()
        status, out, err = run("ami", "--region", REGION, "--endpoint-url", url, "--deadline", "0.5")
        took = time.monotonic() - started
    finally:
        listener.close()
    assert (status, out) == (EXIT_AWS_ERROR, "")
    assert err == (
        f"neuron-ecs ami: {url} did not finish answering within the 0.5 s the command may take: check the network, "
        "the region or --endpoint-url\n"
    )
    assert 0.4 < took < 2


@pytest.mark.parametrize("deadline", ["0", "-1", "nan", "soon"])
def test_an_ami_deadline_that_is_not_a_number_of_seconds_is_a_usage_error(deadline: str) -> None:
    status, _, err = run("ami", "--deadline", deadline)
    assert status == EXIT_USAGE and "is not a number of seconds" in err


def test_no_control_character_reaches_the_terminal_but_the_command_line_s_own_colours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GIVEN any command's output on a terminal, with a value holding escape sequences no command escaped itself
    WHEN it is written THEN only the bold and colours the command line adds are sent raw; piped, none is."""
    import re

    from neuron_constructs.tools.commands.output import _Output

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    for stream, bold in ((Terminal(), "\x1b[1mCluster\x1b[0m"), (io.StringIO(), "Cluster")):
        out = _Output(stream)
        out.line(f"{out.style('Cluster', '1')} {_HOSTILE}\x1b[31m x\tz")
        out.table(("name",), [(f"a{_HOSTILE}",)])
        shown = stream.getvalue()
        assert shown.startswith(f"{bold} \\x1b]0;owned\\x07\\x1b[2J\\r\\u202e")
        assert "a\\x1b]0;owned\\x07" in shown
        # on a terminal, colour and bold sequences only (the command's, or one a value forged where no command
        # escaped it, which can colour text and no more); piped, nothing
        raw = re.sub(r"\x1b\[[0-9;]*m", "", shown) if stream.isatty() else shown
        assert "\x1b" not in raw
        assert "\r" not in shown and "\x07" not in shown and "\u202e" not in shown
