"""Strict inputs: every public parameter is checked for type and range before anything is built.

Each case is a call a user could make; it must be refused with the rule-style message naming the
parameter (never a raw ``TypeError`` from jsii, never a nonsense number in the fix), or, for an
unknown option, a ``TypeError`` that names the method and the options it takes. The checks run
before anything is built, so the cases share one stack and one cluster.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import App, CfnParameter, Duration, Stack, Token
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from conftest import imported_vpc
from hypothesis import given, settings
from hypothesis import strategies as st

from neuron_constructs import (
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronFleet,
    NeuronInstanceType,
    NeuronService,
    NeuronTrainingQueue,
    SlicedNeuronService,
)
from neuron_constructs.base.arguments import seconds_of
from neuron_constructs.checks import inputs
from neuron_constructs.knowledge import rules as r

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")


class World:
    """One stack with a cluster holding an inf2.48xlarge and an inf2.xlarge group, and a manual task."""

    def __init__(self) -> None:
        self.stack = Stack(App(analytics_reporting=False), "In")
        self.cluster = NeuronCluster(self.stack, "C", vpc=imported_vpc(self.stack))
        self.cluster.add_ec2_capacity("Big", instance_type="inf2.48xlarge", max_capacity=2)
        self.cluster.add_ec2_capacity("Small", instance_type="inf2.xlarge", max_capacity=2)
        self.task = ManualNeuronTaskDefinition(self.stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
        self.task.add_neuron_container("model", image=IMAGE)
        self.count = 0

    def id(self) -> str:
        self.count += 1
        return f"X{self.count}"

    def token(self, kind: str = "Number") -> Any:
        parameter = CfnParameter(self.stack, self.id(), type=kind, default="1" if kind == "Number" else "inf2.xlarge")
        return parameter.value_as_number if kind == "Number" else parameter.value_as_string


@pytest.fixture(scope="module")
def world() -> World:
    return World()


def managed(w: World, **kwargs: Any) -> None:
    kwargs.setdefault("cpu", 4096)
    kwargs.setdefault("memory_mib", 8192)
    ManagedNeuronTaskDefinition(w.stack, w.id(), **kwargs)


def manual(w: World, **kwargs: Any) -> None:
    kwargs.setdefault("instance_type", "inf2.xlarge")
    ManualNeuronTaskDefinition(w.stack, w.id(), **kwargs)


def ec2_capacity(w: World, **kwargs: Any) -> None:
    kwargs.setdefault("instance_type", "inf2.xlarge")
    w.cluster.add_ec2_capacity(w.id(), **kwargs)


def sliced(w: World, **kwargs: Any) -> None:
    kwargs.setdefault("instance_type", "inf2.48xlarge")
    kwargs.setdefault("devices_per_task", 2)
    kwargs.setdefault("image", IMAGE)
    SlicedNeuronService(w.stack, w.id(), cluster=w.cluster, **kwargs)


def service(w: World, **kwargs: Any) -> None:
    kwargs.setdefault("task_definition", w.task)
    kwargs.setdefault("cluster", w.cluster)
    NeuronService(w.stack, w.id(), **kwargs)


def attached(w: World, **kwargs: Any) -> None:
    """A one-chip inf2.xlarge model on port 8080 attached to a new load balancer with ``kwargs``."""
    from neuron_constructs import NeuronLoadBalancer

    task = ManualNeuronTaskDefinition(w.stack, w.id(), instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    model = NeuronService(w.stack, w.id(), cluster=w.cluster, task_definition=task, desired_count=0)
    model.attach_to_listener(NeuronLoadBalancer(w.stack, w.id(), cluster=w.cluster).listener, **kwargs)


Case = tuple[str, Callable[[World], None], r.Rule, str]

CASES: list[Case] = [
    # -- sizes that can never work
    ("cpu=0", lambda w: managed(w, cpu=0), r.OUT_OF_RANGE, r"cpu=0 is below the minimum of 128"),
    ("cpu=64", lambda w: managed(w, cpu=64), r.OUT_OF_RANGE, r"cpu=64 is below the minimum of 128"),
    ("cpu=True", lambda w: managed(w, cpu=True), r.WRONG_TYPE, r"cpu=True is a bool"),
    ("cpu=2048.5", lambda w: managed(w, cpu=2048.5), r.WRONG_TYPE, r"cpu=2048.5 is a float.*whole number"),
    ("cpu=300000", lambda w: manual(w, cpu=300_000), r.OUT_OF_RANGE, r"cpu=300000 is above the maximum of 196608"),
    ("memory_mib=4", lambda w: managed(w, memory_mib=4), r.OUT_OF_RANGE, r"memory_mib=4 is below the minimum of 6"),
    ("memory_mib='4096'", lambda w: manual(w, memory_mib="4096"), r.WRONG_TYPE, r"memory_mib='4096' is a string"),
    ("desired_count=-3", lambda w: service(w, desired_count=-3), r.OUT_OF_RANGE, r"desired_count=-3 is below"),
    ("desired_count=1.0", lambda w: service(w, desired_count=1.0), r.WRONG_TYPE, r"desired_count=1.0 is a float"),
    ("root 0 GiB", lambda w: ec2_capacity(w, root_volume_gib=0), r.OUT_OF_RANGE, r"root_volume_gib=0 is below.*gp3"),
    (
        "root 10 GiB",
        lambda w: ec2_capacity(w, root_volume_gib=10),
        r.OUT_OF_RANGE,
        r"root_volume_gib=10 is below the minimum of 30 \(EC2: a root volume is at least its AMI's snapshot",
    ),
    (
        "training root 10 GiB",
        lambda w: NeuronTrainingQueue(w.stack, w.id(), instance_type="trn1.32xlarge", max_nodes=1, root_volume_gib=10),
        r.OUT_OF_RANGE,
        r"root_volume_gib=10 is below the minimum of 30",
    ),
    (
        "grace period of 30,000 days",
        lambda w: service(w, health_check_grace_period=Duration.days(30_000)),
        r.OUT_OF_RANGE,
        r"health_check_grace_period=30000 days.*pass health_check_grace_period from 0 s to 2,147,483,647 s",
    ),
    (
        "deregistration delay of 2 hours",
        lambda w: attached(w, deregistration_delay=Duration.hours(2)),
        r.OUT_OF_RANGE,
        r"deregistration_delay=2 hours.*pass deregistration_delay from 0 s to 3,600 s",
    ),
    (
        "root 100,000 GiB",
        lambda w: ec2_capacity(w, root_volume_gib=100_000),
        r.OUT_OF_RANGE,
        r"root_volume_gib=100000 is above the maximum of 65536.*from 30 to 65,536",
    ),
    (
        "task volume 0",
        lambda w: w.cluster.add_managed_instances_capacity(w.id(), task_volume_gib=0),
        r.OUT_OF_RANGE,
        r"task_volume_gib=0 is below the minimum of 1",
    ),
    ("max_capacity=2.5", lambda w: ec2_capacity(w, max_capacity=2.5), r.WRONG_TYPE, r"max_capacity=2.5 is a float"),
    ("min_capacity=-1", lambda w: ec2_capacity(w, min_capacity=-1), r.OUT_OF_RANGE, r"min_capacity=-1 is below"),
    ("instances=1.5", lambda w: sliced(w, instances=1.5), r.WRONG_TYPE, r"instances=1.5 is a float"),
    ("instances=-1", lambda w: sliced(w, instances=-1), r.OUT_OF_RANGE, r"instances=-1 is below"),
    ("devices_per_task=True", lambda w: sliced(w, devices_per_task=True), r.WRONG_TYPE, r"devices_per_task=True"),
    (
        "devices_per_task=0",
        lambda w: sliced(w, devices_per_task=0),
        r.SLICE_SIZE,
        r"devices_per_task=0 does not cut.*use devices_per_task in \[1, 2, 3, 4, 6, 12\] for inf2.48xlarge",
    ),
    (
        "fleet devices_per_task=0",
        lambda w: NeuronFleet(w.stack, w.id(), cluster=w.cluster, instance_type="inf2.48xlarge").add_model(
            "Model", devices_per_task=0, image=IMAGE
        ),
        r.FLEET_FULL,
        r"devices_per_task=0 is no device set the ring topology of inf2.48xlarge allows \(sizes 1, 2, 3, 4, 5",
    ),
    (
        "devices_per_task=-1",
        lambda w: sliced(w, devices_per_task=-1),
        r.OUT_OF_RANGE,
        r"devices_per_task=-1 is below the minimum of 0",
    ),
    (
        "min_healthy_percent=150",
        lambda w: service(w, min_healthy_percent=150),
        r.OUT_OF_RANGE,
        r"min_healthy_percent=150 is above the maximum of 100",
    ),
    (
        "max_healthy_percent=50",
        lambda w: service(w, max_healthy_percent=50),
        r.OUT_OF_RANGE,
        r"max_healthy_percent=50 is below the minimum of 100",
    ),
    (
        "container memory 4 MiB",
        lambda w: w.task.add_container(w.id(), image=IMAGE, memory_limit_mib=4),
        r.OUT_OF_RANGE,
        r"memory_limit_mib=4 is below the minimum of 6",
    ),
    (
        "container cpu 1.5",
        lambda w: w.task.add_container(w.id(), image=IMAGE, cpu=1.5),
        r.WRONG_TYPE,
        r"cpu=1.5 is a float",
    ),
    # -- types
    ("a string for a list", lambda w: manual(w, devices="01"), r.WRONG_TYPE, r"devices='01' is a string"),
    (
        "a string for accelerators",
        lambda w: w.cluster.add_managed_instances_capacity(w.id(), accelerators="inferentia2"),
        r.WRONG_TYPE,
        r"accelerators='inferentia2' is a string.*list of strings",
    ),
    (
        "a string for command",
        lambda w: w.task.add_container(w.id(), image=IMAGE, command="serve --port 80"),
        r.WRONG_TYPE,
        r"command='serve --port 80' is a string.*list of strings",
    ),
    ("a VPC id for vpc", lambda w: NeuronCluster(w.stack, w.id(), vpc="vpc-0123"), r.WRONG_TYPE, r"vpc='vpc-0123'"),
    (
        "an image name for image",
        lambda w: sliced(w, image="busybox"),
        r.WRONG_TYPE,
        r"image='busybox' is a string.*aws_ecs.ContainerImage",
    ),
    (
        "a plain task definition",
        lambda w: service(w, task_definition=w.task.task_definition),
        r.WRONG_TYPE,
        r"task_definition=.* is an aws_ecs.TaskDefinition"
        r".*pass task_definition as a neuron_constructs.NeuronTaskDefinition",
    ),
    (
        "a cluster that is not a NeuronCluster",
        lambda w: service(w, cluster=w.cluster.cluster),
        r.WRONG_TYPE,
        r"cluster=.* is an aws_ecs.Cluster.*pass cluster as a neuron_constructs.NeuronCluster",
    ),
    ("a number for a name", lambda w: ec2_capacity(w, instance_type=42), r.WRONG_TYPE, r"instance_type=42 is an int"),
    (
        "a string for a bool",
        lambda w: NeuronCluster(w.stack, w.id(), container_insights="yes"),
        r.WRONG_TYPE,
        r"container_insights='yes' is a string.*True or False",
    ),
    (
        "a string for the environment",
        lambda w: w.task.add_container(w.id(), image=IMAGE, environment={"PORT": 8080}),
        r.WRONG_TYPE,
        r"environment\['PORT'\]=8080 is an int",
    ),
    (
        "an int in the environment",
        lambda w: sliced(w, environment={"NEURON_RT_NUM_CORES": 4}),
        r.WRONG_TYPE,
        r"environment\['NEURON_RT_NUM_CORES'\]=4 is an int.*pass environment\['NEURON_RT_NUM_CORES'\] as a string",
    ),
    ("None among the devices", lambda w: manual(w, devices=[0, None]), r.WRONG_TYPE, r"devices\[1\] is None"),
    ("no scope", lambda w: NeuronCluster(None, w.id()), r.WRONG_TYPE, r"scope is None.*constructs.Construct"),
    # -- tokens
    (
        "a CfnParameter instance type",
        lambda w: ec2_capacity(w, instance_type=w.token("String")),
        r.TOKEN_NOT_LITERAL,
        r"instance_type is a CDK token",
    ),
    ("a CfnParameter cpu", lambda w: managed(w, cpu=w.token()), r.TOKEN_NOT_LITERAL, r"cpu is a CDK token"),
    (
        "a CfnParameter desired count",
        lambda w: service(w, desired_count=w.token()),
        r.TOKEN_NOT_LITERAL,
        r"desired_count is a CDK token",
    ),
    (
        "a CfnParameter instances",
        lambda w: sliced(w, instances=w.token()),
        r.TOKEN_NOT_LITERAL,
        r"instances is a CDK token",
    ),
    (
        "a CfnParameter NEURON_RT_NUM_CORES",
        lambda w: sliced(w, environment={"NEURON_RT_NUM_CORES": w.token("String")}),
        r.TOKEN_NOT_LITERAL,
        r"environment NEURON_RT_NUM_CORES is a CDK token",
    ),
]


@pytest.mark.parametrize(("build", "rule", "text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_refused_with_the_rule(
    world: World, build: Callable[[World], None], rule: r.Rule, text: str
) -> None:
    with pytest.raises(NeuronConfigurationError) as raised:
        build(world)
    message = str(raised.value)
    assert re.search(text, message), message
    assert f"[{rule.id}: {rule.aws_rule}] Fix: " in message
    assert "e+" not in message  # no token number like -1.888e+289 anywhere


def test_unknown_container_option_names_the_method_and_the_options(world: World) -> None:
    with pytest.raises(TypeError) as raised:
        world.task.add_neuron_container("late", image=IMAGE, health_check_grace_period=60)  # type: ignore[call-arg]
    message = str(raised.value)
    assert message.startswith("ManualNeuronTaskDefinition.add_neuron_container() got an unexpected keyword argument")
    assert "'health_check_grace_period'" in message and "memory_limit_mib" in message


def test_unknown_sliced_option_names_the_class(world: World) -> None:
    with pytest.raises(TypeError, match=r"^SlicedNeuronService\(\) got an unexpected keyword argument 'desired_count'"):
        sliced(world, desired_count=2)


def test_missing_image_names_the_method(world: World) -> None:
    with pytest.raises(
        TypeError, match=r"^ManualNeuronTaskDefinition.add_container\(\) missing a required argument: 'image'"
    ):
        world.task.add_container(world.id())


def test_missing_required_argument_names_the_class(world: World) -> None:
    with pytest.raises(TypeError, match=r"^ManagedNeuronTaskDefinition\(\) missing a required argument: 'memory_mib'"):
        ManagedNeuronTaskDefinition(world.stack, world.id(), cpu=1024)  # type: ignore[call-arg]


def test_catalog_entries_are_accepted_wherever_an_instance_type_is(world: World) -> None:
    big = NeuronInstanceType.of("inf2.48xlarge")
    cluster = NeuronCluster(world.stack, world.id(), vpc=imported_vpc(world.stack))
    cluster.add_ec2_capacity("Big", instance_type=big, max_capacity=1)
    cluster.add_managed_instances_capacity("Mi", instance_types=[NeuronInstanceType.of("inf2.8xlarge")])
    sliced_service = SlicedNeuronService(
        world.stack, world.id(), cluster=cluster, instance_type=big, devices_per_task=6, image=IMAGE
    )
    assert sliced_service.instance_type is big and len(sliced_service.services) == 2
    assert cluster.managed_instances_capacities[0].allowed_instance_type_patterns == ("inf2.8xlarge",)


def test_tokens_are_fine_where_no_rule_reads_them(world: World) -> None:
    task = ManagedNeuronTaskDefinition(world.stack, world.id(), cpu=1024, memory_mib=2048, family=world.token("String"))
    task.add_neuron_container("model", image=IMAGE, environment={"MODEL_ID": world.token("String")})
    assert task.neuron_container is not None


def test_auto_scale_bounds_are_checked(world: World) -> None:
    cluster = NeuronCluster(world.stack, world.id(), vpc=imported_vpc(world.stack))
    cluster.add_ec2_capacity("Big", instance_type="inf2.48xlarge", max_capacity=3)
    sliced_service = SlicedNeuronService(
        world.stack, world.id(), cluster=cluster, instance_type="inf2.48xlarge", devices_per_task=12, image=IMAGE
    )
    with pytest.raises(NeuronConfigurationError, match=r"min_count=3 is above max_count=1"):
        sliced_service.auto_scale(min_count=3, max_count=1)
    with pytest.raises(NeuronConfigurationError, match=r"\[NEURON026"):
        sliced_service.auto_scale(min_count=0, max_count=True)  # type: ignore[arg-type]


def test_imported_resources_are_accepted_everywhere() -> None:
    """What ``from_*`` methods return (jsii interface proxies) passes the type checks: existing VPCs, roles,
    keys, log groups and security groups are how most teams use the library."""
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_logs as logs

    stack = Stack(App(analytics_reporting=False), "Imported")
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
    )
    key = kms.Key.from_key_arn(
        stack, "Key", "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    )
    group = ec2.SecurityGroup.from_security_group_id(stack, "Sg", "sg-0123456789abcdef0")
    task_role = iam.Role.from_role_arn(stack, "TaskRole", "arn:aws:iam::111122223333:role/model")
    execution_role = iam.Role.from_role_name(stack, "ExecutionRole", "model-execution")
    log_group = logs.LogGroup.from_log_group_name(stack, "Logs", "/teams/model")

    cluster = NeuronCluster(stack, "C", vpc=vpc, log_encryption_key=key)
    managed = cluster.add_managed_instances_capacity("Managed", security_groups=[group])
    assert managed.security_group is group
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    task = ManagedNeuronTaskDefinition(
        stack,
        "Task",
        cpu=4096,
        memory_mib=8192,
        task_role=task_role,
        execution_role=execution_role,
        log_group=log_group,
    )
    task.add_neuron_container("model", image=IMAGE)
    assert task.task_role is task_role
    NeuronService(stack, "Service", cluster=cluster, task_definition=task)
    sliced = SlicedNeuronService(
        stack,
        "Sliced",
        cluster=cluster,
        instance_type="inf2.48xlarge",
        devices_per_task=6,
        image=IMAGE,
        task_role=task_role,
    )
    assert sliced.services
    assert sliced.log_group is not log_group and task.log_group is log_group

    template = stack.node.root.synth().get_stack_by_name("Imported").template
    subnets = [
        r["Properties"]["VPCZoneIdentifier"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"
    ]
    assert subnets == [["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]]


# ---------------------------------------------------------------- checkpoint_dir (NEURON066) ---

CHECKPOINT_REFUSED = [
    pytest.param("/fsx/../var/ckpt", r"climbs with '\.\.' \(to '/var/ckpt' as written\)", id="dot-dot-escape"),
    pytest.param("/fsx/run/../other", r"climbs with '\.\.'", id="dot-dot-inside"),
    pytest.param("s3:///run1", r"names the bucket '', which is not 3 to 63", id="s3-no-bucket"),
    pytest.param("s3://ml ckpts/run1", r"names the bucket 'ml ckpts', which is not 3 to 63", id="s3-space"),
    pytest.param("s3://ML-Ckpts/run1", r"bucket 'ML-Ckpts', which is not 3 to 63 lowercase", id="s3-uppercase"),
    pytest.param("s3://ab/run1", r"bucket 'ab', which is not 3 to 63", id="s3-short"),
    pytest.param("s3://" + "a" * 64 + "/run1", r"which is not 3 to 63", id="s3-long"),
    pytest.param("s3://-ckpts/run1", r"beginning and ending with a letter or digit", id="s3-leading-hyphen"),
    pytest.param("s3://ml..ckpts/run1", r"has two adjacent periods", id="s3-adjacent-periods"),
    pytest.param("s3://192.168.5.4/run1", r"is formatted as an IP address", id="s3-ip-address"),
    pytest.param("s3://xn--ckpts/run1", r"reserved prefix 'xn--'", id="s3-xn-prefix"),
    pytest.param("s3://sthree-ckpts/run1", r"reserved prefix 'sthree-'", id="s3-sthree-prefix"),
    pytest.param("s3://ckpts-s3alias/run1", r"reserved suffix '-s3alias'", id="s3-alias-suffix"),
    pytest.param("s3://ckpts--ol-s3/run1", r"reserved suffix '--ol-s3'", id="s3-object-lambda-suffix"),
    pytest.param("s3://ml-ckpts", r"names no key prefix", id="s3-no-prefix"),
    pytest.param("s3://ml-ckpts/", r"names no key prefix", id="s3-slash-only"),
    pytest.param("s3://ml-ckpts/run1/../run2", r"'\.\.' segment in its key prefix", id="s3-dot-dot-key"),
    pytest.param("s3://ml-ckpts/a//b", r"empty, '\.' or '\.\.' segment", id="s3-empty-segment"),
    pytest.param("s3://ml-ckpts/" + "k" * 1025, r"longer than 1024 bytes", id="s3-key-too-long"),
    pytest.param("fsx/ckpt", r"neither an absolute path nor an s3://bucket/prefix URL", id="relative"),
    pytest.param("./ckpt", r"neither an absolute path", id="dot-relative"),
    pytest.param("S3://ml-ckpts/run1", r"neither an absolute path", id="scheme-case"),
    pytest.param("/fsx/a/./b", r"is not in normal form; write '/fsx/a/b'", id="dot-segment"),
    pytest.param("/fsx//ckpt", r"is not in normal form; write '/fsx/ckpt'", id="double-slash"),
    pytest.param("/fsx/ckpt/", r"is not in normal form; write '/fsx/ckpt'", id="trailing-slash"),
    pytest.param(
        "/fsxother/ckpt", r"is not on shared storage: the queue's nodes share a path under /fsx", id="sibling"
    ),
    pytest.param("//fsx/ckpt", r"is not on shared storage", id="double-leading-slash"),
    pytest.param("/var/ckpt", r"is not on shared storage", id="root-disk"),
    pytest.param("/fsx/ckpt\n/etc", r"holds a control character", id="newline"),
    pytest.param("/fsx/" + "d/" * 2100 + "x", r"longer than 4096 bytes", id="path-too-long"),
]


@pytest.mark.parametrize(("given", "message"), CHECKPOINT_REFUSED)
def test_checkpoint_dir_that_no_node_reaches_or_escapes_its_storage_is_refused(given: str, message: str) -> None:
    """GIVEN a queue sharing /fsx WHEN a job's checkpoint_dir climbs out of it, is not absolute or not in normal form,
    or names a bucket S3 does not allow or no key prefix THEN NEURON066 names the job, the problem and the fix."""
    with pytest.raises(NeuronConfigurationError, match=message) as raised:
        inputs.check_checkpoint_dir("App/Queue/Job", given, "/fsx")
    assert str(raised.value).startswith("App/Queue/Job: checkpoint_dir=") and "[NEURON066:" in str(raised.value)
    assert "Fix: pass checkpoint_dir= an absolute path in normal form" in str(raised.value)


CHECKPOINT_ACCEPTED = [
    "/fsx",
    "/fsx/checkpoints/run1",
    "/fsx/data/checkpoints/llama-3 8b",
    "/fsx/a..b/c",  # '..' inside a name is a name
    "s3://ml-ckpts/run1",
    "s3://ml.ckpts.2026/team/run1/",
    "s3://abc/x",
    "s3://" + "a" * 63 + "/run1",
    "s3://ml-ckpts/" + "k" * 1024,
]


@pytest.mark.parametrize("given", CHECKPOINT_ACCEPTED)
def test_checkpoint_dir_on_the_storage_or_in_a_valid_bucket_is_written_as_given(given: str) -> None:
    """GIVEN a normal path under /fsx or an s3:// URL S3 can hold WHEN checked THEN it is accepted unchanged."""
    assert inputs.check_checkpoint_dir("App/Queue/Job", given, "/fsx") == given


