"""Precompile: a model's graphs compiled on CPU by an AWS Batch job running the service's own container, before the new
revision's Neuron tasks start (a PRE_SCALE_UP hook on native rollouts, a custom resource on rolling deployments and
fleets), and production copies that serve cache-hit-only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk.assertions import Annotations, Match, Template
from conftest import imported_vpc, resources

from neuron_constructs import (
    CompileCache,
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronFleet,
    NeuronLoadBalancer,
    NeuronService,
    Precompile,
    Rollout,
    SmokeTest,
)
from neuron_constructs.knowledge import cpu_compile, rules
from neuron_constructs.knowledge.container_images import VLLM, VLLM_TRN2
from neuron_constructs.serving.precompile_resources import hook_source

ENV = {"account": "111111111111", "region": "us-east-2"}
COMMAND = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "32", "--port", "8000"]
CACHE_HIT_ONLY = {"NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND": "1", "VLLM_NEURON_DISABLE_WARMUP_COMPILE": "1"}


def _platform(stack: Stack, family: str = "trn2.48xlarge") -> tuple[NeuronCluster, CompileCache]:
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Capacity", instance_type=family, max_capacity=2)
    cache = CompileCache.in_new_file_system(
        stack, "Cache", vpc=cluster.vpc, clients=[capacity.auto_scaling_group], vpc_subnets=cluster.capacity_subnets
    )
    return cluster, cache


def _task(
    stack: Stack,
    id: str = "Llm",
    *,
    cache: CompileCache | None,
    image: Any = VLLM_TRN2,
    instance_type: str = "trn2.48xlarge",
    devices: list[int] | None = None,
    **options: Any,
) -> ManualNeuronTaskDefinition:
    task = ManualNeuronTaskDefinition(stack, id, instance_type=instance_type, memory_mib=65536, devices=devices)
    options.setdefault("command", COMMAND)
    task.add_neuron_container(
        "vllm",
        image=ecs.ContainerImage.from_registry(image.reference),
        compile_cache=cache,
        environment={"HF_HUB_OFFLINE": "0", **options.pop("environment", {})},
        **options,
    )
    return task


def _service(stack: Stack, cluster: NeuronCluster, task: ManualNeuronTaskDefinition, **options: Any) -> NeuronService:
    return NeuronService(stack, "Service", cluster=cluster, task_definition=task, **options)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One app: a blue/green model (hook), a rolling model (custom resource), a fleet model, and a platform/model
    split, synthesized once, with the construct paths cdk synth writes (aws:cdk:path)."""
    from cdk_nag import AwsSolutionsChecks

    outdir = tmp_path_factory.mktemp("precompile")
    app = App(
        analytics_reporting=False,
        outdir=str(outdir),
        context={"aws:cdk:enable-path-metadata": True, "@aws-cdk/core:failSynthOnValidationErrors": False},
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    blue_green = Stack(app, "BlueGreen", env=ENV)
    cluster, cache = _platform(blue_green)
    _service(
        blue_green,
        cluster,
        _task(blue_green, cache=cache),
        rollout=Rollout.blue_green(),
        precompile=Precompile(vcpus=16, memory_mib=65536, parallel_workers=16),
    )
    rolling = Stack(app, "Rolling", env=ENV)
    cluster, cache = _platform(rolling)
    other = _task(rolling, "Other", cache=cache, devices=list(range(8)))
    NeuronService(rolling, "OtherService", cluster=cluster, task_definition=other)
    _service(rolling, cluster, _task(rolling, cache=cache, devices=list(range(8, 16))), precompile=Precompile())
    fleet_stack = Stack(app, "Fleet", env=ENV)
    cluster, cache = _platform(fleet_stack)
    fleet = NeuronFleet(fleet_stack, "Fleet", cluster=cluster, instance_type="trn2.48xlarge", instances=2)
    fleet.add_model(
        "Llm",
        devices_per_task=4,
        copies=2,
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        command=COMMAND,
        memory_reservation_mib=8192,
        compile_cache=cache,
        precompile=Precompile(),
    )
    ec2_stack = Stack(app, "Ec2", env=ENV)
    cluster, cache = _platform(ec2_stack)
    _service(
        ec2_stack,
        cluster,
        _task(ec2_stack, cache=cache),
        rollout=Rollout.blue_green(),
        precompile=Precompile.on_ec2(instance_types=["c7i.16xlarge"], vcpus=64, memory_mib=120_000),
    )
    platform = Stack(app, "Platform", env=ENV)
    cluster, cache = _platform(platform)
    listener = NeuronLoadBalancer(platform, "LoadBalancer", cluster=cluster).listener
    model = Stack(app, "Model", env=ENV)
    served = _task(model, cache=cache, port_mappings=[ecs.PortMapping(container_port=8000)])
    smoke_tested = _service(
        model, cluster, served, rollout=Rollout.blue_green(smoke_test=SmokeTest("/health")), precompile=Precompile()
    )
    smoke_tested.attach_to_listener(
        listener, conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])], priority=10
    )
    assembly = app.synth()
    report = json.loads((outdir / "validation-report.json").read_text())
    return {
        "warnings": [str(m.entry.data) for s in assembly.stacks for m in s.messages if m.level.name == "WARNING"],
        "nag": next(p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"),
        "templates": {s.stack_name: s.template for s in assembly.stacks},
        "dependencies": {
            s.stack_name: [d.id for d in s.dependencies if not d.id.endswith(".assets")] for s in assembly.stacks
        },
        "stacks": {"BlueGreen": blue_green, "Rolling": rolling},
    }


def _one(template: dict[str, Any], kind: str, prefix: str = "") -> tuple[str, dict[str, Any]]:
    found = [(k, v) for k, v in resources(template, kind).items() if k.startswith(prefix)]
    assert len(found) == 1, [k for k, _ in found]
    return found[0]


def _environment(container: dict[str, Any]) -> dict[str, Any]:
    return {e["Name"]: e["Value"] for e in container["Environment"]}


def _service_container(template: dict[str, Any], prefix: str = "Llm") -> dict[str, Any]:
    _, task = _one(template, "AWS::ECS::TaskDefinition", prefix)
    (container,) = (c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "vllm")
    return container


def test_the_job_runs_the_service_s_own_image_command_and_environment_with_the_cpu_compile_variables(
    synthesized: dict[str, Any],
) -> None:
    # GIVEN a vLLM Neuron service on trn2 with precompile=Precompile(vcpus=16, ..., parallel_workers=16)
    template = synthesized["templates"]["BlueGreen"]
    served = _service_container(template)
    _, job = _one(template, "AWS::Batch::JobDefinition")
    properties = job["Properties"]["ContainerProperties"]
    # THEN the job runs the same image and command, on Fargate, the command under the script that stops the server
    # once it answers /health on the port the command names (the server does not exit after a CPU compile)
    assert properties["Image"] == served["Image"] == VLLM_TRN2.reference
    assert served["Command"] == COMMAND
    assert properties["Command"] == cpu_compile.job_command(COMMAND, 8000)
    assert job["Properties"]["PlatformCapabilities"] == ["FARGATE"]
    assert {r["Type"]: r["Value"] for r in properties["ResourceRequirements"]} == {"VCPU": "16", "MEMORY": "65536"}
    # AND the service's environment, less the production-only cache-hit-only variables, plus the CPU compile ones
    expected = {k: v for k, v in _environment(served).items() if k not in CACHE_HIT_ONLY}
    expected |= {
        "VLLM_NEURON_CPU_COMPILE": "1",
        "NEURON_PLATFORM_TARGET_OVERRIDE": "trn2",
        "NEURON_LIBTORCH_PARALLEL_COMPILE_WORKERS": "16",
    }
    assert _environment(properties) == expected
    assert expected["NEURON_LIBTORCH_REMOTE_CACHE"] == "/mnt/neuron-compile-cache"
    # AND the job ends within its timeout, one attempt
    assert job["Properties"]["Timeout"] == {"AttemptDurationSeconds": 3000}
    assert job["Properties"]["RetryStrategy"] == {"Attempts": 1}
    assert properties["NetworkConfiguration"] == {"AssignPublicIp": "DISABLED"}


def test_a_job_on_ec2_runs_on_a_cpu_compute_environment_that_scales_to_zero(synthesized: dict[str, Any]) -> None:
    # GIVEN Precompile.on_ec2(instance_types=["c7i.16xlarge"], vcpus=64, memory_mib=120000)
    template = synthesized["templates"]["Ec2"]
    _, job = _one(template, "AWS::Batch::JobDefinition")
    _, environment = _one(template, "AWS::Batch::ComputeEnvironment")
    # THEN the job definition is an EC2 one of that size, without Fargate's settings
    assert job["Properties"]["PlatformCapabilities"] == ["EC2"]
    properties = job["Properties"]["ContainerProperties"]
    assert {r["Type"]: r["Value"] for r in properties["ResourceRequirements"]} == {"VCPU": "64", "MEMORY": "120000"}
    assert not {"FargatePlatformConfiguration", "NetworkConfiguration", "EphemeralStorage"} & set(properties)
    # AND the compute environment launches those CPU instances only while a job waits
    resources_ = environment["Properties"]["ComputeResources"]
    assert (resources_["Type"], resources_["InstanceTypes"], resources_["MinvCpus"]) == ("EC2", ["c7i.16xlarge"], 0)
    # AND its instances' role carries no AWS managed policy
    _, role = _one(template, "AWS::IAM::Role", "ServicePrecompileInstanceRole")
    assert "ManagedPolicyArns" not in role["Properties"]


def test_production_copies_serve_cache_hit_only(synthesized: dict[str, Any]) -> None:
    # GIVEN a precompiled model (cache_hit_only defaults to True)
    environment = _environment(_service_container(synthesized["templates"]["BlueGreen"]))
    # THEN its Neuron container fails at startup on a cache miss instead of compiling
    assert CACHE_HIT_ONLY.items() <= environment.items()


def test_the_job_mounts_the_model_s_own_access_point_and_its_role_may_use_that_one_only(
    synthesized: dict[str, Any],
) -> None:
    # GIVEN a rolling stack with two models sharing one cache, one precompiled
    template = synthesized["templates"]["Rolling"]
    served = _one(template, "AWS::ECS::TaskDefinition", "Llm")[1]["Properties"]
    (service_volume,) = (v for v in served["Volumes"] if "EFSVolumeConfiguration" in v)
    access_point = service_volume["EFSVolumeConfiguration"]["AuthorizationConfig"]["AccessPointId"]
    _, job = _one(template, "AWS::Batch::JobDefinition")
    properties = job["Properties"]["ContainerProperties"]
    (volume,) = properties["Volumes"]
    # THEN the job mounts the same access point as the service, through TLS and IAM
    assert volume["EfsVolumeConfiguration"]["AuthorizationConfig"] == {"AccessPointId": access_point, "Iam": "ENABLED"}
    assert volume["EfsVolumeConfiguration"]["TransitEncryption"] == "ENABLED"
    assert properties["MountPoints"] == [
        {"ContainerPath": "/mnt/neuron-compile-cache", "ReadOnly": False, "SourceVolume": volume["Name"]}
    ]
    # AND the job role's only grant is ClientMount and ClientWrite through that access point
    role = properties["JobRoleArn"]["Fn::GetAtt"][0]
    statements = [
        s
        for p in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    _only_access_point(statements, access_point)


def _only_access_point(statements: list[dict[str, Any]], access_point: dict[str, Any]) -> None:
    (statement,) = statements
    assert statement["Action"] == ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"]
    arn = statement["Condition"]["StringEquals"]["elasticfilesystem:AccessPointArn"]
    assert json.dumps(access_point["Ref"]) in json.dumps(arn)


def test_the_job_s_security_group_is_admitted_to_the_cache_s_nfs(synthesized: dict[str, Any]) -> None:
    template = synthesized["templates"]["Rolling"]
    job_group = next(k for k in resources(template, "AWS::EC2::SecurityGroup") if k.startswith("ServicePrecompile"))
    ingress = [
        r["Properties"]
        for r in resources(template, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"].get("SourceSecurityGroupId") == {"Fn::GetAtt": [job_group, "GroupId"]}
    ]
    assert [(i["FromPort"], i["ToPort"], i["IpProtocol"]) for i in ingress] == [(2049, 2049, "tcp")]


def test_a_native_rollout_runs_the_job_in_a_pre_scale_up_hook_with_its_timeout(synthesized: dict[str, Any]) -> None:
    # GIVEN a blue/green service with precompile=
    template = synthesized["templates"]["BlueGreen"]
    _, service = _one(template, "AWS::ECS::Service")
    function_id, function = _one(template, "AWS::Lambda::Function", "ServicePrecompile")
    (hook,) = service["Properties"]["DeploymentConfiguration"]["LifecycleHooks"]
    # THEN ECS calls the precompile function before green starts, and rolls back after the hook's timeout (50 + 30 min)
    assert hook["LifecycleStages"] == ["PRE_SCALE_UP"]
    assert hook["HookTargetArn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    assert hook["TimeoutConfiguration"] == {"TimeoutInMinutes": 80, "Action": "ROLLBACK"}
    # AND a custom resource compiles the first revision before CloudFormation creates the service, and only then:
    # its properties leave the job definition's revision out, so a new revision is the hook's alone
    run_id, run = _one(template, "Custom::NeuronPrecompile")
    assert set(run["Properties"]) == {"ServiceToken", "ServiceTimeout", "JobQueue", "Model"}
    assert run_id in service["DependsOn"]
    # AND the function is the hook program, inline, with the interface's environment
    properties = function["Properties"]
    assert (properties["Runtime"], properties["Handler"]) == ("python3.14", "index.handler")
    assert properties["Code"] == {"ZipFile": hook_source()}
    variables = properties["Environment"]["Variables"]
    queue_id, _ = _one(template, "AWS::Batch::JobQueue")
    definition_id, _ = _one(template, "AWS::Batch::JobDefinition")
    assert variables == {
        "PRECOMPILE_JOB_QUEUE": {"Fn::GetAtt": [queue_id, "JobQueueArn"]},
        "PRECOMPILE_JOB_DEFINITION": {"Ref": definition_id},
        "PRECOMPILE_MODEL": "BlueGreen/Service",
        "PRECOMPILE_CACHE": "Amazon EFS BlueGreen/Cache, access point /neuron-compile-cache/BlueGreen-Llm",
        "PRECOMPILE_CALLBACK_DELAY_SECONDS": "60",
        "PRECOMPILE_JOB_TIMEOUT_SECONDS": "3000",
    }


def test_the_function_may_submit_this_job_and_describe_jobs_only(synthesized: dict[str, Any]) -> None:
    template = synthesized["templates"]["BlueGreen"]
    queue_id, _ = _one(template, "AWS::Batch::JobQueue")
    definition_id, _ = _one(template, "AWS::Batch::JobDefinition")
    _, role = _one(template, "AWS::IAM::Role", "ServicePrecompileFunctionRole")
    (policy,) = role["Properties"]["Policies"]
    assert policy["PolicyDocument"]["Statement"] == [
        {
            "Action": "batch:SubmitJob",
            "Effect": "Allow",
            "Resource": [{"Fn::GetAtt": [queue_id, "JobQueueArn"]}, {"Ref": definition_id}],
            "Sid": "SubmitJob",
        },
        {"Action": "batch:DescribeJobs", "Effect": "Allow", "Resource": "*", "Sid": "DescribeJobs"},
    ]
    # AND its other policy only writes its own logs
    default = [
        s
        for k, p in resources(template, "AWS::IAM::Policy").items()
        if k.startswith("ServicePrecompileFunctionRole")
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert {a for s in default for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])} == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    # AND ECS invokes it through a role that may invoke this function only
    _, invoke = _one(template, "AWS::IAM::Role", "ServicePrecompileInvokeRole")
    (invoke_policy,) = invoke["Properties"]["Policies"]
    function_id, _ = _one(template, "AWS::Lambda::Function", "ServicePrecompile")
    assert invoke_policy["PolicyDocument"]["Statement"] == [
        {
            "Action": "lambda:InvokeFunction",
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [function_id, "Arn"]},
            "Sid": "InvokePrecompile",
        }
    ]
    assert invoke["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "111111111111"}
    }


def test_a_rolling_deployment_waits_for_the_job_s_custom_resource(synthesized: dict[str, Any]) -> None:
    # GIVEN a rolling service with precompile= next to one without
    template = synthesized["templates"]["Rolling"]
    run_id, run = _one(template, "Custom::NeuronPrecompile")
    definition_id, _ = _one(template, "AWS::Batch::JobDefinition")
    queue_id, _ = _one(template, "AWS::Batch::JobQueue")
    function_id, _ = _one(template, "AWS::Lambda::Function", "ServicePrecompile")
    # THEN the custom resource is the function's, names the job definition revision, and waits at most an hour
    assert run["Properties"]["ServiceToken"] == {"Fn::GetAtt": [function_id, "Arn"]}
    assert run["Properties"]["JobDefinition"] == {"Ref": definition_id}
    assert run["Properties"]["ServiceTimeout"] == "3600"
    # AND the precompiled service depends on it; the other service does not
    services = resources(template, "AWS::ECS::Service")
    precompiled = next(v for k, v in services.items() if k.startswith("Service"))
    other = next(v for k, v in services.items() if k.startswith("OtherService"))
    assert run_id in precompiled["DependsOn"]
    assert run_id not in other.get("DependsOn", [])
    assert "LifecycleHooks" not in precompiled["Properties"].get("DeploymentConfiguration", {})
    # AND the job's end reaches the function through EventBridge, for this queue's jobs only
    _, rule = _one(template, "AWS::Events::Rule", "ServicePrecompile")
    assert rule["Properties"]["EventPattern"] == {
        "source": ["aws.batch"],
        "detail-type": ["Batch Job State Change"],
        "detail": {"jobQueue": [{"Fn::GetAtt": [queue_id, "JobQueueArn"]}], "status": ["SUCCEEDED", "FAILED"]},
    }
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    # AND the other model's container does not serve cache-hit-only
    assert not CACHE_HIT_ONLY.items() <= _environment(_service_container(template, "Other")).items()


def test_a_fleet_model_compiles_once_before_every_copy(synthesized: dict[str, Any]) -> None:
    template = synthesized["templates"]["Fleet"]
    run_id, _ = _one(template, "Custom::NeuronPrecompile")
    services = resources(template, "AWS::ECS::Service")
    assert len(services) == 2
    assert all(run_id in s["DependsOn"] for s in services.values())
    containers = [
        c
        for t in resources(template, "AWS::ECS::TaskDefinition").values()
        for c in t["Properties"]["ContainerDefinitions"]
        if c["Name"] == "model"
    ]
    assert len(containers) == 2
    assert all(CACHE_HIT_ONLY.items() <= _environment(c).items() for c in containers)


def test_a_platform_model_split_depends_from_model_to_platform_only(synthesized: dict[str, Any]) -> None:
    # GIVEN the cluster, capacity and cache in Platform, the service and its precompile in Model
    dependencies = synthesized["dependencies"]
    # THEN Model depends on Platform, and Platform on nothing
    assert dependencies["Model"] == ["Platform"]
    assert dependencies["Platform"] == []
    model = synthesized["templates"]["Model"]
    assert resources(model, "AWS::Batch::JobDefinition")
    # AND the cache admits the job's NFS through a rule in the model's stack
    assert any(
        "Fn::ImportValue" in json.dumps(r["Properties"]["GroupId"])
        for r in resources(model, "AWS::EC2::SecurityGroupIngress").values()
    )


def test_the_hook_s_timeout_lands_on_the_precompile_hook_next_to_a_smoke_test(synthesized: dict[str, Any]) -> None:
    # GIVEN a blue/green model with precompile= and a smoke test, attached to a listener after it was made
    template = synthesized["templates"]["Model"]
    _, service = _one(template, "AWS::ECS::Service")
    hooks = service["Properties"]["DeploymentConfiguration"]["LifecycleHooks"]
    by_stage = {tuple(h["LifecycleStages"]): h for h in hooks}
    # THEN the PRE_SCALE_UP hook has the precompile timeout, and the smoke test's hook keeps ECS's default
    assert set(by_stage) == {("PRE_SCALE_UP",), ("POST_TEST_TRAFFIC_SHIFT",)}
    assert by_stage[("PRE_SCALE_UP",)]["TimeoutConfiguration"] == {"TimeoutInMinutes": 80, "Action": "ROLLBACK"}
    assert "TimeoutConfiguration" not in by_stage[("POST_TEST_TRAFFIC_SHIFT",)]


# ------------------------------------------------------------------------------------------------ refusals ---


def _stack() -> tuple[Stack, NeuronCluster, CompileCache]:
    stack = Stack(App(analytics_reporting=False), "Refused", env=ENV)
    cluster, cache = _platform(stack)
    return stack, cluster, cache


def test_a_target_that_is_not_the_capacity_s_family_is_refused() -> None:
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache)
    with pytest.raises(NeuronConfigurationError, match=r"target='inf2', but the model runs on trn2.*NEURON160"):
        _service(stack, cluster, task, precompile=Precompile(target="inf2"))


def test_a_target_neuronx_cc_has_not_is_refused() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"target='trn9'.*NEURON160"):
        Precompile(target="trn9")


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"command": [*COMMAND, "--speculative-config", '{"method": "eagle3"}']}, r"speculative decoding \(--spec"),
        ({"command": ["/bin/sh", "-c", "vllm serve m --speculative-config={}"]}, r"speculative decoding"),
        ({"environment": {"VLLM_NEURON_CPU_COMPILE": "1"}}, r"VLLM_NEURON_CPU_COMPILE=1 is already set"),
        ({"environment": {"VLLM_NEURON_CPU_MODE": "1"}}, r"VLLM_NEURON_CPU_MODE=1 is already set"),
    ],
    ids=["speculative-config", "speculative-in-a-shell-string", "cpu-compile-set", "cpu-mode-set"],
)
def test_a_model_cpu_compile_mode_cannot_compile_is_refused(options: dict[str, Any], text: str) -> None:
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache, **options)
    with pytest.raises(NeuronConfigurationError, match=f"{text}.*NEURON161"):
        _service(stack, cluster, task, precompile=Precompile())


