"""Inspection with exact API shapes: botocore's Stubber validates every request and response
against the real ECS service model (which has ``neuronDeviceIds`` and ``NEURON_DEVICES``),
and the expected parameters pin the page size, the batches and the number of calls."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from neuron_constructs.knowledge.devices import device_index, format_device_paths, format_index_runs, index_runs
from neuron_constructs.tools.inspection import (
    API_PAGE_SIZE,
    ContainerInstance,
    NeuronDevices,
    Task,
    TaskContainer,
    ecs_client,
    find_problems,
    inspect_cluster,
)

CLUSTER = "neuron"
ACCOUNT = "123456789012"
MANUAL_FAMILY = f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/slice:1"
MANAGED_FAMILY = f"arn:aws:ecs:us-east-1:{ACCOUNT}:task-definition/managed:4"


def _instance_arn(n: int) -> str:
    return f"arn:aws:ecs:us-east-1:{ACCOUNT}:container-instance/{CLUSTER}/{n:032x}"


def _task_arn(n: int) -> str:
    return f"arn:aws:ecs:us-east-1:{ACCOUNT}:task/{CLUSTER}/{n:032x}"


def _neuron_devices(ids: list[str]) -> dict[str, Any]:
    return {"name": "NEURON_DEVICES", "type": "STRINGSET", "stringSetValue": ids}


def _raw_instance(n: int) -> dict[str, Any]:
    return {
        "containerInstanceArn": _instance_arn(n),
        "ec2InstanceId": f"i-{n:017x}",
        "attributes": [{"name": "ecs.instance-type", "value": "inf2.48xlarge"}],
        "registeredResources": [
            {"name": "CPU", "type": "INTEGER", "integerValue": 196608},
            _neuron_devices([str(i) for i in range(12)]),
        ],
        "remainingResources": [_neuron_devices([str(i) for i in range(2, 12)])],
    }


def _raw_task(n: int, *, instance: int, manual: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "model", "taskArn": _task_arn(n)}
    if not manual:
        container["neuronDeviceIds"] = ["0", "1"]
    return {
        "taskArn": _task_arn(n),
        "taskDefinitionArn": MANUAL_FAMILY if manual else MANAGED_FAMILY,
        "containerInstanceArn": _instance_arn(instance),
        "containers": [container],
    }


def _task_definition(arn: str, *, manual: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "model", "image": "serving:1"}
    if manual:
        container["linuxParameters"] = {
            "devices": [
                {"hostPath": f"/dev/neuron{i}", "containerPath": f"/dev/neuron{i}", "permissions": ["read", "write"]}
                for i in (2, 3)
            ]
        }
    else:
        container["resourceRequirements"] = [{"type": "NeuronDevice", "value": "ALL"}]
    return {
        "taskDefinition": {"taskDefinitionArn": arn, "family": arn.rsplit("/")[-1], "containerDefinitions": [container]}
    }


def _stub_pages(stubber: Stubber, operation: str, key: str, arns: list[str], **params: Any) -> None:
    """List pages of 100, as the paginator asks for them."""
    pages = [arns[i : i + API_PAGE_SIZE] for i in range(0, len(arns), API_PAGE_SIZE)] or [[]]
    for number, page in enumerate(pages):
        expected = {**params, "cluster": CLUSTER, "maxResults": API_PAGE_SIZE}
        if number:
            expected["nextToken"] = f"token-{number}"
        response: dict[str, Any] = {key: page}
        if number + 1 < len(pages):
            response["nextToken"] = f"token-{number + 1}"
        stubber.add_response(operation, response, expected)


@pytest.fixture
def client() -> Any:
    session = boto3.Session(aws_access_key_id="stub", aws_secret_access_key="stub", region_name="us-east-1")
    return ecs_client(session=session, region="us-east-1")


def test_large_cluster_takes_the_fewest_calls_the_api_allows(client: Any) -> None:
    instances = 250
    tasks = [_raw_task(n, instance=n % instances, manual=n % 2 == 0) for n in range(230)]
    with Stubber(client) as stubber:
        instance_arns = [_instance_arn(n) for n in range(instances)]
        _stub_pages(stubber, "list_container_instances", "containerInstanceArns", instance_arns)
        for start in range(0, instances, API_PAGE_SIZE):
            batch = instance_arns[start : start + API_PAGE_SIZE]
            stubber.add_response(
                "describe_container_instances",
                {"containerInstances": [_raw_instance(int(a.rsplit("/", 1)[-1], 16)) for a in batch], "failures": []},
                {"cluster": CLUSTER, "containerInstances": batch},
            )
        task_arns = [t["taskArn"] for t in tasks]
        _stub_pages(stubber, "list_tasks", "taskArns", task_arns, desiredStatus="RUNNING")
        for start in range(0, len(tasks), API_PAGE_SIZE):
            stubber.add_response(
                "describe_tasks",
                {"tasks": tasks[start : start + API_PAGE_SIZE], "failures": []},
                {"cluster": CLUSTER, "tasks": task_arns[start : start + API_PAGE_SIZE]},
            )
        # Each distinct task definition once, in the order tasks first name them.
        stubber.add_response(
            "describe_task_definition", _task_definition(MANUAL_FAMILY, manual=True), {"taskDefinition": MANUAL_FAMILY}
        )
        stubber.add_response(
            "describe_task_definition",
            _task_definition(MANAGED_FAMILY, manual=False),
            {"taskDefinition": MANAGED_FAMILY},
        )
        inspection = inspect_cluster(client, CLUSTER)
        stubber.assert_no_pending_responses()

    assert inspection.api_calls == {
        "ListContainerInstances": 3,
        "DescribeContainerInstances": 3,
        "ListTasks": 3,
        "DescribeTasks": 3,
        "DescribeTaskDefinition": 2,
    }
    assert len(inspection.container_instances) == instances and len(inspection.tasks) == 230
    first = inspection.container_instances[0]
    assert first.instance_type == "inf2.48xlarge"
    assert first.neuron_devices.registered == tuple(str(i) for i in range(12))
    assert first.neuron_devices.remaining == tuple(str(i) for i in range(2, 12))
    manual, managed = inspection.tasks[0], inspection.tasks[1]
    assert manual.containers == (TaskContainer("model", (), ("/dev/neuron2", "/dev/neuron3")),)
    assert managed.containers == (TaskContainer("model", ("0", "1"), ()),)
    assert not inspection.has_conflict


def test_empty_cluster_takes_two_calls_and_finds_nothing(client: Any) -> None:
    with Stubber(client) as stubber:
        _stub_pages(stubber, "list_container_instances", "containerInstanceArns", [])
        _stub_pages(stubber, "list_tasks", "taskArns", [], desiredStatus="RUNNING")
        inspection = inspect_cluster(client, CLUSTER)
    assert inspection.api_calls == {"ListContainerInstances": 1, "ListTasks": 1}
    assert inspection.to_json() == {"container_instances": [], "tasks": [], "findings": []}


def test_unknown_cluster_error_is_raised_unchanged(client: Any) -> None:
    from botocore.exceptions import ClientError

    with Stubber(client) as stubber:
        stubber.add_client_error(
            "list_container_instances",
            service_error_code="ClusterNotFoundException",
            service_message="Cluster not found.",
        )
        with pytest.raises(ClientError, match="ClusterNotFoundException"):
            inspect_cluster(client, CLUSTER)


def test_json_document_has_the_documented_shape(client: Any) -> None:
    with Stubber(client) as stubber:
        _stub_pages(stubber, "list_container_instances", "containerInstanceArns", [_instance_arn(1)])
        stubber.add_response("describe_container_instances", {"containerInstances": [_raw_instance(1)]})
        _stub_pages(stubber, "list_tasks", "taskArns", [_task_arn(7)], desiredStatus="RUNNING")
        stubber.add_response("describe_tasks", {"tasks": [_raw_task(7, instance=1, manual=False)]})
        stubber.add_response("describe_task_definition", _task_definition(MANAGED_FAMILY, manual=False))
        document = inspect_cluster(client, CLUSTER).to_json()
    assert document == {
        "container_instances": [
            {
                "arn": _instance_arn(1),
                "ec2_instance_id": f"i-{1:017x}",
                "instance_type": "inf2.48xlarge",
                "neuron_devices": {
                    "registered": [str(i) for i in range(12)],
                    "remaining": [str(i) for i in range(2, 12)],
                },
                "neuron_cores": {"logical_nc_config": 1, "per_device": 2, "count": 24, "idle": list(range(4, 24))},
            }
        ],
        "tasks": [
            {
                "arn": _task_arn(7),
                "task_definition": MANAGED_FAMILY,
                "container_instance_arn": _instance_arn(1),
                "containers": [
                    {
                        "name": "model",
                        "neuron_device_ids": ["0", "1"],
                        "device_paths": [],
                        "visible_cores": None,
                        "logical_nc_config": None,
                        "model": None,
                    }
                ],
                "neuron_cores": [0, 1, 2, 3],
            }
        ],
        "findings": [
            {"kind": "idle", "message": f"i-{1:017x} (inf2.48xlarge): 10 of 12 Neuron devices idle: /dev/neuron2..11"}
        ],
    }


def test_standard_retry_mode_and_short_timeouts_are_configured(client: Any) -> None:
    config = client.meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert (config.connect_timeout, config.read_timeout) == (5, 10)


# --- find_problems: pure --------------------------------------------------------------------------


def _instance(name: str, instance_type: str | None, registered: list[int] | None) -> ContainerInstance:
    ids = tuple(str(i) for i in registered or [])
    return ContainerInstance(f"ci/{name}", f"i-{name}", instance_type, NeuronDevices(ids, ids))


def _manual(name: str, on: str, devices: list[int]) -> Task:
    paths = tuple(f"/dev/neuron{i}" for i in devices)
    return Task(f"task/{name}", f"td/{name}:1", f"ci/{on}", (TaskContainer("model", (), paths),))


def _managed(name: str, on: str, devices: list[int]) -> Task:
    return Task(f"task/{name}", f"td/{name}:1", f"ci/{on}", (TaskContainer("model", tuple(map(str, devices)), ()),))


def test_clean_cluster_has_no_findings() -> None:
    instances = [_instance("a", "inf2.24xlarge", list(range(6)))]
    tasks = [_manual(f"s{i}", "a", [2 * i, 2 * i + 1]) for i in range(3)]
    assert find_problems(instances, tasks) == []


def test_two_copies_of_a_manual_task_on_one_instance_conflict() -> None:
    instances = [_instance("a", "inf2.24xlarge", list(range(6)))]
    tasks = [_manual("first", "a", [0, 1]), _manual("second", "a", [0, 1]), _manual("third", "a", [2, 3, 4, 5])]
    findings = find_problems(instances, tasks)
    assert [f.kind for f in findings] == ["conflict", "conflict"]
    assert findings[0].message.startswith(
        "i-a (inf2.24xlarge): /dev/neuron0 (NeuronCores 0-1) is held by 2 tasks: first (first:1), second (second:1)"
    )


def _cores(name: str, on: str, devices: list[int], visible: str | None, lnc: int | None = None) -> Task:
    paths = tuple(f"/dev/neuron{i}" for i in devices)
    return Task(f"task/{name}", f"td/{name}:1", f"ci/{on}", (TaskContainer("model", (), paths, visible, lnc),))


def test_tasks_on_one_chip_with_disjoint_cores_do_not_conflict() -> None:
    instances = [_instance("a", "inf2.xlarge", [0])]
    assert find_problems(instances, [_cores("x", "a", [0], "0"), _cores("y", "a", [0], "1")]) == []


def test_tasks_holding_one_core_conflict_naming_the_core_and_its_device() -> None:
    instances = [_instance("a", "inf2.8xlarge", [0])]
    (finding,) = find_problems(instances, [_cores("x", "a", [0], "0-1"), _cores("y", "a", [0], "1")])
    assert finding.kind == "conflict"
    assert finding.message.startswith("i-a (inf2.8xlarge): NeuronCore 1 of /dev/neuron0 is held by 2 tasks: x (x:1)")


def test_a_whole_chip_task_conflicts_with_a_core_task_on_that_chip() -> None:
    instances = [_instance("a", "inf1.6xlarge", [0, 1, 2, 3])]
    finding, idle = find_problems(instances, [_manual("whole", "a", [1]), _cores("part", "a", [1], "6-7")])
    assert idle.kind == "idle" and finding.kind == "conflict"
    assert "NeuronCores 6-7 of /dev/neuron1 are held by 2 tasks" in finding.message


def test_an_unknown_type_keeps_the_device_rule() -> None:
    instances = [_instance("a", "inf9.large", [0])]
    (finding,) = find_problems(instances, [_cores("x", "a", [0], "0"), _cores("y", "a", [0], "1")])
    assert finding.message.startswith("i-a (inf9.large): /dev/neuron0 is held by 2 tasks")


def test_trn2_cores_are_counted_at_the_logical_core_setting_the_tasks_state() -> None:
    instances = [_instance("a", "trn2.48xlarge", list(range(16)))]
    # LNC=1: 8 cores a chip; chip 1 holds cores 8-15.
    disjoint = [_cores("x", "a", [1], "8-11", lnc=1), _cores("y", "a", [1], "12-15", lnc=1)]
    assert [f.kind for f in find_problems(instances, disjoint)] == ["idle"]
    # Logical core 6 at LNC=2 is physical cores 12-13, cores 12-13 at LNC=1.
    overlapping = [_cores("x", "a", [1], "12", lnc=1), _cores("y", "a", [1], "6", lnc=2)]
    assert "NeuronCore 12 of /dev/neuron1 is held by 2 tasks" in find_problems(instances, overlapping)[0].message


def test_idle_cores_of_devices_in_use_are_listed() -> None:
    instances = [_instance("a", "inf2.24xlarge", list(range(6)))]
    (finding,) = find_problems(instances, [_cores("x", "a", [0], "0"), _manual("y", "a", [1, 2, 3, 4, 5])])
    assert finding.kind == "idle"
    assert finding.message == "i-a (inf2.24xlarge): 1 NeuronCore idle on devices in use: 1 of /dev/neuron0"


def test_manual_task_colliding_with_a_managed_allocation_conflicts() -> None:
    instances = [_instance("a", "trn1.32xlarge", list(range(16)))]
    tasks = [_managed("managed", "a", list(range(16))), _manual("manual", "a", [15])]
    (finding,) = find_problems(instances, tasks)
    assert finding.kind == "conflict" and "/dev/neuron15" in finding.message


def test_tasks_on_different_instances_never_conflict() -> None:
    instances = [_instance("a", "inf2.xlarge", [0]), _instance("b", "inf2.xlarge", [0])]
    assert find_problems(instances, [_manual("x", "a", [0]), _manual("y", "b", [0])]) == []


def test_device_beyond_the_instance_type_is_missing() -> None:
    instances = [_instance("a", "inf2.xlarge", [0])]
    (finding,) = find_problems(instances, [_manual("big", "a", [0, 1])])
    assert finding.kind == "missing-device"
    assert finding.message.endswith("holds /dev/neuron1, but inf2.xlarge has /dev/neuron0 only")


def test_neuron_instance_without_registered_devices_is_reported() -> None:
    (finding,) = find_problems([_instance("a", "inf2.8xlarge", None)], [])
    assert finding.kind == "unregistered" and "Neuron AMI" in finding.message


def test_non_neuron_instance_without_devices_is_fine() -> None:
    assert find_problems([_instance("a", "m7i.large", None)], []) == []


def test_idle_devices_are_listed_folded() -> None:
    (finding,) = find_problems([_instance("a", "inf2.48xlarge", list(range(12)))], [_manual("s", "a", [0, 1])])
    assert finding.kind == "idle" and finding.message.endswith("10 of 12 Neuron devices idle: /dev/neuron2..11")


def test_findings_come_most_severe_first() -> None:
    instances = [_instance("a", "inf2.xlarge", [0]), _instance("b", "inf2.24xlarge", list(range(6)))]
    tasks = [_manual("x", "b", [0]), _manual("y", "b", [0]), _manual("z", "a", [3])]
    assert [f.kind for f in find_problems(instances, tasks)] == ["conflict", "missing-device", "idle", "idle"]


@pytest.mark.parametrize(
    ("device", "index"), [("0", 0), ("11", 11), ("neuron3", 3), ("/dev/neuron15", 15), ("/dev/sda1", None), ("x", None)]
)
def test_device_index(device: str, index: int | None) -> None:
    assert device_index(device) == index


def test_device_runs_fold() -> None:
    assert index_runs([5, 0, 1, 2, 2]) == [(0, 2), (5, 5)]
    assert format_device_paths([0, 1, 2, 5]) == "/dev/neuron0..2, /dev/neuron5"
    assert format_index_runs([5, 0, 1, 2, 2, 7]) == "0-2, 5, 7"


@pytest.mark.parametrize(
    ("resource", "problem"),
    [
        ({"name": "NEURON_DEVICES", "type": "INTEGER", "integerValue": 12}, "NEURON_DEVICES is a INTEGER resource"),
        (
            {"name": "NEURON_DEVICES", "type": "STRINGSET", "stringSetValue": ["0", "gpu1"]},
            "NEURON_DEVICES holds ids that name no device: ['gpu1']",
        ),
        (
            {"name": "NEURON_DEVICES", "type": "STRINGSET", "stringSetValue": ["0", "0"]},
            "NEURON_DEVICES lists ['0'] more than once",
        ),
    ],
)
def test_a_malformed_neuron_devices_registration_is_a_finding(resource: dict[str, Any], problem: str) -> None:
    from neuron_constructs.tools.inspection import _container_instance

    raw = {
        "containerInstanceArn": "arn:aws:ecs:us-east-1:123456789012:container-instance/neuron/abc",
        "ec2InstanceId": "i-abc",
        "attributes": [{"name": "ecs.instance-type", "value": "inf2.xlarge"}],
        "registeredResources": [resource],
        "remainingResources": [],
    }
    instance = _container_instance(raw)
    (finding,) = [f for f in find_problems([instance], []) if f.kind in ("malformed", "unregistered")]
    assert finding.kind == "malformed"
    assert finding.message.startswith(f"i-abc (inf2.xlarge): registered: {problem}")


def test_a_response_without_the_ecs_fields_raises_unexpected_response() -> None:
    from neuron_constructs.tools.inspection import UnexpectedResponseError, _container_instance

    with pytest.raises(UnexpectedResponseError, match="DescribeContainerInstances returned a response"):
        _container_instance({"ec2InstanceId": "i-abc"})