def test_a_local_checkpoint_dir_without_storage_is_refused() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"is not on shared storage: the queue's nodes share no shared"):
        inputs.check_checkpoint_dir("App/Queue/Job", "/fsx/ckpt", None)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("/.a-xs3:"), max_size=30).map(lambda tail: "/fsx/" + tail))
def test_an_accepted_local_checkpoint_dir_never_leaves_the_storage(text: str) -> None:
    """Whatever text follows /fsx/: what is accepted is its own normal form, at or under /fsx, with no '..'."""
    try:
        accepted = inputs.check_checkpoint_dir("App/Queue/Job", text, "/fsx")
    except NeuronConfigurationError as error:
        assert "[NEURON066:" in str(error)
        return
    assert accepted == text == posixpath.normpath(text)
    assert ".." not in accepted.split("/") and (accepted == "/fsx" or accepted.startswith("/fsx/"))


# --- One spelling for the scaling bounds -------------------------------------------------------------


def _scaling_kind(world: World, kind: str) -> Any:
    """A fresh ``kind`` (``NeuronService``, ``SlicedNeuronService`` or ``FleetModel``) behind a load balancer, on a
    cluster of its own."""
    from neuron_constructs import NeuronLoadBalancer

    cluster = NeuronCluster(world.stack, world.id(), vpc=imported_vpc(world.stack))
    target: Any
    if kind == "NeuronService":
        cluster.add_ec2_capacity("Small", instance_type="inf2.xlarge", max_capacity=4)
        task = ManualNeuronTaskDefinition(world.stack, world.id(), instance_type="inf2.xlarge", memory_mib=8192)
        task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
        target = NeuronService(world.stack, world.id(), cluster=cluster, task_definition=task)
    elif kind == "SlicedNeuronService":
        target = SlicedNeuronService(
            world.stack,
            world.id(),
            cluster=cluster,
            instance_type="inf2.48xlarge",
            devices_per_task=6,
            image=IMAGE,
            port_mappings=[ecs.PortMapping(container_port=8080)],
            capacity=cluster.add_ec2_capacity("Slices", instance_type="inf2.48xlarge", max_capacity=4),
        )
    else:
        copies = cluster.add_ec2_capacity("Copies", instance_type="inf2.48xlarge", max_capacity=4)
        fleet = NeuronFleet(world.stack, world.id(), cluster=cluster, instance_type="inf2.48xlarge", capacity=copies)
        target = fleet.add_model(
            "Embed", image=IMAGE, cores_per_task=1, copies=2, port_mappings=[ecs.PortMapping(container_port=8080)]
        )
    balancer = NeuronLoadBalancer(world.stack, world.id(), cluster=cluster)
    target.attach_to_listener(
        balancer.listener, priority=10, conditions=[elbv2.ListenerCondition.path_patterns(["/m/*"])]
    )
    return target