def test_precompile_without_a_compile_cache_is_refused() -> None:
    stack, cluster, _ = _stack()
    task = _task(stack, cache=None)
    with pytest.raises(NeuronConfigurationError, match=r"no compile cache for the job to write to.*NEURON164"):
        _service(stack, cluster, task, precompile=Precompile())


def test_a_hook_timeout_shorter_than_the_job_s_is_refused() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"hook_timeout=20 minutes is shorter.*NEURON163"):
        Precompile(timeout=Duration.minutes(30), hook_timeout=Duration.minutes(20))


def test_a_job_timeout_beyond_the_custom_resource_s_hour_is_refused_on_a_rolling_deployment() -> None:
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache)
    with pytest.raises(NeuronConfigurationError, match=r"timeout=2 hours on a deployment CloudFormation.*NEURON165"):
        _service(stack, cluster, task, precompile=Precompile(timeout=Duration.hours(2)))


def test_a_long_job_is_taken_on_a_native_rollout() -> None:
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache)
    service = _service(
        stack, cluster, task, rollout=Rollout.blue_green(), precompile=Precompile(timeout=Duration.hours(2))
    )
    assert service.precompile_job is not None
    assert service.precompile_job.precompile.hook_timeout_minutes == 150
    # AND the first deployment is the hook's alone: no custom resource can wait two hours, which the warning says
    template = Template.from_stack(stack)
    assert not resources(template.to_json(), "Custom::NeuronPrecompile")
    (warning,) = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("NEURON158"))
    assert "does not run before the service is created" in warning.entry.data


