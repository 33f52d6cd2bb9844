"""``--attach URL``: a second app deployed to the local endpoint a ``--serve`` run keeps, and only to 127.0.0.1.

The deploying half runs in ``tests/test_deploy_consumer_app.py`` (e2e); these are the refusals, which need no
endpoint and no cdk CLI.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ports import unused_port

from neuron_constructs.local_endpoint import LocalEndpointError, attached_endpoint
from neuron_constructs.local_endpoint.deploy import main
from neuron_constructs.local_endpoint.start_or_attach import parse_local_url


@pytest.mark.parametrize(
    ("url", "port"), [("http://127.0.0.1:4566", 4566), ("http://localhost:5000/", 5000), (" http://127.0.0.1:1 ", 1)]
)
def test_a_loopback_url_gives_its_port(url: str, port: int) -> None:
    assert parse_local_url(url) == port


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1:4566",  # moto serves plain HTTP; HTTPS is some other server
        "http://10.0.0.1:4566",
        "http://169.254.169.254:80",
        "http://ecs.us-east-1.amazonaws.com:443",
        "http://127.0.0.1",  # no port
        "http://user:secret@127.0.0.1:4566",
        "http://127.0.0.1:4566/moto-api/",
        "http://127.0.0.1:99999",
        "127.0.0.1:4566",
        "http://127.0.0.1:4566" + "0" * 200,
    ],
)
def test_anything_but_a_loopback_endpoint_url_is_refused_with_a_sentence(url: str) -> None:
    with pytest.raises(LocalEndpointError) as raised:
        parse_local_url(url)
    message = str(raised.value)
    assert message.startswith("--attach ") and "is not a local endpoint's URL" in message
    assert message.endswith("printed.") and len(message) < 400


@given(st.text(max_size=300))
def test_any_text_is_a_port_on_this_host_or_a_refusal(url: str) -> None:
    try:
        port = parse_local_url(url)
    except LocalEndpointError:
        return
    assert 0 <= port <= 65535
    assert url.strip().lower().startswith(("http://127.0.0.1:", "http://localhost:"))


def test_attaching_where_no_endpoint_answers_says_how_to_start_one() -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    refusal = rf"^no local endpoint answers at {url}: start one with .*--serve"
    with pytest.raises(LocalEndpointError, match=refusal), attached_endpoint(url):
        pass


def test_the_command_refuses_a_non_local_url_before_running_anything(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--attach", "http://10.1.2.3:4566", "--cdk", "/nonexistent/cdk"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("deploy-local failed: --attach 'http://10.1.2.3:4566' is not a local endpoint's")
    assert "local AWS endpoint" not in captured.out


@pytest.mark.parametrize("option", [["--serve"], ["--server-log", "moto.log"]])
def test_attach_with_an_option_of_the_serving_run_is_refused(
    option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--attach", "http://127.0.0.1:4566", *option])
    assert exited.value.code == 2
    assert "--attach deploys to the endpoint a --serve run keeps (and logs)" in capsys.readouterr().err


def test_an_attached_endpoint_gives_the_cli_every_endpoint_variable_of_a_fresh_one() -> None:
    """GIVEN a server on 127.0.0.1 answering as moto does WHEN attached THEN the CLI's environment names only that
    endpoint (every service, and the template URL CloudFormation reads), fake credentials and a CDK home of its own,
    removed afterwards; the server keeps running."""
    import http.server
    import os
    import threading

    class Moto(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/moto-api/" else 404)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Moto)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        port = server.server_address[1]
        with attached_endpoint(f"http://localhost:{port}") as endpoint:
            environment = endpoint.environment(
                {"AWS_PROFILE": "prod", "AWS_ENDPOINT_URL_ECS": "https://x", "HOME": "/h"}
            )
            home = environment["CDK_HOME"]
            assert os.path.isdir(home)
        assert environment["AWS_ENDPOINT_URL"] == f"http://127.0.0.1:{port}"
        assert environment["AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION"] == f"http://localhost:{port}"
        assert environment["AWS_ACCESS_KEY_ID"] == "testing" and environment["HOME"] == "/h"
        assert not {"AWS_PROFILE", "AWS_ENDPOINT_URL_ECS"} & set(environment)
        assert environment["AWS_CONFIG_FILE"] == os.devnull and environment["AWS_EC2_METADATA_DISABLED"] == "true"
        assert not os.path.exists(home)
        with attached_endpoint(f"http://127.0.0.1:{port}"):  # still there
            pass
    finally:
        server.shutdown()
        server.server_close()


_DEFINED_IN = {
    "ami_releases": ("publish_pinned_releases",),
    "cdk_cli": ("run_cdk", "run_cdk_summarised"),
    "endpoint": (
        "DEFAULT_ACCOUNT",
        "DEFAULT_REGION",
        "FAKE_CREDENTIALS",
        "LOOPBACK",
        "LocalAwsEndpoint",
        "LocalEndpointError",
        "sealed_environment",
    ),
    "report": ("describe_deployed", "format_synth_warnings", "synth_warnings"),
    "start_or_attach": ("attached_endpoint", "local_aws_endpoint", "parse_local_url"),
    "synth": ("missing_lookups",),
}


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in _DEFINED_IN.items() for n in names])
def test_a_name_the_deploy_module_defined_is_still_imported_from_it_and_is_its_new_module_s(
    module: str, name: str
) -> None:
    import importlib

    # GIVEN the public names neuron_constructs.local_endpoint.deploy defined before it was split by concept
    deploy = importlib.import_module("neuron_constructs.local_endpoint.deploy")
    defining = importlib.import_module(f"neuron_constructs.local_endpoint.{module}")
    # WHEN one is imported from the old module
    # THEN it is the very object the module that now defines it holds, documented there only
    assert getattr(deploy, name) is getattr(defining, name)
    assert name not in deploy.__all__
    assert name in defining.__all__