def _scaling_kinds(world: World) -> dict[str, Any]:
    """One fresh service of each kind."""
    return {kind: _scaling_kind(world, kind) for kind in ("NeuronService", "SlicedNeuronService", "FleetModel")}


SCALING_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("scale_on_requests", {"requests_per_target": 60}),
    ("scale_on_neuron_utilization", {}),
]


@pytest.mark.parametrize("kind", ["NeuronService", "SlicedNeuronService", "FleetModel"])
@pytest.mark.parametrize(("method", "extra"), SCALING_CALLS)
def test_every_scaling_method_of_every_service_takes_min_count_and_max_count(
    world: World, kind: str, method: str, extra: dict[str, Any]
) -> None:
    target = _scaling_kind(world, kind)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current spelling warns about nothing
        made = getattr(target, method)(min_count=1, max_count=2, **extra)
    targets = made if isinstance(made, list) else [made]
    assert targets and all(t is not None for t in targets)


@pytest.mark.parametrize("method", ["scale_on_requests", "scale_on_neuron_utilization", "auto_scale"])
@pytest.mark.parametrize("kind", ["SlicedNeuronService", "FleetModel"])
def test_the_fleets_old_min_and_max_instances_still_work_with_a_deprecation_warning(
    world: World, kind: str, method: str
) -> None:
    target = _scaling_kind(world, kind)
    extra = {"requests_per_target": 60} if method == "scale_on_requests" else {}
    with pytest.warns(DeprecationWarning) as warned:
        targets = getattr(target, method)(min_instances=1, max_instances=2, **extra)
    messages = [str(w.message) for w in warned]
    assert any("min_instances=" in m and "pass min_count=" in m and "0.3.0" in m for m in messages), messages
    assert any("max_instances=" in m and "pass max_count=" in m for m in messages), messages
    assert all(w.filename == __file__ for w in warned), "the warning points at the caller's line"
    assert len(targets) == len(target.copy_services) and target._scaling_bounds == (1, 2)