@pytest.mark.parametrize(
    ("build", "text"),
    [
        (lambda: Precompile(vcpus=16, memory_mib=200_000), r"memory_mib=200000 with 16 vCPUs.*NEURON166"),
        (lambda: Precompile(vcpus=3), r"vcpus=3 is not one of Fargate's.*NEURON166"),
    ],
    ids=["memory-beyond-fargate", "vcpus-fargate-does-not-run"],
)
def test_a_size_fargate_does_not_run_is_refused(build: Any, text: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=text):
        build()


def test_an_image_whose_engine_documents_no_cpu_compile_is_refused() -> None:
    stack = Stack(App(analytics_reporting=False), "Nxd", env=ENV)
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Capacity", instance_type="inf2.48xlarge")
    bucket_cache = CompileCache.in_new_bucket(stack, "Cache")
    task = _task(stack, cache=bucket_cache, image=VLLM, instance_type="inf2.48xlarge")
    with pytest.raises(NeuronConfigurationError, match=r"engine is vLLM on NxD Inference.*NEURON166"):
        _service(stack, cluster, task, precompile=Precompile())


def test_a_container_with_an_entry_point_is_refused() -> None:
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache, entry_point=["python3", "-m", "vllm.entrypoints.openai.api_server"])
    with pytest.raises(NeuronConfigurationError, match=r"sets an entry point.*NEURON166"):
        _service(stack, cluster, task, precompile=Precompile())


