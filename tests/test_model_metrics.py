"""Per-model metrics and scaling on the chips: every Neuron container of a service, slice or fleet model carries
``NEURON_PROCESS_TAG`` naming its model, and ``scale_on_neuron_utilization`` tracks that model's NeuronCore
utilization beside (or instead of) request scaling, on one scalable target, with the platform and the model in
separate stacks."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk.assertions import Annotations, Match
from conftest import imported_vpc, resources
from hypothesis import given, settings
from hypothesis import strategies as st

from neuron_constructs import (
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronFleet,
    NeuronLoadBalancer,
    NeuronMonitoring,
    NeuronService,
    SlicedNeuronService,
)
from neuron_constructs.checks import inputs
from neuron_constructs.knowledge import rules
from neuron_constructs.programs.metric_publisher import NAMESPACE, PROCESS_TAG_VARIABLE
from neuron_constructs.training.queue import NeuronTrainingQueue

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
ENV = {"account": "123456789012", "region": "us-east-1"}


def _environment(container: dict[str, Any]) -> dict[str, str]:
    return {e["Name"]: e["Value"] for e in container.get("Environment", [])}


def _platform(app: App, *, monitored: bool = True) -> tuple[Stack, NeuronCluster, NeuronLoadBalancer]:
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Cluster", vpc=imported_vpc(platform))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=4)
    if monitored:
        NeuronMonitoring(platform, "Monitoring", cluster=cluster, recovery=False)
    return platform, cluster, NeuronLoadBalancer(platform, "Lb", cluster=cluster)


def _model(app: App, cluster: NeuronCluster, **service: Any) -> tuple[Stack, NeuronService]:
    model = Stack(app, "Model", env=ENV)
    task = ManualNeuronTaskDefinition(model, "Task", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    return model, NeuronService(model, "Llama", cluster=cluster, task_definition=task, **service)


def _policies(stack: Stack) -> list[dict[str, Any]]:
    template = App.of(stack).synth().get_stack_by_name(stack.stack_name).template  # type: ignore[union-attr]
    return [r["Properties"] for r in resources(template, "AWS::ApplicationAutoScaling::ScalingPolicy").values()]


def test_a_service_tags_its_neuron_containers_with_its_model_name_by_default_its_path() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    _, service = _model(app, cluster)
    assert service.model_name == "Model/Llama"
    template = app.synth().get_stack_by_name("Model").template
    (task,) = resources(template, "AWS::ECS::TaskDefinition").values()
    (container,) = task["Properties"]["ContainerDefinitions"]
    assert _environment(container)[PROCESS_TAG_VARIABLE] == "Model/Llama"


def test_a_given_model_name_or_tag_names_the_model() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    _, named = _model(app, cluster, model_name="llama-3-8b")
    assert named.model_name == "llama-3-8b"
    stack = Stack(app, "Tagged", env=ENV)
    task = ManagedNeuronTaskDefinition(stack, "Task", cpu=4096, memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, environment={PROCESS_TAG_VARIABLE: "mistral"})
    mi = NeuronCluster(stack, "Mi", vpc=imported_vpc(stack))
    mi.add_managed_instances_capacity("Mi", instance_types=["inf2.xlarge"])
    assert NeuronService(stack, "Svc", cluster=mi, task_definition=task).model_name == "mistral"


@pytest.mark.parametrize(
    ("model_name", "problem"),
    [
        ("", "model_name='' is not 1 to 255 such characters"),
        ("x" * 256, "is not 1 to 255 such characters"),
        ("-leading", "model_name='-leading' is not"),
        ("naïve", "model_name='naïve' is not"),
    ],
)
def test_a_name_neuron_monitor_or_cloudwatch_cannot_carry_is_refused(model_name: str, problem: str) -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    with pytest.raises(NeuronConfigurationError, match=re.escape(problem)) as raised:
        _model(app, cluster, model_name=model_name)
    assert f"[{rules.MODEL_NAME.id}:" in str(raised.value) and "Model/Llama" in str(raised.value)


def test_a_task_definition_serves_one_model() -> None:
    stack = Stack(App(analytics_reporting=False), "Model", env=ENV)
    cluster = NeuronCluster(stack, "Mi", vpc=imported_vpc(stack))
    cluster.add_managed_instances_capacity("Mi", instance_types=["inf2.xlarge"])
    task = ManagedNeuronTaskDefinition(stack, "Task", cpu=4096, memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(stack, "Llama", cluster=cluster, task_definition=task, model_name="llama")
    again = NeuronService(stack, "Again", cluster=cluster, task_definition=task)
    assert again.model_name == "llama"  # a second service of the task definition reports as its model
    with pytest.raises(NeuronConfigurationError, match=r"Model/Other: model_name='mistral', but Model/Task already"):
        NeuronService(stack, "Other", cluster=cluster, task_definition=task, model_name="mistral")


def test_every_copy_of_a_fleet_model_carries_the_model_s_tag() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    stack = Stack(app, "Models", env=ENV)
    fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    embed = fleet.add_model("Embed", image=IMAGE, cores_per_task=1, copies=4)
    llm = fleet.add_model("Llm", image=IMAGE, devices_per_task=4, model_name="llama")
    assert (embed.model_name, llm.model_name) == ("Models/Fleet/Embed", "llama")
    template = app.synth().get_stack_by_name("Models").template
    tags = sorted(
        _environment(c)[PROCESS_TAG_VARIABLE]
        for t in resources(template, "AWS::ECS::TaskDefinition").values()
        for c in t["Properties"]["ContainerDefinitions"]
    )
    assert tags == ["Models/Fleet/Embed"] * 4 + ["llama"]


def test_scale_on_neuron_utilization_tracks_the_model_s_metric_in_the_model_s_stack() -> None:
    app = App(analytics_reporting=False)
    platform, cluster, _ = _platform(app)
    model, service = _model(app, cluster, model_name="llama")
    target = service.scale_on_neuron_utilization(max_count=4)
    assert target is service.scalable_target
    (policy,) = _policies(model)
    tracking = policy["TargetTrackingScalingPolicyConfiguration"]
    metric = tracking["CustomizedMetricSpecification"]
    assert (metric["Namespace"], metric["MetricName"], metric["Statistic"]) == (
        NAMESPACE,
        "NeuronCoreUtilization",
        "Average",
    )
    dimensions = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
    assert dimensions["Model"] == "llama" and "Fn::ImportValue" in dimensions["ClusterName"]
    assert tracking["TargetValue"] == 70
    assert (tracking["ScaleOutCooldown"], tracking["ScaleInCooldown"]) == (60, 1800)
    # the model depends on the platform, never the other way round
    assert platform in model.dependencies and model not in platform.dependencies
    assert Annotations.from_stack(model).find_warning("*", Match.string_like_regexp(rules.UNMONITORED_SCALING.id)) == []


def test_request_and_utilization_scaling_share_one_scalable_target() -> None:
    app = App(analytics_reporting=False)
    _, cluster, lb = _platform(app)
    _, service = _model(app, cluster)
    service.attach_to_listener(lb.listener, conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])], priority=1)
    first = service.scale_on_neuron_utilization(target_percent=60, max_count=3)
    second = service.scale_on_requests(requests_per_target=60, max_count=3)
    assert first is second
    template = app.synth().get_stack_by_name("Model").template
    assert len(resources(template, "AWS::ApplicationAutoScaling::ScalableTarget")) == 1
    kinds = sorted(
        "custom" if "CustomizedMetricSpecification" in p else p["PredefinedMetricSpecification"]["PredefinedMetricType"]
        for p in (r["Properties"]["TargetTrackingScalingPolicyConfiguration"] for r in _policy_resources(template))
    )
    assert kinds == ["ALBRequestCountPerTarget", "custom"]


def _policy_resources(template: dict[str, Any]) -> list[dict[str, Any]]:
    return list(resources(template, "AWS::ApplicationAutoScaling::ScalingPolicy").values())


def test_a_second_target_of_other_counts_or_a_repeated_method_is_refused() -> None:
    app = App(analytics_reporting=False)
    _, cluster, lb = _platform(app)
    _, service = _model(app, cluster)
    service.attach_to_listener(lb.listener, conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])], priority=1)
    service.scale_on_neuron_utilization(max_count=3)
    with pytest.raises(NeuronConfigurationError, match=r"scale_on_neuron_utilization was already called.*NEURON035"):
        service.scale_on_neuron_utilization(max_count=3)
    with pytest.raises(
        NeuronConfigurationError,
        match=r"scale_on_requests asks for 1 to 2 tasks, but scale_on_neuron_utilization made the target for 1 to 3",
    ):
        service.scale_on_requests(requests_per_target=60, max_count=2)


def test_utilization_scaling_keeps_the_request_scaling_rules() -> None:
    """One task per instance for a manual task definition: max_count is held to the capacity (NEURON017), and a
    passed minimum healthy percent must leave a deployment room (NEURON032)."""
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    _, service = _model(app, cluster)
    with pytest.raises(NeuronConfigurationError, match=r"max_count=5.*\[NEURON017"):
        service.scale_on_neuron_utilization(max_count=5)
    other = App(analytics_reporting=False)
    _, full = _model(other, _platform(other)[1])
    assert full.min_healthy_percent == 100
    full.scale_on_neuron_utilization(max_count=4)
    assert full.min_healthy_percent == 75  # the library's minimum, lowered so four tasks on four instances deploy
    for bad in (0, 101):
        with pytest.raises(NeuronConfigurationError, match="target_percent"):
            service.scale_on_neuron_utilization(max_count=2, target_percent=bad)


def test_without_monitoring_on_the_capacity_utilization_scaling_warns() -> None:
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app, monitored=False)
    model, service = _model(app, cluster)
    service.scale_on_neuron_utilization(max_count=2)
    app.synth()
    (warning,) = Annotations.from_stack(model).find_warning("*", Match.string_like_regexp(rules.UNMONITORED_SCALING.id))
    assert "Model/Llama: scale_on_neuron_utilization on Platform/Cluster/Inf2" in str(warning.entry.data)
    assert rules.UNMONITORED_SCALING.warning_id == "neuron-constructs:NEURON114"


def test_fleet_models_scale_their_copies_together_on_the_model_s_utilization() -> None:
    app = App(analytics_reporting=False)
    _, cluster, lb = _platform(app)
    stack = Stack(app, "Models", env=ENV)
    fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    embed = fleet.add_model(
        "Embed", image=IMAGE, cores_per_task=1, copies=4, port_mappings=[ecs.PortMapping(container_port=8080)]
    )
    embed.attach_to_listener(lb.listener, conditions=[elbv2.ListenerCondition.path_patterns(["/e/*"])], priority=2)
    targets = embed.scale_on_neuron_utilization(max_count=3, target_percent=80)
    assert embed.scale_on_requests(requests_per_target=50, min_count=1, max_count=3) == targets
    template = app.synth().get_stack_by_name("Models").template
    custom = [
        p["Properties"]["TargetTrackingScalingPolicyConfiguration"]
        for p in _policy_resources(template)
        if "CustomizedMetricSpecification" in p["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    ]
    assert len(custom) == 4 and len(_policy_resources(template)) == 8
    assert {
        next(d["Value"] for d in c["CustomizedMetricSpecification"]["Dimensions"] if d["Name"] == "Model")
        for c in custom
    } == {"Models/Fleet/Embed"}
    assert {c["TargetValue"] for c in custom} == {80}
    with pytest.raises(NeuronConfigurationError, match=r"auto_scale: scale_on_neuron_utilization already made"):
        embed.auto_scale(min_count=1, max_count=3)


def test_a_neuron_container_added_after_the_service_is_tagged_too_and_a_different_tag_is_refused() -> None:
    stack = Stack(App(analytics_reporting=False), "Model", env=ENV)
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.48xlarge", memory_mib=8192)
    task.add_neuron_container("first", image=IMAGE, devices=[0])
    NeuronService(stack, "Svc", cluster=cluster, task_definition=task, model_name="llama")
    task.add_neuron_container("second", image=IMAGE, devices=[1])
    with pytest.raises(NeuronConfigurationError, match=r"NEURON_PROCESS_TAG='other', but the task definition's model"):
        task.add_neuron_container("third", image=IMAGE, devices=[2], environment={PROCESS_TAG_VARIABLE: "other"})
    template = App.of(stack).synth().get_stack_by_name("Model").template  # type: ignore[union-attr]
    (definition,) = resources(template, "AWS::ECS::TaskDefinition").values()
    tags = {
        c["Name"]: _environment(c).get(PROCESS_TAG_VARIABLE) for c in definition["Properties"]["ContainerDefinitions"]
    }
    assert tags == {"first": "llama", "second": "llama"}


def test_monitoring_made_after_the_scaling_still_silences_the_warning() -> None:
    """NEURON114 is decided at synth: a NeuronMonitoring made later in the app covers the capacity too."""
    app = App(analytics_reporting=False)
    platform, cluster, _ = _platform(app, monitored=False)
    model, service = _model(app, cluster)
    service.scale_on_neuron_utilization(max_count=2)
    NeuronMonitoring(platform, "LateMonitoring", cluster=cluster, recovery=False)
    app.synth()
    found = Annotations.from_stack(model).find_warning("*", Match.string_like_regexp(rules.UNMONITORED_SCALING.id))
    assert found == []


DERIVED = [
    pytest.param("Model/Llama", "Model/Llama", id="a path neuron-monitor carries is the name"),
    pytest.param("Model/Llama 3", "Model/Llama-3-", id="a space becomes a hyphen"),
    pytest.param("Model/Llama\u00e9 3", "Model/Llama--3-", id="non-ASCII becomes a hyphen"),
]


@pytest.mark.parametrize(("path", "start"), DERIVED)
def test_a_derived_model_name_is_the_path_made_fit_for_neuron_monitor(path: str, start: str) -> None:
    """GIVEN a construct path WHEN the library derives a model name from it THEN the name is the path where that is
    valid, else the path with invalid characters replaced and 8 hex digits of its hash appended."""
    name = inputs.derived_model_name(path)
    assert name == path if start == path else re.fullmatch(re.escape(start) + r"[0-9a-f]{8}", name), name
    assert inputs.check_model_name("App/X", name) == name


def test_derived_model_names_of_paths_that_read_alike_once_replaced_differ() -> None:
    names = {inputs.derived_model_name(p) for p in ("App/Llama 3", "App/Llama-3", "App/Llama\t3", "App/Llama+3")}
    assert len(names) == 4


def test_a_derived_model_name_of_a_long_path_fits_in_255_characters() -> None:
    path = "App/" + "/".join(["Nested Model"] * 40)
    name = inputs.derived_model_name(path)
    assert len(name) == 255 and name.startswith("App/Nested-Model/") and re.search(r"-[0-9a-f]{8}$", name)
    assert inputs.derived_model_name(path + "x") != name  # cut alike, hashed apart


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_every_derived_model_name_is_one_neuron_monitor_and_cloudwatch_take(path: str) -> None:
    """Whatever the path (any Unicode, any length): the derived name passes the NEURON067 check."""
    name = inputs.derived_model_name(path)
    assert inputs.check_model_name("App/X", name) == name


def test_a_service_with_a_space_in_its_id_gets_a_valid_derived_model_name() -> None:
    """GIVEN a NeuronService with the construct id "Llama 3" and no model_name WHEN built THEN it is accepted and its
    Neuron containers carry the derived name; a user's own model_name "Llama 3" is refused (NEURON067)."""
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    model = Stack(app, "Model", env=ENV)
    task = ManualNeuronTaskDefinition(model, "Task", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    service = NeuronService(model, "Llama 3", cluster=cluster, task_definition=task)
    assert re.fullmatch(r"Model/Llama-3-[0-9a-f]{8}", service.model_name), service.model_name
    template = app.synth().get_stack_by_name("Model").template
    (definition,) = resources(template, "AWS::ECS::TaskDefinition").values()
    (container,) = definition["Properties"]["ContainerDefinitions"]
    assert _environment(container)[PROCESS_TAG_VARIABLE] == service.model_name
    other = ManualNeuronTaskDefinition(model, "Other", instance_type="inf2.48xlarge", devices=[2, 3], memory_mib=8192)
    other.add_neuron_container("model", image=IMAGE)
    with pytest.raises(NeuronConfigurationError, match=r"Model/Mine: model_name='Llama 3' is not 1 to 255.*NEURON067"):
        NeuronService(model, "Mine", cluster=cluster, task_definition=other, model_name="Llama 3")


def test_fleet_models_and_sliced_services_with_a_space_in_their_id_get_a_valid_derived_model_name() -> None:
    """GIVEN a fleet model and a SlicedNeuronService with the id "Llama 3" and no model_name THEN both are accepted
    with the derived name; a fleet model's own model_name "Llama 3" is refused (NEURON067)."""
    app = App(analytics_reporting=False)
    _, cluster, _ = _platform(app)
    stack = Stack(app, "Models", env=ENV)
    fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    model = fleet.add_model("Llama 3", image=IMAGE, cores_per_task=1, copies=2)
    assert re.fullmatch(r"Models/Fleet/Llama-3-[0-9a-f]{8}", model.model_name), model.model_name
    assert {s.model_name for s in model.copy_services} == {model.model_name}
    with pytest.raises(NeuronConfigurationError, match=r"model_name='Llama 3' is not 1 to 255.*NEURON067"):
        fleet.add_model("Mine", image=IMAGE, cores_per_task=1, copies=1, model_name="Llama 3")
    sliced_stack = Stack(App(analytics_reporting=False), "Sliced")
    own = NeuronCluster(sliced_stack, "C", vpc=imported_vpc(sliced_stack))
    own.add_ec2_capacity("Inf2", instance_type="inf2.24xlarge", max_capacity=2)
    sliced = SlicedNeuronService(
        sliced_stack, "Llama 3", cluster=own, instance_type="inf2.24xlarge", devices_per_task=2, image=IMAGE
    )
    assert re.fullmatch(r"Sliced/Llama-3-[0-9a-f]{8}", sliced.model_name), sliced.model_name


def test_a_monitored_training_job_with_a_space_in_its_id_is_tagged_with_a_valid_derived_name() -> None:
    """GIVEN a monitored training queue WHEN a job with the id "Llama 3" is added THEN it is accepted and its
    NEURON_PROCESS_TAG is the derived name."""
    queue = NeuronTrainingQueue(
        Stack(App(analytics_reporting=False), "Train"),
        "Queue",
        instance_type="trn1.32xlarge",
        max_nodes=1,
        monitoring=True,
    )
    job = queue.add_job("Llama 3", nodes=1, image=IMAGE, command=["python", "train.py"])
    tag = (job.container.environment or {})[PROCESS_TAG_VARIABLE]
    assert re.fullmatch(r"Train/Queue/Llama-3-[0-9a-f]{8}", tag), tag
