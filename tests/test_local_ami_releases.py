"""The local endpoint publishes every ECS Neuron AMI release an app pins, read from its templates, or refuses the
deploy with a sentence naming the release (:mod:`neuron_constructs.local_endpoint.ami_releases`)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from neuron_constructs import NeuronAmi
from neuron_constructs.local_endpoint import moto_server
from neuron_constructs.local_endpoint.ami_releases import (
    PUBLISH_PATH,
    pinned_releases,
    publish_pinned_releases,
    refusal,
    stand_in_image_id,
)
from neuron_constructs.local_endpoint.endpoint import LocalAwsEndpoint, LocalEndpointError

TODAY = datetime.date(2026, 12, 7)
UNSHIPPED = "2023.0.20261120"
"""A release neither moto's copy nor PINNED_NEURON_AMIS has."""


def _parameter(release: str, kernel: str = "6.1") -> str:
    """The release's parameter name as a template holds it: built directly, since ``NeuronAmi.release`` refuses a
    release dated after today, which these tests pin on purpose."""
    return NeuronAmi(version=release, kernel=kernel).parameter_name


def _assembly(tmp_path: Path, templates: dict[str, Any]) -> Path:
    for name, template in templates.items():
        (tmp_path / f"{name}.template.json").write_text(json.dumps(template))
    return tmp_path


def test_every_release_a_template_names_is_read_with_the_stacks_that_pin_it(tmp_path: Path) -> None:
    """GIVEN a template parameter's Default and a dynamic reference in another stack, on two kernels WHEN read THEN
    each (release, kernel) is listed once with every stack that names it."""
    default = {"Parameters": {"Ami": {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"}}}
    default["Parameters"]["Ami"]["Default"] = _parameter(UNSHIPPED)
    resolved = {"Resources": {"T": {"Properties": {"ImageId": "{{resolve:ssm:" + _parameter(UNSHIPPED) + "}}"}}}}
    other = {"Parameters": {"Ami": {"Default": _parameter("2023.0.20261030", kernel="6.12")}}}
    found = pinned_releases(_assembly(tmp_path, {"Serving": default, "Training": resolved, "Batch": other}))
    assert found == {(UNSHIPPED, "6.1"): ["Serving", "Training"], ("2023.0.20261030", "6.12"): ["Batch"]}


def test_a_release_dated_after_today_is_refused_with_a_sentence_naming_it_and_its_stack() -> None:
    said = refusal("2023.0.20261231", "6.1", ["Serving"], TODAY)
    assert said is not None and said.startswith(
        "stack Serving pins ECS Neuron AMI release 2023.0.20261231, dated after"
    )
    assert "neuron-ecs ami --releases" in said
    assert refusal(UNSHIPPED, "6.1", ["Serving"], TODAY) is None


def test_a_name_that_is_no_release_is_refused_with_a_sentence() -> None:
    said = refusal("2023.0.20261131", "6.1", ["Serving"], TODAY)  # November has 30 days
    assert said is not None and "'2023.0.20261131' on kernel '6.1', which is not a release" in said


def test_the_deploy_is_refused_before_the_endpoint_is_asked(tmp_path: Path) -> None:
    """GIVEN an app that pins a release dated after today WHEN deployed THEN the deploy stops with the sentence,
    before a request reaches the endpoint (none listens on port 9 here)."""
    template = {"Parameters": {"Ami": {"Default": _parameter("2023.0.20991231")}}}
    with pytest.raises(
        LocalEndpointError, match=r"^stack Serving pins ECS Neuron AMI release 2023\.0\.20991231, dated"
    ):
        publish_pinned_releases(LocalAwsEndpoint(port=9), _assembly(tmp_path, {"Serving": template}), TODAY)


@pytest.fixture
def server_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's patches, undone after the test."""
    from moto.moto_api._internal import urls
    from moto.ssm.models import ParameterDict

    monkeypatch.setattr(ParameterDict, "_load_tree_parameters", ParameterDict._load_tree_parameters)
    monkeypatch.setattr(urls, "url_paths", dict(urls.url_paths))
    monkeypatch.setattr(moto_server, "_RELEASES", set(moto_server._RELEASES))
    moto_server.publish_pinned_neuron_amis()


def test_the_server_publishes_a_release_asked_for_before_and_after_ssm_loads_its_copy(
    aws: boto3.Session, server_state: None
) -> None:
    """GIVEN the endpoint's SSM WHEN a release is asked for after moto loaded the Region's ECS AMI parameters, and
    another before THEN both resolve to their stand-in image ids, as the launch template resolves them."""
    ssm = aws.client("ssm")
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=_parameter(UNSHIPPED))
    moto_server.publish_releases({(UNSHIPPED, "6.1")})
    assert ssm.get_parameter(Name=_parameter(UNSHIPPED))["Parameter"]["Value"] == stand_in_image_id(UNSHIPPED)
    details = json.loads(ssm.get_parameter(Name=NeuronAmi.release(UNSHIPPED).details_parameter)["Parameter"]["Value"])
    assert details["image_version"] == UNSHIPPED
    moto_server.publish_releases({("2023.0.20261127", "6.1")})
    other = aws.client("ssm", region_name="eu-west-1")  # loaded after: published at load
    assert other.get_parameter(Name=_parameter("2023.0.20261127"))["Parameter"]["Value"].startswith("ami-0")


def test_the_server_s_route_publishes_what_the_deploy_sends_and_refuses_with_the_sentence(
    aws: boto3.Session, server_state: None
) -> None:
    from moto.moto_server.werkzeug_app import create_backend_app

    client = create_backend_app("moto_api").test_client()
    answer = client.post(PUBLISH_PATH, data=json.dumps([[UNSHIPPED, "6.1"]]))
    assert answer.status_code == 200
    value = aws.client("ssm").get_parameter(Name=_parameter(UNSHIPPED))["Parameter"]["Value"]
    assert value == stand_in_image_id(UNSHIPPED)
    refused = client.post(PUBLISH_PATH, data=json.dumps([["2023.0.20991231", "6.1"]]))
    assert refused.status_code == 400 and "2023.0.20991231, dated after today" in refused.get_data(as_text=True)
    assert client.post(PUBLISH_PATH, data=b"<xml/>").status_code == 400


def test_the_refusal_judges_a_release_by_the_day_it_is_given() -> None:
    """A release dated before the day the deploy runs is published, whatever the machine's clock says."""
    assert refusal("2023.0.20261210", "6.1", ["S"], datetime.date(2026, 12, 31)) is None
    assert "dated after today (2026-12-01)" in (
        refusal("2023.0.20261210", "6.1", ["S"], datetime.date(2026, 12, 1)) or ""
    )
    assert "which is not a release" in (refusal("2023.0.20261210", "six", ["S"], TODAY) or "")