def test_cache_hit_only_without_a_precompile_warns() -> None:
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache, environment=dict(CACHE_HIT_ONLY))
    _service(stack, cluster, task)
    warnings = Annotations.from_stack(stack).find_warning("/Refused/Service", Match.string_like_regexp("NEURON162"))
    assert len(warnings) == 1
    assert rules.CACHE_HIT_ONLY_WITHOUT_PRECOMPILE.warning_id in json.dumps(warnings[0].entry.data)


def test_precompiled_copies_serving_cache_hit_only_are_not_warned_of_it(synthesized: dict[str, Any]) -> None:
    """A fleet makes its copies, then precompiles them and sets their cache-hit-only variables: NEURON162
    (cache-hit-only with nothing that fills the cache) judges the complete app, where the fleet's precompile fills
    it."""
    assert not [w for w in synthesized["warnings"] if "NEURON162" in w]


def test_cache_hit_only_set_after_the_service_is_made_warns_too_and_a_container_without_it_does_not() -> None:
    """NEURON162 is judged on the complete app: variables added to the container after the service still count."""
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache)
    _service(stack, cluster, task)
    before = Annotations.from_stack(stack).find_warning("/Refused/Service", Match.string_like_regexp("NEURON162"))
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache)
    _service(stack, cluster, task)
    for name, value in CACHE_HIT_ONLY.items():
        task.neuron_containers[0].add_environment(name, value)
    after = Annotations.from_stack(stack).find_warning("/Refused/Service", Match.string_like_regexp("NEURON162"))
    assert (len(before), len(after)) == (0, 1)


