"""Training queues and jobs on AWS Batch: EFA interfaces, devices, placement, capacity and the launcher, from the
synthesized templates."""

from __future__ import annotations

import base64
import bz2
import json
import os
import subprocess
from typing import Any

import pytest
from aws_cdk import App, CfnParameter, Stack, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from conftest import resources

from neuron_constructs import CapacityReservation, NeuronInstanceType
from neuron_constructs.compute.container_instances import NEURON_AMI_PARAMETER
from neuron_constructs.knowledge.efa_installer import EFA_INSTALLER
from neuron_constructs.programs.carrying import program_source
from neuron_constructs.training.jobs import EFA_ENVIRONMENT, LAUNCHER, preflight_program
from neuron_constructs.training.queue import NeuronTrainingQueue
from neuron_constructs.training.storage import LustreStorage, mount_commands

pytestmark = pytest.mark.xdist_group("training")  # one worker builds the module's stacks once

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
MULTI_NODE = [e.name for e in NeuronInstanceType.all() if e.supports_multi_node]
EVERY_TYPE = [e.name for e in NeuronInstanceType.all()]
SINGLE_NODE = [n for n in EVERY_TYPE if n not in MULTI_NODE]


def _queue_id(instance_type: str) -> str:
    return "Queue" + instance_type.replace(".", "").replace("xlarge", "X").capitalize()


@pytest.fixture(scope="module")
def training() -> dict[str, dict[str, Any]]:
    """A queue and a job for every catalog type (two nodes where the type has EFA) in one stack on one VPC, and the
    capacity choices in another, with cdk-nag on: each queue's resources as a template of their own."""
    from cdk_nag import AwsSolutionsChecks

    from neuron_constructs.base.vpc import private_vpc

    app = App(analytics_reporting=False)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    every = Stack(app, "Every")
    vpc = NeuronTrainingQueue(every, _queue_id("trn1.32xlarge"), instance_type="trn1.32xlarge", max_nodes=2).vpc
    queues = {"trn1.32xlarge": every.node.find_child(_queue_id("trn1.32xlarge"))}
    for name in EVERY_TYPE:
        if name not in queues:
            queues[name] = NeuronTrainingQueue(every, _queue_id(name), instance_type=name, max_nodes=2, vpc=vpc)
        queues[name].add_job(  # type: ignore[attr-defined]
            "Train", nodes=2 if name in MULTI_NODE else 1, image=IMAGE, command=["torchrun", "train.py"]
        )
    choices = Stack(app, "Choices")
    shared = private_vpc(choices, max_azs=1)
    NeuronTrainingQueue(
        choices,
        "Block",
        instance_type="trn1.32xlarge",
        max_nodes=4,
        vpc=shared,
        capacity_reservation=CapacityReservation.capacity_block("cr-0123456789abcdef0"),
    ).add_job("Train", nodes=4, image=IMAGE, command=["torchrun", "train.py"], retries=9)
    alerts = sns.Topic(choices, "Alerts", enforce_ssl=True)
    NeuronTrainingQueue(
        choices,
        "Reserved",
        instance_type="trn2.48xlarge",
        max_nodes=2,
        vpc=shared,
        capacity_reservation=CapacityReservation.on_demand("cr-0fedcba9876543210"),
        notifications=alerts,
        notify_on_success=True,
    ).add_job(
        "Train",
        nodes=2,
        image=IMAGE,
        command=["torchrun", "train.py"],
        retries=0,
        preflight="collective",
        checkpoint_dir="s3://team-checkpoints/pretrain",
    )
    NeuronTrainingQueue(choices, "Spot", instance_type="trn1.2xlarge", max_nodes=4, spot=True, vpc=shared).add_job(
        "Train", nodes=1, image=IMAGE, command=["python", "train.py"]
    )
    datasets = s3.Bucket.from_bucket_name(choices, "Datasets", "team-datasets")
    NeuronTrainingQueue(
        choices,
        "Shared",
        instance_type="trn1.32xlarge",
        max_nodes=2,
        vpc=shared,
        storage=LustreStorage(bucket=datasets),
        notifications=alerts,
        monitoring=True,
    ).add_job("Train", nodes=2, image=IMAGE, command=["torchrun", "train.py"], preflight="collective")
    script = CfnParameter(choices, "Script", default="train.py")
    arguments = CfnParameter(choices, "Arguments", type="CommaDelimitedList", default="--epochs,3")
    parameterized = NeuronTrainingQueue(choices, "Parameterized", instance_type="trn1.2xlarge", max_nodes=1, vpc=shared)
    parameterized.add_job("Script", nodes=1, image=IMAGE, command=["python", script.value_as_string])
    parameterized.add_job("Arguments", nodes=1, image=IMAGE, command=["python", "train.py", *arguments.value_as_list])
    assembly = app.synth()
    templates = {name: assembly.get_stack_by_name(name).template for name in ("Every", "Choices")}
    out = {name: _part(templates["Every"], _queue_id(name)) for name in EVERY_TYPE}
    out.update(
        {name: _part(templates["Choices"], name) for name in ("Block", "Reserved", "Spot", "Shared", "Parameterized")}
    )
    out["Every"], out["Choices"] = templates["Every"], templates["Choices"]
    return out


