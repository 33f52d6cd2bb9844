"""``neuron-ecs rollout status|approve|rollback`` against a local stand-in for ECS and CloudFormation.

moto 5.2 models neither ``ListServiceDeployments``, ``DescribeServiceDeployments``, ``ContinueServiceDeployment`` nor
``StopServiceDeployment``: the stand-in answers them in ECS's JSON protocol (and ``ListStackResources`` in
CloudFormation's query protocol) from three services: one paused at an approval, one in progress with no pause, one
whose deployment ended."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qs

import pytest
from local_server import Answer, LocalServer

from neuron_constructs.tools.cli import main

ACCOUNT = "123456789012"
CLUSTER = "team"


def _service(name: str) -> str:
    return f"arn:aws:ecs:us-east-1:{ACCOUNT}:service/{CLUSTER}/{name}"


def _deployment(name: str) -> str:
    return f"arn:aws:ecs:us-east-1:{ACCOUNT}:service-deployment/{CLUSTER}/{name}/d1"


NOW = 1_796_000_000.0
DEPLOYMENTS: dict[str, dict[str, Any]] = {
    "paused": {
        "status": "IN_PROGRESS",
        "lifecycleStage": "POST_TEST_TRAFFIC_SHIFT",
        "deploymentConfiguration": {"strategy": "BLUE_GREEN", "bakeTimeInMinutes": 10},
        "lifecycleHookDetails": [
            {"hookId": "smoke-1", "targetType": "AWS_LAMBDA", "targetArn": "arn:aws:lambda:fn", "status": "SUCCEEDED"},
            {
                "hookId": "pause-1",
                "targetType": "PAUSE",
                "status": "AWAITING_ACTION",
                "expiresAt": NOW + 3 * 3600,
                "timeoutAction": "ROLLBACK",
            },
        ],
        "alarms": {"status": "MONITORING", "alarmNames": ["a", "b"], "triggeredAlarmNames": []},
    },
    "shifting": {
        "status": "IN_PROGRESS",
        "lifecycleStage": "BAKE_TIME",
        "deploymentConfiguration": {"strategy": "CANARY", "bakeTimeInMinutes": 10},
        "alarms": {"status": "MONITORING", "alarmNames": ["a"], "triggeredAlarmNames": ["Llm-5xx"]},
    },
    "finished": {
        "status": "SUCCESSFUL",
        "deploymentConfiguration": {"strategy": "ROLLING"},
        "finishedAt": NOW - 600,
    },
    "returning": {"status": "ROLLBACK_IN_PROGRESS", "lifecycleStage": "PRODUCTION_TRAFFIC_SHIFT"},
    "refusing": {
        "status": "IN_PROGRESS",
        "lifecycleStage": "POST_SCALE_UP",
        "lifecycleHookDetails": [{"hookId": "pause-2", "targetType": "PAUSE", "status": "AWAITING_ACTION"}],
    },
    "idless": {
        "status": "IN_PROGRESS",
        "lifecycleStage": "POST_SCALE_UP",
        "lifecycleHookDetails": [{"targetType": "PAUSE", "status": "AWAITING_ACTION"}],
    },
}
PAGED = "paged"
"""A service whose newest deployment ECS lists on a second page."""
STACKS = {"Llm": ["paused"], "Bare": [], "Team": ["paused", "shifting", "refusing"]}


class StandIn(LocalServer):
    """The ECS and CloudFormation calls of ``neuron-ecs rollout``, answered from :data:`DEPLOYMENTS`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        super().__init__(self._answer)

    def _answer(self, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        target = {k.lower(): v for k, v in headers.items()}.get("x-amz-target", "")
        if target.startswith("AmazonEC2ContainerServiceV20141113."):
            status, answer = self.ecs(target.split(".", 1)[1], json.loads(body or b"{}"))
            return status, "application/x-amz-json-1.1", json.dumps(answer).encode()
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        return 200, "text/xml", self.stack_resources(form).encode()

    def ecs(self, operation: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.calls.append((operation, request))
        if operation == "ListServiceDeployments":
            name = str(request["service"]).rsplit("/", 1)[-1]
            if name == PAGED:  # an older deployment first, the newest on the next page
                if "nextToken" not in request:
                    old = {"serviceDeploymentArn": _deployment("finished"), "createdAt": NOW - 86400}
                    return 200, {"serviceDeployments": [old], "nextToken": "page-2"}
                return 200, {"serviceDeployments": [{"serviceDeploymentArn": _deployment("paused"), "createdAt": NOW}]}
            if name not in DEPLOYMENTS:
                return 200, {"serviceDeployments": []}
            return 200, {"serviceDeployments": [{"serviceDeploymentArn": _deployment(name), "createdAt": NOW - 1800}]}
        if operation == "DescribeServiceDeployments":
            (arn,) = request["serviceDeploymentArns"]
            name = arn.split("/")[-2]
            deployment = {
                "serviceDeploymentArn": arn,
                "serviceArn": _service(name),
                "startedAt": NOW - 1800,
                **DEPLOYMENTS[name],
            }
            return 200, {"serviceDeployments": [deployment], "failures": []}
        if operation in ("ContinueServiceDeployment", "StopServiceDeployment"):
            if "/refusing/" in request["serviceDeploymentArn"]:
                return 400, {"__type": "ConflictException", "message": "the deployment is changing"}
            return 200, {"serviceDeploymentArn": request["serviceDeploymentArn"]}
        return 400, {"__type": "InvalidParameterException", "message": f"{operation} is not modelled"}

    def stack_resources(self, form: dict[str, str]) -> str:
        self.calls.append((form.get("Action", ""), form))
        members = "".join(
            f"<member><LogicalResourceId>{name}</LogicalResourceId><PhysicalResourceId>{_service(name)}"
            "</PhysicalResourceId><ResourceType>AWS::ECS::Service</ResourceType><LastUpdatedTimestamp>"
            "2026-12-07T20:00:00Z</LastUpdatedTimestamp><ResourceStatus>CREATE_COMPLETE</ResourceStatus></member>"
            for name in STACKS.get(form.get("StackName", ""), [])
        )
        return (
            '<ListStackResourcesResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">'
            f"<ListStackResourcesResult><StackResourceSummaries>{members}</StackResourceSummaries>"
            "</ListStackResourcesResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>"
            "</ListStackResourcesResponse>"
        )


@pytest.fixture
def stand_in(fake_aws_credentials: None) -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.close()


def _run(stand_in: StandIn, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["rollout", *argv, "--region", "us-east-1", "--endpoint-url", stand_in.url], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_status_of_a_stack_shows_the_stage_the_pause_its_timeout_and_the_alarms(stand_in: StandIn) -> None:
    status, out, err = _run(stand_in, "status", "Llm")
    assert status == 0, err
    assert f"service     {CLUSTER}/paused" in out
    assert "IN_PROGRESS, stage POST_TEST_TRAFFIC_SHIFT; BLUE_GREEN, bake 10 min" in out
    assert "hook       Lambda arn:aws:lambda:fn: SUCCEEDED" in out
    assert "hook       approval (pause): AWAITING_ACTION; times out " in out and ", then ROLLBACK [id pause-1]" in out
    assert "alarms     MONITORING: 2 watched; none in alarm" in out
    assert "next       neuron-ecs rollout approve" in out
    assert ("ListStackResources", {"Action": "ListStackResources", "StackName": "Llm", "Version": "2010-05-15"}) in [
        (op, r) for op, r in stand_in.calls if op == "ListStackResources"
    ]


def test_status_in_bake_time_names_the_bake_and_the_alarm_that_fired(stand_in: StandIn) -> None:
    status, out, _ = _run(stand_in, "status", f"{CLUSTER}/shifting")
    assert status == 0
    assert "stage BAKE_TIME; CANARY, bake 10 min" in out
    assert "bake       blue is kept 10 min after the last traffic shift" in out
    assert "in alarm: Llm-5xx" in out and "next" not in out


def test_approve_continues_the_paused_hook_and_rollback_answers_it_rollback(stand_in: StandIn) -> None:
    status, out, _ = _run(stand_in, "approve", _service("paused"))
    assert status == 0
    assert f"{CLUSTER}/paused: continued past the approval at POST_TEST_TRAFFIC_SHIFT" in out
    answered = [r for op, r in stand_in.calls if op == "ContinueServiceDeployment"]
    assert answered == [{"serviceDeploymentArn": _deployment("paused"), "hookId": "pause-1", "action": "CONTINUE"}]
    status, out, _ = _run(stand_in, "rollback", "paused", "--cluster", CLUSTER)
    assert status == 0 and "rolled back at the approval" in out
    assert [r["action"] for op, r in stand_in.calls if op == "ContinueServiceDeployment"] == ["CONTINUE", "ROLLBACK"]


def test_a_deployment_with_no_pause_is_not_approved_but_can_be_rolled_back(stand_in: StandIn) -> None:
    status, out, _ = _run(stand_in, "approve", f"{CLUSTER}/shifting")
    assert status == 3
    assert "is IN_PROGRESS at stage BAKE_TIME, with no approval waiting: it goes on by itself" in out
    assert not any(op == "ContinueServiceDeployment" for op, _ in stand_in.calls)
    status, out, _ = _run(stand_in, "rollback", f"{CLUSTER}/shifting")
    assert status == 0 and "rollback asked of the deployment in progress" in out
    stopped = [r for op, r in stand_in.calls if op == "StopServiceDeployment"]
    assert stopped == [{"serviceDeploymentArn": _deployment("shifting"), "stopType": "ROLLBACK"}]


def test_a_finished_deployment_or_none_has_nothing_to_answer(stand_in: StandIn) -> None:
    for action in ("approve", "rollback"):
        status, out, _ = _run(stand_in, action, f"{CLUSTER}/finished")
        assert status == 3 and "the newest deployment ended SUCCESSFUL at " in out
    status, out, _ = _run(stand_in, "rollback", f"{CLUSTER}/finished")
    assert "deploy the previous version again" in out
    status, out, _ = _run(stand_in, "approve", f"{CLUSTER}/never")
    assert status == 3 and "no service deployment to approve" in out
    assert not any(op in ("ContinueServiceDeployment", "StopServiceDeployment") for op, _ in stand_in.calls)


def test_a_stack_without_a_service_is_a_usage_error_and_json_is_plain(stand_in: StandIn) -> None:
    status, _, err = _run(stand_in, "status", "Bare")
    assert status == 2 and "stack 'Bare' has no ECS service" in err
    status, out, _ = _run(stand_in, "status", f"{CLUSTER}/paused", "--json")
    (read,) = json.loads(out)
    assert read["service"] == f"{CLUSTER}/paused"
    assert read["deployment"]["lifecycleHookDetails"][1]["expiresAt"].endswith("+00:00")


def test_on_a_stack_each_service_is_answered_in_turn_and_a_running_one_is_left_unless_named(stand_in: StandIn) -> None:
    status, out, _ = _run(stand_in, "rollback", "Team")
    lines = out.splitlines()
    # THEN the paused one is rolled back, the running one left (several services: it must be named), and the error
    # on the third said in its own line after the first two were answered
    assert lines[0].startswith(f"{CLUSTER}/paused: rolled back at the approval")
    assert "the stack holds several services, so name this one (CLUSTER/SERVICE) to roll it back" in lines[1]
    assert lines[2].startswith(f"{CLUSTER}/refusing: ") and "ConflictException" in lines[2]
    assert status == 1
    assert not any(
        op == "StopServiceDeployment" and "/shifting/" in r["serviceDeploymentArn"] for op, r in stand_in.calls
    )
    status, out, _ = _run(stand_in, "approve", "Team", "--json")
    answered = {r["service"]: r for r in json.loads(out)}
    assert answered[f"{CLUSTER}/paused"]["acted"] is True and answered[f"{CLUSTER}/refusing"]["failed"] is True
    assert status == 1


def test_the_newest_deployment_is_found_on_a_later_page_and_odd_answers_get_a_sentence(stand_in: StandIn) -> None:
    status, out, _ = _run(stand_in, "status", f"{CLUSTER}/{PAGED}")
    assert status == 0 and "stage POST_TEST_TRAFFIC_SHIFT" in out and "SUCCESSFUL" not in out
    status, out, _ = _run(stand_in, "rollback", f"{CLUSTER}/returning")
    assert status == 3 and "the deployment is already ROLLBACK_IN_PROGRESS: nothing to rollback" in out
    status, out, err = _run(stand_in, "approve", f"{CLUSTER}/idless")
    assert status == 3 and "a paused approval without its hook id; nothing was answered" in out and not err
    assert not any(op in ("ContinueServiceDeployment", "StopServiceDeployment") for op, _ in stand_in.calls)