def test_cache_hit_only_can_be_turned_off() -> None:
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache)
    _service(stack, cluster, task, rollout=Rollout.blue_green(), precompile=Precompile(cache_hit_only=False))
    rendered = stack.resolve(task.neuron_containers[0].render_container_definition().environment)
    assert not {e["name"] for e in rendered} & set(CACHE_HIT_ONLY)


def test_the_precompile_resources_leave_no_open_aws_solutions_finding(synthesized: dict[str, Any]) -> None:
    """cdk-nag AwsSolutions on every precompiled model of the module's app (blue/green, rolling, fleet, split): every
    finding on the job, its queue, its function and their roles is fixed or acknowledged with its reason."""
    open_findings = {
        v["ruleName"]: c["constructPath"]
        for v in synthesized["nag"]["violations"]
        for c in v["violatingConstructs"]
        if "/Precompile/" in c["constructPath"]
    }
    assert open_findings == {}
    # AND the report did check them: the function's findings are acknowledged there, not absent
    acknowledged = {
        v["ruleName"] for v in synthesized["nag"]["suppressedViolations"] if "/Precompile/" in v["acknowledgedAt"]
    }
    assert "AwsSolutions-IAM5[Resource::*]" in acknowledged, acknowledged
    # AND the function runs the newest Python runtime, so AwsSolutions-L1 has nothing to report
    assert "AwsSolutions-L1" not in {v["ruleName"] for v in synthesized["nag"]["suppressedViolations"]}


