"""A compile cache per engine: the image table's engine decides what a CompileCache sets in a container."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match
from conftest import imported_vpc, resources

from neuron_constructs import (
    CompileCache,
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronConfigurationError,
)
from neuron_constructs.knowledge import engines
from neuron_constructs.knowledge.container_images import (
    IMAGES,
    INF1_INFERENCE,
    LIBRARY_IMAGES,
    VLLM,
    VLLM_TRN2,
)


def _image(image: Any) -> ecs.ContainerImage:
    return ecs.ContainerImage.from_registry(image.reference)


def _efs_stack() -> tuple[Stack, CompileCache, ec2.SecurityGroup]:
    stack = Stack(App(analytics_reporting=False), "Vllm")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
    tasks = ec2.SecurityGroup(stack, "Tasks", vpc=vpc)
    cache = CompileCache.in_new_file_system(stack, "Cache", vpc=vpc, clients=[tasks])
    return stack, cache, tasks


def _vllm_neuron(stack: Stack, id: str, cache: CompileCache) -> ManualNeuronTaskDefinition:
    task = ManualNeuronTaskDefinition(stack, id, instance_type="trn2.48xlarge", memory_mib=65536)
    task.add_neuron_container("vllm", image=_image(VLLM_TRN2), compile_cache=cache)
    return task


@pytest.fixture(scope="module")
def vllm_neuron() -> dict[str, Any]:
    stack, cache, _ = _efs_stack()
    _vllm_neuron(stack, "Llm", cache)
    _vllm_neuron(stack, "Coder", cache)
    template = App.of(stack).synth().get_stack_by_name("Vllm").template  # type: ignore[union-attr]
    group = stack.node.find_child("Tasks").node.default_child
    assert isinstance(group, ec2.CfnSecurityGroup)
    return {"template": template, "tasks": stack.resolve(stack.get_logical_id(group))}


def _task(template: dict[str, Any], prefix: str) -> dict[str, Any]:
    return next(v for k, v in resources(template, "AWS::ECS::TaskDefinition").items() if k.startswith(prefix))


def test_a_vllm_neuron_container_gets_the_remote_tier_the_local_tier_and_the_precompile_backend(
    vllm_neuron: dict[str, Any],
) -> None:
    # GIVEN a vLLM Neuron image (native route) with a compile cache on a new EFS file system
    task = _task(vllm_neuron["template"], "Llm")["Properties"]
    (container,) = (c for c in task["ContainerDefinitions"] if c["Name"] == "vllm")
    environment = {e["Name"]: e["Value"] for e in container["Environment"]}
    # THEN it reads both tiers and switches the Precompile Cache on, and no S3 variable it ignores
    assert environment["NEURON_LIBTORCH_REMOTE_CACHE"] == "/mnt/neuron-compile-cache"
    assert environment["VLLM_CACHE_ROOT"] == "/var/cache/vllm"
    assert environment["VLLM_NEURON_BACKEND"] == "neuron_native"
    assert "NEURON_COMPILE_CACHE_URL" not in environment
    mounts = {m["ContainerPath"]: m["SourceVolume"] for m in container["MountPoints"]}
    volumes = {v["Name"]: v for v in task["Volumes"]}
    remote = volumes[mounts["/mnt/neuron-compile-cache"]]["EFSVolumeConfiguration"]
    assert remote["TransitEncryption"] == "ENABLED"
    assert remote["AuthorizationConfig"]["IAM"] == "ENABLED"
    assert "AccessPointId" in remote["AuthorizationConfig"]
    local = volumes[mounts["/var/cache/vllm"]]
    assert local["Host"]["SourcePath"] == "/var/lib/neuron-constructs/vllm-cache/Vllm/Llm"


def test_the_file_system_is_encrypted_tls_only_and_mountable_through_an_access_point_only(
    vllm_neuron: dict[str, Any],
) -> None:
    template = vllm_neuron["template"]
    (file_system,) = resources(template, "AWS::EFS::FileSystem").values()
    properties = file_system["Properties"]
    assert properties["Encrypted"] is True
    statements = properties["FileSystemPolicy"]["Statement"]
    assert {s["Effect"] for s in statements} == {"Deny"}  # allows nothing: each role's own policy does
    assert {"Bool": {"aws:SecureTransport": "false"}} in [s["Condition"] for s in statements]
    assert {"Null": {"elasticfilesystem:AccessPointArn": "true"}} in [s["Condition"] for s in statements]
    assert len(resources(template, "AWS::EFS::MountTarget")) == 2  # one per subnet of the VPC's two zones


def test_the_mount_targets_admit_nfs_from_the_tasks_only(vllm_neuron: dict[str, Any]) -> None:
    template = vllm_neuron["template"]
    ingress = list(resources(template, "AWS::EC2::SecurityGroupIngress").values())
    (rule,) = [i["Properties"] for i in ingress if i["Properties"].get("FromPort") == 2049]
    assert (rule["ToPort"], rule["SourceSecurityGroupId"]) == (2049, {"Fn::GetAtt": [vllm_neuron["tasks"], "GroupId"]})
    groups = resources(template, "AWS::EC2::SecurityGroup")
    cache_group = next(v for k, v in groups.items() if k.startswith("CacheSecurityGroup"))
    assert "SecurityGroupIngress" not in cache_group["Properties"]  # nothing open to a CIDR
    assert cache_group["Properties"]["SecurityGroupEgress"][0]["CidrIp"] == "255.255.255.255/32"  # no egress


def test_each_model_gets_its_own_access_point_and_its_role_may_mount_only_that_one(vllm_neuron: dict[str, Any]) -> None:
    template = vllm_neuron["template"]
    points = resources(template, "AWS::EFS::AccessPoint")
    roots = sorted(p["Properties"]["RootDirectory"]["Path"] for p in points.values())
    assert roots == ["/neuron-compile-cache/Vllm-Coder", "/neuron-compile-cache/Vllm-Llm"]
    for point in points.values():
        assert point["Properties"]["PosixUser"] == {"Uid": "1000", "Gid": "1000"}
    conditions = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "elasticfilesystem:ClientMount" in statement["Action"]:
                assert "elasticfilesystem:ClientRootAccess" not in statement["Action"]
                conditions.append(statement["Condition"]["StringEquals"]["elasticfilesystem:AccessPointArn"])
    assert len(conditions) == 2 and conditions[0] != conditions[1]
    assert sorted(next(p for p in points if p in str(c)) for c in conditions) == sorted(points)


def test_an_nxd_inference_image_keeps_the_s3_cache() -> None:
    # GIVEN the vLLM 0.16 image (vLLM on NxD Inference) with a compile cache on S3
    stack = Stack(App(analytics_reporting=False), "Nxd")
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    task.add_neuron_container("vllm", image=_image(VLLM), compile_cache=CompileCache.in_new_bucket(stack, "Cache"))
    template = App.of(stack).synth().get_stack_by_name("Nxd").template  # type: ignore[union-attr]
    (definition,) = resources(template, "AWS::ECS::TaskDefinition").values()
    names = {e["Name"] for c in definition["Properties"]["ContainerDefinitions"] for e in c.get("Environment", [])}
    # THEN it reads NEURON_COMPILE_CACHE_URL and gets none of vLLM Neuron's variables
    assert "NEURON_COMPILE_CACHE_URL" in names
    assert not names & {"NEURON_LIBTORCH_REMOTE_CACHE", "VLLM_CACHE_ROOT", "VLLM_NEURON_BACKEND"}


def test_an_s3_cache_handed_to_a_vllm_neuron_image_is_refused_with_the_file_system_as_the_fix() -> None:
    stack = Stack(App(analytics_reporting=False), "Mismatch")
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="trn2.48xlarge", memory_mib=65536)
    with pytest.raises(NeuronConfigurationError, match=r"NEURON150.*CompileCache.in_new_file_system"):
        task.add_neuron_container(
            "vllm", image=_image(VLLM_TRN2), compile_cache=CompileCache.in_new_bucket(stack, "Cache")
        )


def test_a_file_system_cache_handed_to_an_nxd_inference_image_is_refused_with_s3_as_the_fix() -> None:
    stack, cache, _ = _efs_stack()
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.xlarge", memory_mib=8192)
    with pytest.raises(NeuronConfigurationError, match=r"NEURON150.*NEURON_COMPILE_CACHE_URL.*in_new_bucket"):
        task.add_neuron_container("vllm", image=_image(VLLM), compile_cache=cache)


def test_an_engine_whose_cache_no_source_names_warns_and_gets_no_variable() -> None:
    # GIVEN the Inf1 image (torch-neuron), whose persistent compile cache no source names
    stack = Stack(App(analytics_reporting=False), "Inf1")
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf1.xlarge", memory_mib=4096)
    task.add_neuron_container(
        "model", image=_image(INF1_INFERENCE), compile_cache=CompileCache(s3.Bucket(stack, "Cache"))
    )
    # THEN a warning with an id, and no variable it would ignore, nor a grant
    template = App.of(stack).synth().get_stack_by_name("Inf1").template  # type: ignore[union-attr]
    (definition,) = resources(template, "AWS::ECS::TaskDefinition").values()
    names = {e["Name"] for c in definition["Properties"]["ContainerDefinitions"] for e in c.get("Environment", [])}
    assert "NEURON_COMPILE_CACHE_URL" not in names
    assert "s3:PutObject" not in str(resources(template, "AWS::IAM::Policy"))
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("NEURON151"))
    assert len(found) == 1


def test_managed_instances_take_the_efs_volume_and_warn_that_the_local_tier_goes_with_the_task() -> None:
    stack, cache, _ = _efs_stack()
    task = ManagedNeuronTaskDefinition(stack, "Task", cpu=8192, memory_mib=65536)
    task.add_neuron_container("vllm", image=_image(VLLM_TRN2), compile_cache=cache)
    template = App.of(stack).synth().get_stack_by_name("Vllm").template  # type: ignore[union-attr]
    volumes = {v["Name"]: v for v in _task(template, "Task")["Properties"]["Volumes"]}
    assert volumes["vllm-compile-cache"]["EFSVolumeConfiguration"]["TransitEncryption"] == "ENABLED"
    assert "Host" not in volumes["vllm-vllm-cache"] or "SourcePath" not in volumes["vllm-vllm-cache"]["Host"]
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("NEURON152"))
    assert len(found) == 1


def test_a_new_file_system_that_admits_no_task_is_refused() -> None:
    stack = Stack(App(analytics_reporting=False), "Closed")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
    with pytest.raises(NeuronConfigurationError, match=r"clients=\[\] admits no task.*NEURON153"):
        CompileCache.in_new_file_system(stack, "Cache", vpc=vpc, clients=[])


def test_every_model_image_of_the_table_names_its_engine_and_the_library_images_none() -> None:
    for name, image in IMAGES.items():
        if name in LIBRARY_IMAGES or name == "NEURON_NODE_RECOVERY":
            assert image.engine is None, name
        else:
            assert image.engine in engines.ENGINES.values(), name
    assert VLLM_TRN2.engine is engines.VLLM_NEURON_NATIVE and VLLM.engine is engines.VLLM_NXDI


def test_cdk_nag_aws_solutions_finds_nothing_open_on_the_file_system_cache(tmp_path: Any) -> None:
    import json

    from aws_cdk import Validations
    from cdk_nag import AwsSolutionsChecks

    app = App(
        analytics_reporting=False, outdir=str(tmp_path), context={"@aws-cdk/core:failSynthOnValidationErrors": False}
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = Stack(app, "Nag")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
    cache = CompileCache.in_new_file_system(stack, "Cache", vpc=vpc, clients=[ec2.SecurityGroup(stack, "T", vpc=vpc)])
    _vllm_neuron(stack, "Llm", cache)
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    plugin = next(p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions")
    open_paths = [
        (v["ruleName"], c["constructPath"])
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
        if c["constructPath"].startswith(("Nag/Cache", "Nag/Llm"))
    ]
    assert open_paths == []


def test_the_slices_of_one_vllm_neuron_service_share_one_access_point_reached_from_the_capacity() -> None:
    from neuron_constructs import NeuronCluster, SlicedNeuronService

    # GIVEN a sliced vLLM Neuron service on EC2 capacity, its cache admitting NFS from the capacity's instances
    stack = Stack(App(analytics_reporting=False), "Sliced")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1)
    cache = CompileCache.in_new_file_system(
        stack, "Cache", vpc=cluster.cluster.vpc, clients=[capacity.auto_scaling_group]
    )
    SlicedNeuronService(
        stack,
        "Vllm",
        cluster=cluster,
        instance_type="trn2.48xlarge",
        devices_per_task=8,
        image=_image(VLLM_TRN2),
        compile_cache=cache,
    )
    template = App.of(stack).synth().get_stack_by_name("Sliced").template  # type: ignore[union-attr]
    # THEN every slice mounts the one access point of the service, and the mount targets admit the instances
    (point_id,) = resources(template, "AWS::EFS::AccessPoint")
    assert resources(template, "AWS::EFS::AccessPoint")[point_id]["Properties"]["RootDirectory"]["Path"] == (
        "/neuron-compile-cache/Sliced-Vllm"
    )
    definitions = resources(template, "AWS::ECS::TaskDefinition").values()
    remote = [
        v["EFSVolumeConfiguration"]["AuthorizationConfig"]["AccessPointId"]
        for d in definitions
        for v in d["Properties"].get("Volumes", [])
        if "EFSVolumeConfiguration" in v
    ]
    assert len(remote) == 2 and all(point_id in str(r) for r in remote)
    ingress = [i["Properties"] for i in resources(template, "AWS::EC2::SecurityGroupIngress").values()]
    (nfs,) = [i for i in ingress if i.get("FromPort") == 2049]
    assert "Trn2" in nfs["SourceSecurityGroupId"]["Fn::GetAtt"][0]


def test_a_file_system_the_instances_mount_gives_each_model_its_own_directory_as_the_remote_tier() -> None:
    # GIVEN FSx for Lustre mounted by the instances at /fsx, and a vLLM Neuron model on EC2
    stack = Stack(App(analytics_reporting=False), "Lustre")
    _vllm_neuron(stack, "Llm", CompileCache.on_instance_mount("/fsx"))
    template = App.of(stack).synth().get_stack_by_name("Lustre").template  # type: ignore[union-attr]
    properties = _task(template, "Llm")["Properties"]
    (container,) = (c for c in properties["ContainerDefinitions"] if c["Name"] == "vllm")
    mounts = {m["ContainerPath"]: m["SourceVolume"] for m in container["MountPoints"]}
    volumes = {v["Name"]: v for v in properties["Volumes"]}
    # THEN the container sees its model's directory alone, as the remote tier, beside its local tier
    assert volumes[mounts["/mnt/neuron-compile-cache"]]["Host"]["SourcePath"] == "/fsx/neuron-compile-cache/Lustre/Llm"
    environment = {e["Name"]: e["Value"] for e in container["Environment"]}
    assert environment["NEURON_LIBTORCH_REMOTE_CACHE"] == "/mnt/neuron-compile-cache"
    assert environment["VLLM_NEURON_BACKEND"] == "neuron_native"
    assert not resources(template, "AWS::EFS::FileSystem")


def test_a_file_system_the_instances_mount_is_refused_for_managed_instances() -> None:
    stack = Stack(App(analytics_reporting=False), "Lustre")
    task = ManagedNeuronTaskDefinition(stack, "Task", cpu=8192, memory_mib=65536)
    with pytest.raises(NeuronConfigurationError, match=r"Lustre/Task/vllm: .*/fsx.*NEURON154"):
        task.add_neuron_container("vllm", image=_image(VLLM_TRN2), compile_cache=CompileCache.on_instance_mount())


@pytest.mark.parametrize("mount_path", ["fsx", "/fsx/", "/fsx/../etc", "/fsx $(id)", ""])
def test_a_mount_path_that_is_not_an_absolute_normal_path_is_refused(mount_path: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=r"mount_path=.*NEURON047"):
        CompileCache.on_instance_mount(mount_path)


def test_a_cache_of_two_kinds_at_once_is_refused() -> None:
    stack = Stack(App(analytics_reporting=False), "Both")
    with pytest.raises(NeuronConfigurationError, match=r"give one of bucket.*NEURON026"):
        CompileCache(s3.Bucket(stack, "Cache"), mount_path="/fsx")


def test_an_image_the_table_does_not_hold_takes_the_file_system_cache_without_choosing_a_route() -> None:
    # GIVEN an image of the user's own (built from vLLM Neuron, say) with a cache on Amazon EFS
    stack, cache, _ = _efs_stack()
    task = ManualNeuronTaskDefinition(stack, "Own", instance_type="trn2.48xlarge", memory_mib=65536)
    own = ecs.ContainerImage.from_registry("123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm-neuron:1")
    task.add_neuron_container("vllm", image=own, compile_cache=cache)
    template = App.of(stack).synth().get_stack_by_name("Vllm").template  # type: ignore[union-attr]
    (container,) = (c for c in _task(template, "Own")["Properties"]["ContainerDefinitions"] if c["Name"] == "vllm")
    names = {e["Name"] for e in container["Environment"]}
    # THEN both tiers, and no backend: the route is the image's
    assert {"NEURON_LIBTORCH_REMOTE_CACHE", "VLLM_CACHE_ROOT"} <= names
    assert "VLLM_NEURON_BACKEND" not in names


@pytest.mark.parametrize(
    ("prefix", "model"),
    [
        ("neuron-compile-cache", "Stack/Team/Models/Llm/Task"),  # deeper than four subdirectories
        ("a/b/c", "Stack/" + "VeryLongConstructName" * 8 + "/Task"),  # longer than 100 characters
        ("x" * 50, "S/" + "y" * 120),
    ],
)
def test_an_access_point_root_directory_fits_efs_and_names_each_model_apart(prefix: str, model: str) -> None:
    from neuron_constructs.compute.compile_cache_tiers import access_point_directory

    # GIVEN a model whose construct path is deep or long
    path = access_point_directory(prefix, model)
    other = access_point_directory(prefix, model + "2")
    # THEN its root directory is one EFS takes (Amazon EFS API reference, RootDirectory) and no other model's
    assert len(path) <= 100 and path.count("/") <= 4 and path.startswith(f"/{prefix}/")
    assert not any(segment.startswith(".") for segment in path.split("/")[1:])
    assert path != other


def test_a_prefix_an_access_point_cannot_start_with_is_refused() -> None:
    from aws_cdk import aws_efs as efs

    stack = Stack(App(analytics_reporting=False), "Deep")
    file_system = efs.FileSystem(stack, "Fs", vpc=ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0))
    with pytest.raises(NeuronConfigurationError, match=r"prefix='a/b/c/d' has 4 segments.*NEURON155"):
        CompileCache.on_file_system(file_system, "a/b/c/d")
    with pytest.raises(NeuronConfigurationError, match=r"starting with '\.'.*NEURON155"):
        CompileCache.on_file_system(file_system, "cache/.hidden")


# ------------------------------------------------- a file system in another VPC; a cache shared across owners ---


def _cluster_and_trn2_task(stack: Stack, cache: CompileCache) -> tuple[Any, ManualNeuronTaskDefinition]:
    from neuron_constructs import NeuronCluster

    cluster = NeuronCluster(stack, "C")
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1)
    return cluster, _vllm_neuron(stack, "Llm", cache)


def test_an_efs_cache_in_another_vpc_than_the_service_s_cluster_is_refused_with_the_vpc_and_the_fix() -> None:
    from neuron_constructs import NeuronService

    # GIVEN a compile cache on a new file system in a VPC of its own, and a cluster in the VPC it makes
    stack, cache, _ = _efs_stack()
    cluster, task = _cluster_and_trn2_task(stack, cache)
    # WHEN a service places the model on the cluster THEN it is refused: its tasks would find no mount target
    with pytest.raises(
        NeuronConfigurationError,
        match=r"Vllm/Service: Vllm/Llm/vllm mounts the compile cache's file system Vllm/Cache, whose mount targets "
        r"are in the VPC Vllm/Vpc, and this service's cluster is in the VPC Vllm/C/Vpc.*NEURON156.*vpc=cluster.vpc",
    ):
        NeuronService(stack, "Service", cluster=cluster, task_definition=task)


def test_an_efs_cache_in_the_cluster_s_vpc_is_placed() -> None:
    from neuron_constructs import NeuronCluster, NeuronService

    stack = Stack(App(analytics_reporting=False), "SameVpc")
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1)
    cache = CompileCache.in_new_file_system(stack, "Cache", vpc=cluster.vpc, clients=[capacity.auto_scaling_group])
    assert cache.vpc_id == cluster.vpc.vpc_id
    NeuronService(stack, "Service", cluster=cluster, task_definition=_vllm_neuron(stack, "Llm", cache))


def test_an_imported_file_system_whose_vpc_is_unknown_at_synth_is_not_checked() -> None:
    from aws_cdk import aws_efs as efs

    from neuron_constructs import NeuronService

    # GIVEN a file system imported by id: its VPC is known only to EFS, at deploy time
    stack = Stack(App(analytics_reporting=False), "Imported")
    imported = efs.FileSystem.from_file_system_attributes(
        stack,
        "Fs",
        file_system_id="fs-12345678",
        security_group=ec2.SecurityGroup.from_security_group_id(stack, "FsGroup", "sg-12345678"),
    )
    cache = CompileCache.on_file_system(imported)
    assert cache.vpc_id is None
    cluster, task = _cluster_and_trn2_task(stack, cache)
    # THEN the service is placed (the check says in its docstring that it cannot compare them)
    NeuronService(stack, "Service", cluster=cluster, task_definition=task)


def _shared_across_stacks(shared: bool, *, second_stack: bool = True) -> Any:
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform")
    cache = CompileCache(s3.Bucket(platform, "Cache", enforce_ssl=True), shared=shared)
    first = ManualNeuronTaskDefinition(platform, "Embedder", instance_type="inf2.xlarge", memory_mib=8192)
    first.add_neuron_container("vllm", image=_image(VLLM), compile_cache=cache)
    other = Stack(app, "Team") if second_stack else platform
    second = ManualNeuronTaskDefinition(other, "Llm", instance_type="inf2.xlarge", memory_mib=8192)
    second.add_neuron_container("vllm", image=_image(VLLM), compile_cache=cache)
    return other


def test_a_shared_cache_used_by_a_model_of_another_stack_with_another_role_warns_with_what_it_could_do() -> None:
    # GIVEN one shared=True cache used by models of two stacks, each task with its own role
    other = _shared_across_stacks(True)
    # THEN the later use warns: either task can replace the graphs the other loads; the fix is a prefix per model
    (warning,) = Annotations.from_stack(other).find_warning("*", Match.string_like_regexp("NEURON157"))
    text = str(warning.entry.data)
    assert "Team/Llm/vllm: the compile cache is shared=True with Platform/Embedder/vllm of another stack" in text
    assert "overwrite or delete the graphs the other loads" in text and "runs on its Neuron devices" in text
    assert "drop shared=True" in text


@pytest.mark.parametrize(("shared", "second_stack"), [(False, True), (True, False)])
def test_a_cache_per_model_or_shared_within_one_stack_does_not_warn(shared: bool, second_stack: bool) -> None:
    other = _shared_across_stacks(shared, second_stack=second_stack)
    assert not Annotations.from_stack(other).find_warning("*", Match.string_like_regexp("NEURON157"))


def test_vpcs_are_compared_by_literal_id_or_by_the_vpc_the_app_creates_and_never_by_a_deploy_time_value() -> None:
    from aws_cdk import CfnParameter

    from neuron_constructs.compute.compile_cache_checks import vpc_identity

    stack = Stack(App(analytics_reporting=False), "Ids")
    made, other = ec2.Vpc(stack, "Vpc", max_azs=1), ec2.Vpc(stack, "Other", max_azs=1)
    assert vpc_identity("vpc-0123456789abcdef0") == "vpc-0123456789abcdef0"
    assert vpc_identity(made.vpc_id) == vpc_identity(made.vpc_id) != vpc_identity(other.vpc_id)
    assert vpc_identity(CfnParameter(stack, "VpcId").value_as_string) is None  # known only at deploy time
    assert vpc_identity(None) is None