def test_both_spellings_of_one_bound_at_once_are_refused_naming_the_one_to_keep(world: World) -> None:
    model = _scaling_kind(world, "FleetModel")
    with pytest.raises(TypeError, match=r"got both min_instances= and min_count=: .* pass only min_count="):
        model.auto_scale(min_instances=1, min_count=1, max_count=2)  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def refusing_kinds() -> dict[str, Any]:
    """One of each kind of service for the calls refused before they change anything (the keyword checks)."""
    return _scaling_kinds(World())


@pytest.mark.xdist_group("refusing_kinds")  # one worker builds the module's services once
@pytest.mark.parametrize(
    ("kind", "method", "wrong", "right"),
    [
        ("NeuronService", "scale_on_requests", "min_instances", "min_count"),
        ("NeuronService", "scale_on_neuron_utilization", "max_instances", "max_count"),
        ("NeuronService", "scale_on_requests", "max_capacity", "max_count"),
        ("SlicedNeuronService", "auto_scale", "max_capacity", "max_count"),
        ("FleetModel", "scale_on_requests", "max_tasks", "max_count"),
        ("FleetModel", "scale_on_neuron_utilization", "max_cout", "max_count"),
    ],
)
def test_a_wrong_scaling_keyword_suggests_the_right_one_and_lists_what_the_method_takes(
    refusing_kinds: dict[str, Any], kind: str, method: str, wrong: str, right: str
) -> None:
    target = refusing_kinds[kind]
    with pytest.raises(TypeError) as raised:
        getattr(target, method)(**{wrong: 2})
    message = str(raised.value)
    assert message.startswith(f"{kind}.{method}() got an unexpected keyword argument {wrong!r}"), message
    assert f"(did you mean {right!r}?)" in message
    assert "; it takes: " in message and "max_count" in message.split("; it takes: ")[1]


def test_a_duration_is_read_from_the_runtime_once_and_a_deploy_time_one_is_unknown(jsii_requests: list[str]) -> None:
    grace = Duration.minutes(2)
    jsii_requests.clear()
    assert seconds_of(grace) == 120.0
    first = len(jsii_requests)
    assert seconds_of(grace) == 120.0
    assert len(jsii_requests) == first
    deploy_time = Token.as_number(CfnParameter(Stack(), "Grace", type="Number"))
    assert seconds_of(Duration.seconds(deploy_time)) is None
    assert seconds_of(Duration.minutes(deploy_time)) is None