# ------------------------------------------------------------------------------------- neuron-ecs precompile ---

_MOTO_BATCH = {
    "Role": {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": "batch.amazonaws.com"}, "Action": "sts:AssumeRole"}
                ],
            }
        },
    },
    "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
    "Subnet": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.0.0.0/24"}},
    "Group": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "job", "VpcId": {"Ref": "Vpc"}}},
    "Environment": {
        "Type": "AWS::Batch::ComputeEnvironment",
        "Properties": {
            "Type": "MANAGED",
            "ServiceRole": {"Fn::GetAtt": ["Role", "Arn"]},
            "ComputeResources": {
                "Type": "FARGATE",
                "MaxvCpus": 4,
                "Subnets": [{"Ref": "Subnet"}],
                "SecurityGroupIds": [{"Ref": "Group"}],
            },
        },
    },
}


def _deployed(aws: Any, synthesized: dict[str, Any], tmp_path: Any) -> tuple[Any, str]:
    """The Model stack's template written as cdk.out writes it, and a stack of that name in moto holding a job queue
    and a job definition under the template's logical ids (moto creates Batch resources, not the whole stack)."""
    from neuron_constructs.tools.commands.precompile import find_targets

    template = synthesized["templates"]["Model"]
    (target,) = find_targets(template)
    resources_ = dict(_MOTO_BATCH)
    resources_[target.job_queue] = {
        "Type": "AWS::Batch::JobQueue",
        "Properties": {
            "Priority": 1,
            "ComputeEnvironmentOrder": [{"ComputeEnvironment": {"Ref": "Environment"}, "Order": 1}],
        },
    }
    resources_[target.job_definition] = {
        "Type": "AWS::Batch::JobDefinition",
        "Properties": {
            "Type": "container",
            "PlatformCapabilities": ["FARGATE"],
            "RetryStrategy": {"Attempts": 1},
            "Parameters": {},
            "Timeout": {"AttemptDurationSeconds": 3000},
            "ContainerProperties": {"Image": VLLM_TRN2.reference, "Command": COMMAND, "Vcpus": 8, "Memory": 32768},
        },
    }
    aws.client("cloudformation").create_stack(StackName="Model", TemplateBody=json.dumps({"Resources": resources_}))
    file = tmp_path / "Model.template.json"
    file.write_text(json.dumps(template))
    return target, str(file)