def _part(template: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The resources of one queue (logical ids start with its construct id), with the template's parameters."""
    return {
        "Parameters": template.get("Parameters", {}),
        "Resources": {k: v for k, v in template["Resources"].items() if k.startswith(prefix)},
    }


def _stack_name(instance_type: str) -> str:
    return instance_type


def _one(template: dict[str, Any], kind: str) -> dict[str, Any]:
    (resource,) = resources(template, kind).values()
    return resource["Properties"]  # type: ignore[no-any-return]


def _container(template: dict[str, Any]) -> dict[str, Any]:
    properties = _one(template, "AWS::Batch::JobDefinition")
    if "NodeProperties" in properties:
        (node_range,) = properties["NodeProperties"]["NodeRangeProperties"]
        return node_range["Container"]  # type: ignore[no-any-return]
    return properties["ContainerProperties"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("instance_type", EVERY_TYPE)
def test_every_type_maps_as_many_uverbs_devices_as_its_launch_template_has_efa_interfaces(
    training: dict[str, dict[str, Any]], instance_type: str
) -> None:
    entry = NeuronInstanceType.of(instance_type)
    template = training[instance_type]
    interfaces = _one(template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"].get("NetworkInterfaces", [])
    devices = [d["HostPath"] for d in _container(template)["LinuxParameters"]["Devices"]]
    uverbs = [d for d in devices if d.startswith("/dev/infiniband/uverbs")]
    assert len(interfaces) == len(uverbs) == (entry.efa_interfaces or 0)
    assert [d for d in devices if d.startswith("/dev/neuron")] == list(entry.device_paths)


@pytest.mark.parametrize("instance_type", MULTI_NODE)
def test_efa_interfaces_equal_the_devices_mapped_equal_the_catalog(
    training: dict[str, dict[str, Any]], instance_type: str
) -> None:
    entry = NeuronInstanceType.of(instance_type)
    template = training[_stack_name(instance_type)]
    interfaces = _one(template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["NetworkInterfaces"]
    (group,) = resources(template, "AWS::EC2::SecurityGroup")
    assert [i["NetworkCardIndex"] for i in interfaces] == list(range(entry.efa_interfaces or 0))
    assert [i["DeviceIndex"] for i in interfaces] == [0] + [1] * (len(interfaces) - 1)
    assert {i["InterfaceType"] for i in interfaces} == {"efa"}
    assert all(i["Groups"] == [{"Fn::GetAtt": [group, "GroupId"]}] for i in interfaces)
    devices = [d["HostPath"] for d in _container(template)["LinuxParameters"]["Devices"]]
    uverbs = [d for d in devices if d.startswith("/dev/infiniband/uverbs")]
    assert len(interfaces) == len(uverbs) == entry.efa_interfaces
    assert [d for d in devices if d.startswith("/dev/neuron")] == list(entry.device_paths)
    compute = _one(template, "AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert "SecurityGroupIds" not in compute  # Batch takes the interfaces' groups, not both


@pytest.mark.parametrize("instance_type", SINGLE_NODE)
def test_types_without_efa_get_no_interfaces_and_no_uverbs(
    training: dict[str, dict[str, Any]], instance_type: str
) -> None:
    template = training[_stack_name(instance_type)]
    assert "NetworkInterfaces" not in _one(template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert _one(template, "AWS::Batch::ComputeEnvironment")["ComputeResources"]["SecurityGroupIds"]
    devices = [d["HostPath"] for d in _container(template)["LinuxParameters"]["Devices"]]
    assert devices == list(NeuronInstanceType.of(instance_type).device_paths)
    assert "NodeProperties" not in _one(template, "AWS::Batch::JobDefinition")


def test_nodes_sit_in_one_subnet_and_placement_group_and_talk_only_to_each_other(
    training: dict[str, dict[str, Any]],
) -> None:
    template = training[_stack_name("trn1.32xlarge")]
    compute = _one(template, "AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert len(compute["Subnets"]) == 1
    (placement,) = resources(template, "AWS::EC2::PlacementGroup").values()
    assert placement["Properties"]["Strategy"] == "cluster"
    assert compute["PlacementGroup"]["Fn::GetAtt"][0] in resources(template, "AWS::EC2::PlacementGroup")
    (group,) = resources(template, "AWS::EC2::SecurityGroup")
    assert _one(template, "AWS::EC2::SecurityGroup").get("SecurityGroupIngress") is None
    (rule,) = resources(template, "AWS::EC2::SecurityGroupIngress").values()
    assert rule["Properties"]["IpProtocol"] == "-1"
    assert rule["Properties"]["SourceSecurityGroupId"] == {"Fn::GetAtt": [group, "GroupId"]}


def test_the_compute_environment_costs_nothing_idle_and_runs_exactly_the_type(
    training: dict[str, dict[str, Any]],
) -> None:
    template = training[_stack_name("trn1.32xlarge")]
    compute = _one(template, "AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert (compute["MinvCpus"], compute["MaxvCpus"]) == (0, 2 * 128)
    assert compute["InstanceTypes"] == ["trn1.32xlarge"]
    (image,) = compute["Ec2Configuration"]
    assert image["ImageType"] == "ECS_AL2023"
    parameter = image["ImageIdOverride"]["Ref"]
    assert template["Parameters"][parameter]["Default"] == NEURON_AMI_PARAMETER
    data = _one(template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["MetadataOptions"] == {"HttpPutResponseHopLimit": 1, "HttpTokens": "required"}
    (volume,) = data["BlockDeviceMappings"]
    assert volume["Ebs"]["Encrypted"] is True and volume["Ebs"]["VolumeType"] == "gp3"
    user_data = json.dumps(data["UserData"])
    assert "Content-Type: multipart/mixed" in user_data and "efa_installer.sh -y" in user_data
    assert "ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config" in user_data


def test_the_job_gets_memlock_efa_and_the_launcher(training: dict[str, dict[str, Any]]) -> None:
    template = training[_stack_name("trn1.32xlarge")]
    definition = _one(template, "AWS::Batch::JobDefinition")
    assert definition["Type"] == "multinode"
    assert (definition["NodeProperties"]["NumNodes"], definition["NodeProperties"]["MainNode"]) == (2, 0)
    container = _container(template)
    assert {"Name": "memlock", "SoftLimit": -1, "HardLimit": -1} in container["Ulimits"]
    environment = {e["Name"]: e["Value"] for e in container["Environment"]}
    assert {k: v for k, v in environment.items() if not k.startswith("NEURON_PREFLIGHT")} == EFA_ENVIRONMENT
    assert container["Command"][:4] == ["/bin/bash", "-c", LAUNCHER, "neuron-launch"]
    assert container["Command"][4:] == ["torchrun", "train.py"]
    assert container["LinuxParameters"]["SharedMemorySize"] == 52428  # a tenth of 512 GiB, MiB
    assert definition["Timeout"]["AttemptDurationSeconds"] == 3 * 24 * 3600


# The retry strategy of every job: the preflight's exit code for an image problem not retried (matched first), its
# exit code for a bad node and Host EC2* reasons retried, everything else not.
RETRIES = [
    {"Action": "EXIT", "OnExitCode": "78"},
    {"Action": "RETRY", "OnExitCode": "75"},
    {"Action": "RETRY", "OnStatusReason": "Host EC2*"},
    {"Action": "EXIT", "OnReason": "*"},
]


@pytest.mark.parametrize(
    ("name", "attempts"),
    [
        ("trn1.32xlarge", 4),
        ("trn1.2xlarge", 4),
        ("Spot", 4),
        ("Shared", 4),
        ("Parameterized", 4),
        ("Block", 10),
        ("Reserved", 1),
    ],
)
def test_every_job_retries_a_bad_node_and_a_lost_host_and_nothing_else(
    name: str, attempts: int, training: dict[str, dict[str, Any]]
) -> None:
    """Attempts = retries + 1: the default 3, and 9 and 0 given."""
    for definition in resources(training[name], "AWS::Batch::JobDefinition").values():
        retries = definition["Properties"]["RetryStrategy"]
        assert (retries["Attempts"], retries["EvaluateOnExit"]) == (attempts, RETRIES)


def _batch_action(entries: list[dict[str, str]], exit_code: str, status_reason: str, reason: str | None) -> str:
    """What AWS Batch does after an attempt (AWS Batch API reference: EvaluateOnExit): the action of the first entry
    whose every condition matches (a pattern ending in ``*`` matches a prefix, any other the whole value), and RETRY
    when none does. A ``reason`` of ``None`` (an attempt that exited with no reason) is matched by nothing."""

    def matches(pattern: str | None, value: str | None) -> bool:
        if pattern is None:
            return True
        if value is None:
            return False
        return value.startswith(pattern[:-1]) if pattern.endswith("*") else value == pattern

    for entry in entries:
        if (
            matches(entry.get("OnExitCode"), exit_code)
            and matches(entry.get("OnStatusReason"), status_reason)
            and matches(entry.get("OnReason"), reason)
        ):
            return entry["Action"]
    return "RETRY"


@pytest.mark.parametrize("reason", [None, "", "OutOfMemoryError: Container killed due to memory usage"])
def test_an_image_problem_is_not_retried_and_a_bad_node_is_whatever_reason_batch_reports(
    reason: str | None, training: dict[str, dict[str, Any]]
) -> None:
    """GIVEN every job's retry strategy WHEN an attempt ends THEN the preflight's image problem (78) exits, a bad node
    (75) and a lost host (``Host EC2*``) retry, and a failing script (1) exits when Batch reports a reason - and 78
    exits even when it reports none, which no ``OnReason`` pattern may match (Batch retries what nothing matches)."""
    from neuron_constructs.programs.preflight import IMAGE_EXIT_CODE, PREFLIGHT_EXIT_CODE

    exited = "Essential container in task exited"
    for definition in resources(training["trn1.32xlarge"], "AWS::Batch::JobDefinition").values():
        entries = definition["Properties"]["RetryStrategy"]["EvaluateOnExit"]
        assert _batch_action(entries, str(IMAGE_EXIT_CODE), exited, reason) == "EXIT"
        assert _batch_action(entries, str(PREFLIGHT_EXIT_CODE), exited, reason) == "RETRY"
        assert _batch_action(entries, "", "Host EC2 (instance i-0abc) terminated.", reason) == "RETRY"
        if reason is not None:
            assert _batch_action(entries, "1", exited, reason) == "EXIT"


def test_every_node_runs_the_preflight_for_its_devices_and_efa_with_the_host_s_marker(
    training: dict[str, dict[str, Any]],
) -> None:
    from neuron_constructs.programs.preflight import PREFLIGHT_EXIT_CODE

    assert PREFLIGHT_EXIT_CODE == 75
    for name, devices, efa in (
        ("trn1.32xlarge", "0-15", "8"),
        ("trn1.2xlarge", "0", "0"),
        ("trn2.48xlarge", "0-15", "16"),
    ):
        container = _container(training[name])
        environment = {e["Name"]: e["Value"] for e in container["Environment"]}
        assert environment["NEURON_PREFLIGHT"] == preflight_program(), name
        assert "NEURON_PREFLIGHT_LUSTRE" not in environment, name  # no storage
        assert (environment["NEURON_PREFLIGHT_DEVICES"], environment["NEURON_PREFLIGHT_EFA"]) == (devices, efa)
        assert "NEURON_PREFLIGHT_COLLECTIVE" not in environment
        assert {"Host": {"SourcePath": "/var/lib/neuron-preflight"}, "Name": "preflight"} in container["Volumes"]
        user_data = json.dumps(_one(training[name], "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"])
        assert "PathExists=/var/lib/neuron-preflight/failed" in user_data and "systemctl poweroff" in user_data


@pytest.mark.parametrize(
    ("name", "placed"),
    [("trn1.32xlarge", True), ("Spot", True), ("Shared", True), ("Block", False), ("Reserved", False)],
)
def test_placement_groups_are_on_for_on_demand_and_spot_and_off_with_a_reservation(
    name: str, placed: bool, training: dict[str, dict[str, Any]]
) -> None:
    groups = resources(training[name], "AWS::EC2::PlacementGroup")
    compute = _one(training[name], "AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert (len(groups), "PlacementGroup" in compute) == ((1, True) if placed else (0, False))


def test_checkpoints_default_to_the_queue_s_storage_and_are_absent_without_it(
    training: dict[str, dict[str, Any]],
) -> None:
    shared = {e["Name"]: e["Value"] for e in _container(training["Shared"])["Environment"]}
    assert shared["NEURON_CHECKPOINT_DIR"] == "/fsx/data/checkpoints/train"
    for name in ("trn1.32xlarge", "Spot", "Parameterized", "Block"):
        for definition in resources(training[name], "AWS::Batch::JobDefinition").values():
            assert "NEURON_CHECKPOINT_DIR" not in json.dumps(definition), name
    reserved = {e["Name"]: e["Value"] for e in _container(training["Reserved"])["Environment"]}
    assert reserved["NEURON_CHECKPOINT_DIR"] == "s3://team-checkpoints/pretrain"


def test_the_collective_preflight_runs_an_all_reduce_over_every_neuron_core(
    training: dict[str, dict[str, Any]],
) -> None:
    """trn2.48xlarge at the default LNC=2: 16 chips x 4 logical cores, one rank each."""
    environment = {e["Name"]: e["Value"] for e in _container(training["Reserved"])["Environment"]}
    assert (environment["NEURON_PREFLIGHT_COLLECTIVE"], environment["NEURON_PREFLIGHT_RANKS"]) == ("1", "64")


def test_failed_jobs_of_the_queue_reach_the_topic_with_name_reason_and_log_stream(
    training: dict[str, dict[str, Any]],
) -> None:
    template = training["Shared"]
    (rule,) = resources(template, "AWS::Events::Rule").values()
    pattern = rule["Properties"]["EventPattern"]
    assert (pattern["source"], pattern["detail-type"]) == (["aws.batch"], ["Batch Job State Change"])
    assert pattern["detail"]["status"] == ["FAILED"]
    (queue,) = resources(template, "AWS::Batch::JobQueue")
    assert pattern["detail"]["jobQueue"] == [{"Fn::GetAtt": [queue, "JobQueueArn"]}]
    (target,) = rule["Properties"]["Targets"]
    transformer = target["InputTransformer"]
    assert set(transformer["InputPathsMap"].values()) >= {
        "$.detail.jobName",
        "$.detail.statusReason",
        "$.detail.container.logStreamName",
    }
    for name in ("trn1.32xlarge", "Block", "Spot"):  # no topic, no rule
        assert not resources(training[name], "AWS::Events::Rule"), name
    both = _one(training["Reserved"], "AWS::Events::Rule")["EventPattern"]["detail"]["status"]
    assert both == ["FAILED", "SUCCEEDED"]


def test_capacity_blocks_and_reservations_are_set_on_the_launch_template(training: dict[str, dict[str, Any]]) -> None:
    block = _one(training["Block"], "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert block["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert block["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}
    }
    reserved = _one(training["Reserved"], "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert "InstanceMarketOptions" not in reserved
    assert reserved["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0fedcba9876543210"
    }
    spot = _one(training["Spot"], "AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert (spot["Type"], spot["AllocationStrategy"]) == ("SPOT", "SPOT_PRICE_CAPACITY_OPTIMIZED")


@pytest.mark.parametrize(
    ("name", "strategy", "logical_id"),
    [
        ("trn1.32xlarge", "BEST_FIT_PROGRESSIVE", "ComputeEnvironmentBestFitProgressive"),
        ("Block", "BEST_FIT_PROGRESSIVE", "ComputeEnvironmentBestFitProgressive"),
        ("Reserved", "BEST_FIT_PROGRESSIVE", "ComputeEnvironmentBestFitProgressive"),
        ("Spot", "SPOT_PRICE_CAPACITY_OPTIMIZED", "ComputeEnvironment"),
    ],
)
def test_a_new_ami_updates_the_compute_environment_in_place_and_lets_running_jobs_finish(
    name: str, strategy: str, logical_id: str, training: dict[str, dict[str, Any]]
) -> None:
    # AWS Batch performs infrastructure updates (a new image, launch template or placement group) only for these
    # strategies; with BEST_FIT and ReplaceComputeEnvironment false the stack update that changes the AMI fails.
    ((key, environment),) = resources(training[name], "AWS::Batch::ComputeEnvironment").items()
    properties = environment["Properties"]
    assert properties["ComputeResources"]["AllocationStrategy"] == strategy
    assert properties["ReplaceComputeEnvironment"] is False
    assert properties["UpdatePolicy"] == {"TerminateJobsOnUpdate": False, "JobExecutionTimeoutMinutes": 3 * 24 * 60}
    # Environments that were BEST_FIT cannot change strategy in place: theirs is a new resource, Spot's kept its id.
    prefix = _queue_id(name) if name == "trn1.32xlarge" else name
    assert key[len(prefix) : -8] == logical_id


@pytest.mark.e2e  # cfn-lint runs on the examples in the everyday loop, on test stacks in make test-e2e
def test_deploy_time_values_in_a_command_reach_the_job_as_arguments(training: dict[str, dict[str, Any]]) -> None:
    """A CfnParameter string is one argument; a CommaDelimitedList's items are spliced in at deploy time."""
    definitions = {
        id: r["Properties"]["ContainerProperties"]["Command"]
        for id, r in resources(training["Parameterized"], "AWS::Batch::JobDefinition").items()
    }
    script = next(c for id, c in definitions.items() if "Script" in id)
    assert script[3:] == ["neuron-launch", "python", {"Ref": "Script"}]
    arguments = next(c for id, c in definitions.items() if "Arguments" in id)
    separator, joined = arguments["Fn::Split"]
    delimiter, parts = joined["Fn::Join"]
    assert separator == delimiter == "\u001f"
    literal, items = parts  # the CDK joins the literal arguments into one part ahead of the items
    assert literal.split(separator) == ["/bin/bash", "-c", LAUNCHER, "neuron-launch", "python", "train.py"]
    assert items == {"Fn::Join": [separator, {"Ref": "Arguments"}]}


@pytest.mark.e2e  # cfn-lint runs with the deploys (make test-e2e, CI)
def test_the_training_template_passes_cfn_lint(training: dict[str, dict[str, Any]]) -> None:
    from cfnlint.api import ManualArgs, lint

    # The stack with every capacity choice, storage and EFA on trn1 and trn2 (the per-type stack repeats its parts).
    matches = lint(json.dumps(training["Choices"]), config=ManualArgs(regions=["us-east-1"]))
    assert [f"{m.rule.id} {m.message}" for m in matches] == []


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        (
            {"AWS_BATCH_JOB_NUM_NODES": "4", "AWS_BATCH_JOB_NODE_INDEX": "2"},
            {"NNODES": "4", "NODE_RANK": "2", "MASTER_PORT": "41000"},
        ),
        (
            {
                "AWS_BATCH_JOB_NUM_NODES": "4",
                "AWS_BATCH_JOB_NODE_INDEX": "3",
                "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.1.7",
            },
            {
                "NODE_RANK": "3",
                "MASTER_ADDR": "10.0.1.7",
                "NEURON_RT_ROOT_COMM_ID": "10.0.1.7:46820",
                "PET_NNODES": "4",
                "PET_NODE_RANK": "3",
                "PET_MASTER_ADDR": "10.0.1.7",
                "PET_MASTER_PORT": "41000",
            },
        ),
    ],
    ids=["main-node", "child-node"],
)
def test_the_launcher_sets_torchrun_s_rank_and_world_from_batch(
    environment: dict[str, str], expected: dict[str, str]
) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_BATCH", "MASTER_", "NEURON_RT", "PET_"))}
    result = subprocess.run(
        ["bash", "-c", LAUNCHER, "neuron-launch", "env"],
        env={**clean, **environment},
        capture_output=True,
        text=True,
        check=True,
    )
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert {k: seen[k] for k in expected} == expected
    assert seen["MASTER_ADDR"] and seen["NEURON_RT_ROOT_COMM_ID"] == f"{seen['MASTER_ADDR']}:46820"


def test_with_monitoring_the_launcher_publishes_neuron_monitor_s_reports_while_the_job_runs(tmp_path: Any) -> None:
    """A stand-in neuron-monitor that prints the Neuron user guide's sample report; the job's output then carries
    the CloudWatch metric line, and the job's own command still runs."""
    from pathlib import Path

    from neuron_constructs.monitoring.daemons import publisher_source

    sample = (Path(__file__).parent / "data" / "neuron_monitor_sample.json").read_text()
    (tmp_path / "neuron-monitor").write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(json.loads(sample))}\nEOF\n")
    (tmp_path / "neuron-monitor").chmod(0o755)
    environment = {
        "PATH": f"{tmp_path}:{os.environ['PATH']}",
        "NEURON_MONITOR_EMF": publisher_source(),
        "NEURON_MONITOR_CONFIG": "{}",
        "NEURON_MONITOR_CLUSTER": "training-queue",
        "TMPDIR": str(tmp_path),  # neuron-monitor's configuration file
    }
    result = subprocess.run(
        ["bash", "-c", LAUNCHER, "neuron-launch", "sh", "-c", "sleep 0.3; echo trained"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert "trained" in lines
    metrics, tagged = [json.loads(line) for line in lines if line.startswith("{")]
    assert metrics["ClusterName"] == "training-queue" and metrics["InstanceId"] == "i-0011223344556677a"
    assert tagged["Model"] == "my_app_1"  # the sample's one application carries a NEURON_PROCESS_TAG


def test_without_neuron_monitor_in_the_image_the_job_still_runs_and_says_why() -> None:
    result = subprocess.run(
        ["/bin/bash", "-c", LAUNCHER, "neuron-launch", "/bin/echo", "trained"],
        env={"PATH": "/nonexistent", "NEURON_MONITOR_EMF": "x", "NEURON_MONITOR_CONFIG": "{}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "no neuron-monitor" in result.stderr and result.stdout.strip() == "trained"


def test_a_launcher_that_cannot_start_neuron_monitor_still_runs_the_job(tmp_path: Any) -> None:
    (tmp_path / "neuron-monitor").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "neuron-monitor").chmod(0o755)
    environment = {
        "PATH": f"{tmp_path}:{os.environ['PATH']}",
        "TMPDIR": str(tmp_path / "not-there"),  # mktemp fails, as on a read-only /tmp
        "NEURON_MONITOR_EMF": "x",
    }
    result = subprocess.run(
        ["bash", "-c", LAUNCHER, "neuron-launch", "echo", "trained"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.strip() == "trained"
    assert "cannot write neuron-monitor's configuration" in result.stderr


def test_shared_storage_is_lustre_in_the_nodes_subnet_mounted_everywhere_with_the_compile_cache(
    training: dict[str, dict[str, Any]],
) -> None:
    template = training["Shared"]
    file_system = _one(template, "AWS::FSx::FileSystem")
    compute = _one(template, "AWS::Batch::ComputeEnvironment")["ComputeResources"]
    assert file_system["SubnetIds"] == compute["Subnets"]
    assert (file_system["LustreConfiguration"]["DeploymentType"], file_system["StorageCapacity"]) == (
        "PERSISTENT_2",
        1200,
    )
    association = _one(template, "AWS::FSx::DataRepositoryAssociation")
    assert (association["FileSystemPath"], association["DataRepositoryPath"]) == ("/data", "s3://team-datasets/")
    (storage_group,) = file_system["SecurityGroupIds"]
    nodes = next(k for k in resources(template, "AWS::EC2::SecurityGroup") if "StorageSecurityGroup" not in k)
    from_nodes = [
        r["Properties"]
        for r in resources(template, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"] == storage_group
        and r["Properties"].get("SourceSecurityGroupId") == {"Fn::GetAtt": [nodes, "GroupId"]}
    ]
    assert [(r["FromPort"], r["ToPort"]) for r in from_nodes] == [(988, 988), (1018, 1023)]
    user_data = json.dumps(_one(template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"])
    assert "dnf install -y lustre-client" in user_data and "mount -t lustre" in user_data
    assert "if ! mountpoint -q /fsx; then" in user_data
    container = _container(template)
    assert container["Volumes"][0] == {"Host": {"SourcePath": "/fsx"}, "Name": "shared"}
    assert container["MountPoints"][0] == {"ContainerPath": "/fsx", "SourceVolume": "shared"}
    environment = {e["Name"]: e["Value"] for e in container["Environment"]}
    assert environment["NEURON_COMPILE_CACHE_URL"] == "/fsx/neuron-compile-cache"
    assert environment["NEURON_PREFLIGHT_LUSTRE"] == "/fsx"  # the preflight checks the mount from the container


def _mount(tmp_path: Any, mount_status: int) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The user data's mount commands in bash, with ``dnf``, ``mount``, ``mountpoint`` and ``sleep`` stood in for:
    ``mount`` exits ``mount_status`` (and, on 0, leaves the mark ``mountpoint`` looks for)."""
    bin_dir, mounted, calls = tmp_path / "bin", tmp_path / "mounted", tmp_path / "calls"
    bin_dir.mkdir()
    for name, body in {
        "dnf": "exit 0",
        "sleep": "exit 0",
        "mount": f'echo "$*" >> {calls}; [ {mount_status} -eq 0 ] && touch {mounted}; exit {mount_status}',
        "mountpoint": f"[ -e {mounted} ]",
    }.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    script = "\n".join(mount_commands("fs-0123.fsx.us-east-1.amazonaws.com", "abcdefgh", str(tmp_path / "fsx")))
    result = subprocess.run(
        ["bash", "-c", script + "\necho after-the-mount"],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return result, calls.read_text().splitlines() if calls.exists() else []


def test_user_data_fails_on_a_failed_lustre_mount_before_writing_to_the_root_volume(tmp_path: Any) -> None:
    """GIVEN a mount that keeps failing WHEN the node boots THEN its user data tries three times, says so and exits 1:
    nothing after the mount runs, and no compile cache directory lands on the root volume."""
    result, calls = _mount(tmp_path, mount_status=32)
    assert result.returncode == 1
    assert len(calls) == 3 and calls[0].startswith("-t lustre -o relatime,flock fs-0123.fsx.us-east-1.amazonaws.com")
    assert result.stderr.strip() == (
        f"FSx for Lustre fs-0123.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh did not mount at {tmp_path / 'fsx'}; "
        "this node fails its preflight"
    )
    assert "after-the-mount" not in result.stdout and not (tmp_path / "fsx" / "neuron-compile-cache").exists()


def test_user_data_mounts_lustre_once_and_goes_on(tmp_path: Any) -> None:
    result, calls = _mount(tmp_path, mount_status=0)
    assert (result.returncode, len(calls), result.stdout.strip()) == (0, 1, "after-the-mount")
    assert (tmp_path / "fsx" / "neuron-compile-cache").is_dir()


def test_every_job_definition_carries_the_preflight_compressed_and_fits_aws_batch_s_24_kib(
    training: dict[str, dict[str, Any]],
) -> None:
    """AWS Batch registers job definitions of at most 24 KiB (AWS Batch guide: service quotas). The fullest one here
    (Shared: monitoring, storage and the collective preflight) carries the metrics publisher and the preflight; the
    preflight travels bzip2-compressed and base64-encoded and decodes to exactly the library's program."""
    packed = preflight_program()
    assert bz2.decompress(base64.b64decode(packed)).decode() == program_source(
        "neuron_constructs.programs", "preflight.py"
    )
    sizes = {
        logical_id: len(json.dumps(definition["Properties"], separators=(",", ":")))
        for template in training.values()
        for logical_id, definition in resources(template, "AWS::Batch::JobDefinition").items()
    }
    fullest = max(sizes, key=sizes.__getitem__)
    assert fullest.startswith("SharedTrain") and sizes[fullest] < 24 * 1024 - 2048, sizes  # room for resolved ids


@pytest.mark.parametrize(
    ("storage", "message"),
    [
        (LustreStorage(capacity_gib=1000), r"capacity_gib=1000\. \[NEURON027"),
        (LustreStorage(throughput_per_tib=200), r"throughput_per_tib=200\. \[NEURON027"),
        (LustreStorage(mount_path="fsx"), r"mount_path='fsx' is not an absolute path in normal form.*\[NEURON047"),
        (LustreStorage(mount_path="/"), r"mount_path='/' is not an absolute path.*below the root.*\[NEURON047"),
        (LustreStorage(mount_path="/fsx $(touch /tmp/pwned)"), r"mount_path='/fsx \$\(touch.*runs as root.*NEURON047"),
        (LustreStorage(mount_path="/fsx/../etc"), r"mount_path='/fsx/\.\./etc' is not an absolute.*\[NEURON047"),
        (LustreStorage(mount_path="/fsx/"), r"mount_path='/fsx/' is not an absolute path in normal form.*NEURON047"),
    ],
    ids=["capacity", "throughput", "mount-path", "root", "shell-substitution", "climbs", "not-normal"],
)
def test_storage_fsx_refuses_is_refused_at_the_call(storage: LustreStorage, message: str) -> None:
    from neuron_constructs import NeuronConfigurationError

    with pytest.raises(NeuronConfigurationError, match=message):
        NeuronTrainingQueue(Stack(App(), "Bad"), "Queue", instance_type="trn1.32xlarge", max_nodes=2, storage=storage)


def _job_stack() -> tuple[Stack, NeuronTrainingQueue]:
    stack = Stack(App(), "Jobs")
    return stack, NeuronTrainingQueue(stack, "Queue", instance_type="trn1.32xlarge", max_nodes=4)


@pytest.mark.parametrize(
    ("devices", "environment", "message"),
    [
        (None, {"NEURON_RT_VISIBLE_CORES": "0-63"}, r"NEURON_RT_VISIBLE_CORES=0-63 but the container maps cores 0-31"),
        ([4, 5, 6, 7], {"NEURON_RT_VISIBLE_CORES": "0-7"}, r"maps cores 8-15.*NEURON019"),
        ([0, 1, 2, 3], {"NEURON_RT_NUM_CORES": "16"}, r"NEURON_RT_NUM_CORES=16 but the container maps 8 NeuronCores"),
        (None, {"NEURON_RT_VISIBLE_CORES": "all"}, r"NEURON_RT_VISIBLE_CORES=all"),
    ],
)
def test_runtime_variables_that_contradict_the_job_s_devices_are_refused(
    devices: list[int] | None, environment: dict[str, str], message: str
) -> None:
    from neuron_constructs import NeuronConfigurationError

    _, queue = _job_stack()
    with pytest.raises(NeuronConfigurationError, match=message):
        queue.add_job("Job", nodes=2, image=IMAGE, command=["train"], devices=devices, environment=environment)


def test_runtime_variables_within_the_job_s_devices_and_dividing_degrees_are_accepted() -> None:
    _, queue = _job_stack()
    queue.add_job(
        "Job",
        nodes=4,
        image=IMAGE,
        command=["train"],
        devices=[4, 5, 6, 7],
        environment={"NEURON_RT_VISIBLE_CORES": "8-15", "NEURON_RT_NUM_CORES": "8"},
        tensor_parallel=8,
        pipeline_parallel=4,
    )
    # Trainium2 under LNC=1 runs 128 processes a node: 2 nodes x 128 = 256 = tensor 32 x pipeline 8.
    trn2 = NeuronTrainingQueue(Stack(App(), "Trn2"), "Queue", instance_type="trn2.48xlarge", max_nodes=2)
    trn2.add_job(
        "Job",
        nodes=2,
        image=IMAGE,
        command=["train"],
        environment={"NEURON_LOGICAL_NC_CONFIG": "1"},
        tensor_parallel=32,
        pipeline_parallel=8,
    )


def test_single_node_jobs_submit_without_node_overrides(training: dict[str, dict[str, Any]]) -> None:
    stack, queue = _job_stack()
    single = queue.add_job("Single", nodes=1, image=IMAGE, command=["train"])
    multi = queue.add_job("Multi", nodes=3, image=IMAGE, command=["train"])
    assert "--node-overrides" not in stack.resolve(single.submit_command)["Fn::Join"][1][-1]
    assert stack.resolve(multi.submit_command)["Fn::Join"][1][-1].endswith(" --node-overrides numNodes=3")
    single_node = _one(training["trn1.2xlarge"], "AWS::Batch::JobDefinition")
    assert single_node["Type"] == "container" and "NodeProperties" not in single_node


def test_the_job_s_own_command_on_a_machine_without_neuron_devices_exits_retryable_and_never_runs(
    training: dict[str, dict[str, Any]],
) -> None:
    """The synthesized job definition's command and environment, run here as a node would run them: this machine has
    no /dev/neuron0, so the preflight stops the node with 75 and torchrun never starts."""
    container = _container(training[_stack_name("trn1.2xlarge")])
    environment = {e["Name"]: e["Value"] for e in container["Environment"]}
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_BATCH", "NEURON_", "PET_", "MASTER_"))}
    result = subprocess.run(
        container["Command"], env={**clean, **environment}, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 75
    assert result.stderr == "neuron-preflight: node 0: 1 of 1 Neuron devices missing (/dev/neuron0 first)\n"
    assert "torchrun" not in result.stdout + result.stderr


def test_every_queue_with_efa_verifies_the_efa_installer_before_running_it(training: dict[str, dict[str, Any]]) -> None:
    with_efa = 0
    for template in training.values():
        for resource in template["Resources"].values():
            if resource["Type"] != "AWS::EC2::LaunchTemplate":
                continue
            user_data = json.dumps(resource["Properties"]["LaunchTemplateData"]["UserData"])
            if "efa_installer.sh" not in user_data:
                continue
            with_efa += 1
            assert EFA_INSTALLER.sha256 in user_data and "aws-efa-installer-latest" not in user_data
            assert user_data.index("sha256sum --check") < user_data.index("tar -xf") < user_data.index("efa_installer")
    assert with_efa >= 3  # trn1.32xlarge, trn1n.32xlarge, trn2.48xlarge at least


@pytest.mark.parametrize(
    ("checkpoint_dir", "message"),
    [
        ("/fsx/../var/ckpt", r"checkpoint_dir='/fsx/\.\./var/ckpt' climbs with '\.\.' \(to '/var/ckpt' as written\)"),
        ("s3:///run1", r"checkpoint_dir='s3:///run1' names the bucket '', which is not 3 to 63"),
        ("s3://ml ckpts/run1", r"checkpoint_dir='s3://ml ckpts/run1' names the bucket 'ml ckpts', which is not"),
    ],
    ids=["root-disk-through-dot-dot", "no-bucket", "bucket-with-a-space"],
)
def test_a_job_s_checkpoint_dir_off_the_storage_or_in_no_bucket_is_refused_at_add_job(
    checkpoint_dir: str, message: str
) -> None:
    """GIVEN a queue sharing FSx at /fsx WHEN add_job is given a checkpoint_dir that escapes it or names no valid
    bucket THEN NEURON066 is raised at the call, naming the job."""
    from neuron_constructs import NeuronConfigurationError

    queue = NeuronTrainingQueue(
        Stack(App(), "Jobs"), "Queue", instance_type="trn1.32xlarge", max_nodes=2, storage=LustreStorage()
    )
    with pytest.raises(NeuronConfigurationError, match=rf"^Jobs/Queue/Job: {message}.*\[NEURON066:"):
        queue.add_job("Job", nodes=2, image=IMAGE, command=["torchrun", "train.py"], checkpoint_dir=checkpoint_dir)


def _events_statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in document["Statement"] if s.get("Principal") == {"Service": "events.amazonaws.com"}]


def _rule_arn_name(condition: dict[str, Any]) -> str:
    """The rule name at the end of an ``aws:SourceArn`` condition (``Fn::Join`` of the partition, Region, account)."""
    parts = condition["ArnEquals"]["aws:SourceArn"]["Fn::Join"][1]
    assert parts[2] == ":events:" and parts[-1].startswith(":rule/"), parts
    return str(parts[-1].removeprefix(":rule/"))


def test_eventbridge_may_publish_to_the_alert_topic_and_use_its_key_only_for_the_queue_s_rule() -> None:
    """GIVEN an encrypted topic shared by two queues, one of them in another stack of the app, WHEN both send their job
    alerts to it, THEN the topic policy and the key policy trust events.amazonaws.com only with aws:SourceAccount and
    aws:SourceArn = each queue's rule, and no statement trusts it without them."""
    from aws_cdk import aws_kms as kms

    app = App(analytics_reporting=False)
    alerts = Stack(app, "Alerts")
    key = kms.Key(alerts, "Key", enable_key_rotation=True)
    topic = sns.Topic(alerts, "Topic", master_key=key, enforce_ssl=True)
    NeuronTrainingQueue(alerts, "Near", instance_type="trn1.2xlarge", max_nodes=1, notifications=topic)
    NeuronTrainingQueue(Stack(app, "Other"), "Far", instance_type="trn1.2xlarge", max_nodes=1, notifications=topic)
    assembly = app.synth()
    template = assembly.get_stack_by_name("Alerts").template
    rule_names = {
        _one({"Resources": {k: v}}, "AWS::Events::Rule")["Name"]
        for stack in ("Alerts", "Other")
        for k, v in assembly.get_stack_by_name(stack).template["Resources"].items()
        if v["Type"] == "AWS::Events::Rule"
    }
    assert len(rule_names) == 2
    documents = {
        "topic": _one(template, "AWS::SNS::TopicPolicy")["PolicyDocument"],
        "key": _one(template, "AWS::KMS::Key")["KeyPolicy"],
    }
    for what, document in documents.items():
        statements = _events_statements(document)
        assert {_rule_arn_name(s["Condition"]) for s in statements} == rule_names, what
        for statement in statements:
            assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}, what
    assert {s["Action"] for s in _events_statements(documents["topic"])} == {"sns:Publish"}
    for statement in _events_statements(documents["key"]):
        assert statement["Action"] == ["kms:Decrypt", "kms:GenerateDataKey*"]
    # the queue in the other stack names the rule: the topic's stack does not depend on it
    assert "Fn::ImportValue" not in json.dumps(template)


def test_job_logs_and_flow_logs_outlive_the_queue_by_default_and_follow_the_settings() -> None:
    """GIVEN a queue with its own VPC, THEN its job log group and flow log group are kept after the stack
    (DeletionPolicy Retain) with one month of events; WHEN log_removal_policy and log_retention are given, THEN both
    groups follow them."""
    from aws_cdk import RemovalPolicy
    from aws_cdk import aws_logs as logs

    app = App(analytics_reporting=False)
    default, chosen = Stack(app, "Default"), Stack(app, "Chosen")
    NeuronTrainingQueue(default, "Queue", instance_type="trn1.2xlarge", max_nodes=1)
    NeuronTrainingQueue(
        chosen,
        "Queue",
        instance_type="trn1.2xlarge",
        max_nodes=1,
        log_retention=logs.RetentionDays.ONE_YEAR,
        log_removal_policy=RemovalPolicy.DESTROY,
    )
    assembly = app.synth()
    for stack, policy, days in (("Default", "Retain", 30), ("Chosen", "Delete", 365)):
        groups = resources(assembly.get_stack_by_name(stack).template, "AWS::Logs::LogGroup")
        assert {k.split("Queue")[-1][:4] for k in groups} == {"Logs", "VpcF"}, groups.keys()
        for group in groups.values():
            assert (group["DeletionPolicy"], group["Properties"]["RetentionInDays"]) == (policy, days), stack


def test_a_single_node_job_runs_in_the_host_network_and_warns_neuron115_at_synth() -> None:
    """GIVEN a queue with a single-node job (AWS Batch runs it in the host network: "Networking modes for AWS Batch
    jobs") and a multi-node job (awsvpc, where ECS_AWSVPC_BLOCK_IMDS keeps it from the instance role) WHEN the app
    synthesizes THEN NEURON115 names the single-node job's container and not the multi-node one's."""
    from conftest import synth_warnings

    stack, queue = _job_stack()
    queue.add_job("Single", nodes=1, image=IMAGE, command=["train"])
    queue.add_job("Multi", nodes=2, image=IMAGE, command=["train"])
    app = stack.node.root
    assert isinstance(app, App)
    warnings = [w for w in synth_warnings(app) if "[NEURON115: " in w]
    assert len(warnings) == 1, warnings
    assert "Queue/Single" in warnings[0] and "its job runs in the host network" in warnings[0]