class _StandIn:
    """moto's Batch runs a job in Docker, which the tests do not have: DescribeJobs answers ``states`` in turn for the
    job moto accepted, every other call goes to moto."""

    def __init__(self, aws: Any, states: list[tuple[str, str | None]]) -> None:
        self.aws, self.states, self.submitted = aws, list(states), []

    def client(self, name: str, **options: Any) -> Any:
        client = self.aws.client(name, **options)
        if name == "batch":
            submit = client.submit_job

            def submit_job(**request: Any) -> Any:
                answer = submit(**request)
                self.submitted.append((request, answer["jobId"]))
                return answer

            def describe_jobs(jobs: list[str]) -> dict[str, Any]:
                assert jobs == [self.submitted[-1][1]]
                status, reason = self.states.pop(0) if len(self.states) > 1 else self.states[0]
                return {"jobs": [{"jobId": jobs[0], "status": status, **({"statusReason": reason} if reason else {})}]}

            client.submit_job, client.describe_jobs = submit_job, describe_jobs
        return client

    @property
    def region_name(self) -> str:
        return str(self.aws.region_name)


@pytest.mark.parametrize(
    ("states", "status", "last_line"),
    [
        ([("RUNNABLE", None), ("RUNNING", None), ("SUCCEEDED", None)], 0, "SUCCEEDED"),
        ([("RUNNING", None), ("FAILED", "Essential container in task exited")], 3, "FAILED: Essential container"),
    ],
    ids=["succeeded", "failed"],
)
def test_neuron_ecs_precompile_submits_the_model_s_job_and_waits(
    aws: Any,
    synthesized: dict[str, Any],
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    states: list[tuple[str, str | None]],
    status: int,
    last_line: str,
) -> None:
    import io

    from neuron_constructs.tools import cli
    from neuron_constructs.tools.commands import precompile as command

    # GIVEN the model stack deployed (its job queue and job definition in CloudFormation) and its template
    target, template = _deployed(aws, synthesized, tmp_path)
    stand_in = _StandIn(aws, states)
    monkeypatch.setattr(command, "_session", lambda args: stand_in)
    out, err = io.StringIO(), io.StringIO()
    # WHEN neuron-ecs precompile runs on the template
    code = cli.main(["precompile", template, "--poll", "0.001"], stdout=out, stderr=err)
    # THEN it submitted the deployed job definition to the deployed queue, printed each state, and exits by the end
    assert code == status, err.getvalue()
    ((request, job_id),) = stand_in.submitted
    physical = aws.client("cloudformation").describe_stack_resource
    assert (
        request["jobQueue"]
        == physical(StackName="Model", LogicalResourceId=target.job_queue)["StackResourceDetail"]["PhysicalResourceId"]
    )
    assert request["jobDefinition"].endswith(":1")
    assert request["jobName"] == "precompile-Model-Service"
    lines = out.getvalue().splitlines()
    assert [line.split()[-1] for line in lines[:2]] == ["SUBMITTED", states[0][0]]
    assert all("Model/Service" in line and job_id in line for line in lines)
    assert last_line in lines[-1]


def test_neuron_ecs_precompile_refuses_a_template_without_a_precompile_job(tmp_path: Any) -> None:
    import io

    from neuron_constructs.tools import cli

    file = tmp_path / "Other.template.json"
    file.write_text(json.dumps({"Resources": {}}))
    err = io.StringIO()
    assert cli.main(["precompile", str(file)], stdout=io.StringIO(), stderr=err) == 2
    assert "has no precompile job" in err.getvalue()


def test_neuron_ecs_precompile_needs_model_when_a_template_precompiles_several() -> None:
    from pathlib import Path

    from neuron_constructs.tools.commands.output import _UsageError
    from neuron_constructs.tools.commands.precompile import PrecompileTarget, _choose

    file = Path("App.template.json")
    targets = [(PrecompileTarget("App/Llm", "A", "B"), file), (PrecompileTarget("App/Coder", "C", "D"), file)]
    with pytest.raises(_UsageError, match="precompiles App/Llm, App/Coder: pass --model"):
        _choose(targets, None, "App.template.json")
    assert _choose(targets, "Coder", "App.template.json")[0].job_definition == "C"


def test_neuron_ecs_precompile_finds_the_model_s_stack_in_a_cloud_assembly(
    synthesized: dict[str, Any], tmp_path: Any
) -> None:
    from neuron_constructs.tools.commands.precompile import _choose, _targets_of, _template_files

    # GIVEN a cdk.out with the platform's template and the model's
    for name in ("Platform", "Model"):
        (tmp_path / f"{name}.template.json").write_text(json.dumps(synthesized["templates"][name]))
    # THEN the job is found in the model's template, which names the stack
    target, file = _choose(_targets_of(_template_files(str(tmp_path))), None, str(tmp_path))
    assert (target.model, file.name) == ("Model/Service", "Model.template.json")


def test_waiting_stops_at_the_timeout_and_says_so() -> None:
    from neuron_constructs.tools.commands.precompile import submit_and_wait

    class Batch:
        def submit_job(self, **request: Any) -> dict[str, Any]:
            return {"jobId": "j-1"}

        def describe_jobs(self, jobs: list[str]) -> dict[str, Any]:
            return {"jobs": [{"jobId": "j-1", "status": "RUNNING"}]}

    now = [0.0]
    seen: list[str] = []
    job = submit_and_wait(
        Batch(),
        job_queue="q",
        job_definition="d",
        model="App/Llm",
        poll_s=10,
        timeout_s=30,
        report=lambda status, job: seen.append(status),
        sleep=lambda s: now.__setitem__(0, now[0] + s),
        clock=lambda: now[0],
    )
    assert job["status"] == "TIMED_OUT"
    assert seen == ["SUBMITTED", "RUNNING"]


def test_on_managed_instances_the_target_is_the_selected_family_s() -> None:
    from neuron_constructs import ManagedNeuronTaskDefinition

    # GIVEN a model on a Managed Instances capacity that admits trn2 types only
    stack = Stack(App(analytics_reporting=False), "Managed", env=ENV)
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    capacity = cluster.add_managed_instances_capacity("Managed", instance_types=["trn2.48xlarge"])
    cache = CompileCache.in_new_file_system(stack, "Cache", vpc=cluster.vpc, clients=[capacity.security_group])
    task = ManagedNeuronTaskDefinition(stack, "Llm", cpu=8192, memory_mib=65536)
    task.add_neuron_container(
        "vllm", image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference), command=COMMAND, compile_cache=cache
    )
    service = _service(stack, cluster, task, rollout=Rollout.blue_green(), precompile=Precompile())
    # THEN the job compiles for trn2
    assert service.precompile_job is not None and service.precompile_job.target == "trn2"


@pytest.mark.parametrize("stack", ["BlueGreen", "Fleet"])
def test_plan_startup_reads_the_precompile_as_a_cache_fetch_of_every_copy(
    synthesized: dict[str, Any], stack: str, tmp_path: Any
) -> None:
    from neuron_constructs.tools.startup_planning import startup_paths

    template = tmp_path / f"{stack}.template.json"
    template.write_text(json.dumps(synthesized["templates"][stack]))
    (model,) = startup_paths([str(template)]).models
    steps = {step.step: step for step in model.steps}
    assert "compile" not in steps
    assert f"(precompiled by {stack}/" in steps["cacheFetch"].what
    assert "cache-hit-only: a miss fails the start" in steps["cacheFetch"].what
    assert model.copies == (2 if stack == "Fleet" else 1)


def _job_command(stack: Stack) -> list[str]:
    template = Template.from_stack(stack).to_json()
    (definition,) = resources(template, "AWS::Batch::JobDefinition").values()
    return definition["Properties"]["ContainerProperties"]["Command"]


def test_a_container_with_the_image_s_own_entry_point_and_the_driver_check_precompiles_without_the_check() -> None:
    """The image table records the vLLM Neuron image's own ENTRYPOINT: a container that names it (as the driver
    start check needs) runs in the job as the image runs it, without the check (a CPU host has no Neuron driver)."""
    stack, cluster, cache = _stack()
    own = list(VLLM_TRN2.entry_point or ())
    assert own == ["python", "/usr/local/bin/vllm_entrypoint.py"]
    task = _task(stack, cache=cache, entry_point=own, driver_check=True)
    container = task.neuron_containers[0].render_container_definition()
    assert container.entry_point[-1] == "neuron-driver-check"  # type: ignore[index]
    _service(stack, cluster, task, precompile=Precompile())
    assert _job_command(stack) == cpu_compile.job_command(COMMAND, 8000)


def test_a_container_with_the_image_s_own_entry_point_precompiles_with_the_command() -> None:
    stack, cluster, cache = _stack()
    task = _task(stack, cache=cache, entry_point=list(VLLM_TRN2.entry_point or ()))
    _service(stack, cluster, task, precompile=Precompile())
    assert _job_command(stack) == cpu_compile.job_command(COMMAND, 8000)


def test_the_job_s_security_group_sends_https_and_nfs_to_the_cache_only(synthesized: dict[str, Any]) -> None:
    template = synthesized["templates"]["Rolling"]
    job_group, group = next(
        (k, v) for k, v in resources(template, "AWS::EC2::SecurityGroup").items() if k.startswith("ServicePrecompile")
    )
    egress = [
        (r.get("CidrIp"), r["IpProtocol"], r.get("FromPort"), r.get("ToPort"))
        for r in group["Properties"].get("SecurityGroupEgress", [])
    ] + [
        ("cache", r["Properties"]["IpProtocol"], r["Properties"]["FromPort"], r["Properties"]["ToPort"])
        for r in resources(template, "AWS::EC2::SecurityGroupEgress").values()
        if r["Properties"]["GroupId"] == {"Fn::GetAtt": [job_group, "GroupId"]}
    ]
    assert sorted(egress, key=str) == sorted([("0.0.0.0/0", "tcp", 443, 443), ("cache", "tcp", 2049, 2049)], key=str)
    assert "SecurityGroupIngress" not in group["Properties"]


def test_a_sliced_service_compiles_once_before_every_slice() -> None:
    from neuron_constructs import SlicedNeuronService

    stack, cluster, cache = _stack()
    sliced = SlicedNeuronService(
        stack,
        "Llm",
        cluster=cluster,
        instance_type="trn2.48xlarge",
        devices_per_task=8,
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        command=COMMAND,
        memory_reservation_mib=8192,
        compile_cache=cache,
        precompile=Precompile(),
    )
    template = Template.from_stack(stack).to_json()
    run_id, _ = _one(template, "Custom::NeuronPrecompile")
    services = resources(template, "AWS::ECS::Service")
    assert len(services) == sliced.slices == 2
    assert all(run_id in s["DependsOn"] for s in services.values())
    assert len(resources(template, "AWS::Batch::JobDefinition")) == 1
