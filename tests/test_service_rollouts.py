"""Rollouts on the template: each strategy on each kind of service, the platform in one stack and each model in its
own, read from the synthesized CloudFormation.

One app is synthesized once for the module: a ``Platform`` stack (VPC, cluster, an inf2.48xlarge Auto Scaling
capacity for the manual services, one for the fleet, a Managed Instances capacity, the monitoring and the load
balancer) and one stack per model: ``Llm`` (manual two-chip service, blue/green with a smoke test), ``Chat``
(managed allocation on Managed Instances, canary), ``Batch`` (manual one-chip service, linear), ``Embedding`` (a fleet
model of four one-core copies, canary) and ``Sliced`` (a sliced service of three two-chip copies on
inf2.24xlarge, linear).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from conftest import imported_vpc, resources

from neuron_constructs import (
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronFleet,
    NeuronLoadBalancer,
    NeuronMonitoring,
    NeuronService,
    Rollout,
    RolloutAlarms,
    SlicedNeuronService,
    SmokeTest,
)
from neuron_constructs.knowledge import rules as r
from neuron_constructs.serving.fleet_stages import rollout_stages
from neuron_constructs.serving.rollout_traffic import TEST_HEADER

pytestmark = pytest.mark.xdist_group("service_rollouts")  # one worker synthesizes the module's app once

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
PORT = 8080
ENV = {"account": "111111111111", "region": "us-east-1"}
MODEL_STACKS = ("Llm", "Chat", "Batch", "Embedding", "Sliced")


def _path(conditions: str) -> list[elbv2.ListenerCondition]:
    return [elbv2.ListenerCondition.path_patterns([conditions])]


def _manual(stack: Stack, id: str, devices: list[int]) -> ManualNeuronTaskDefinition:
    task = ManualNeuronTaskDefinition(
        stack, id, instance_type="inf2.48xlarge", devices=devices, cpu=4096, memory_mib=16384
    )
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=PORT)])
    return task


@functools.cache
def synthesized() -> dict[str, Any]:
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform", env=ENV)
    cluster = NeuronCluster(platform, "Neuron", vpc=imported_vpc(platform))
    llm_capacity = cluster.add_ec2_capacity("Llm", instance_type="inf2.48xlarge", max_capacity=4)
    fleet_capacity = cluster.add_ec2_capacity("Fleet", instance_type="inf2.48xlarge", max_capacity=2)
    sliced_capacity = cluster.add_ec2_capacity("Sliced", instance_type="inf2.24xlarge", max_capacity=2)
    cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
    NeuronMonitoring(platform, "Monitoring", cluster=cluster)
    listener = NeuronLoadBalancer(platform, "LoadBalancer", cluster=cluster).listener
    services: dict[str, Any] = {}

    llm = Stack(app, "Llm", env=ENV)
    services["Llm"] = NeuronService(
        llm,
        "Service",
        cluster=cluster,
        task_definition=_manual(llm, "Task", [0, 1]),
        desired_count=2,
        capacity=llm_capacity,
        rollout=Rollout.blue_green(
            bake_time=Duration.minutes(15), smoke_test=SmokeTest("/v1/models", expect_status=200)
        ),
    )
    services["Llm"].attach_to_listener(listener, conditions=_path("/v1/*"), priority=10)

    chat = Stack(app, "Chat", env=ENV)
    managed = ManagedNeuronTaskDefinition(chat, "Task", cpu=8192, memory_mib=16384)
    managed.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=PORT)])
    services["Chat"] = NeuronService(
        chat, "Service", cluster=cluster, task_definition=managed, rollout=Rollout.canary(percent=20)
    )
    services["Chat"].attach_to_listener(listener, conditions=_path("/chat/*"), priority=20)

    batch = Stack(app, "Batch", env=ENV)
    services["Batch"] = NeuronService(
        batch,
        "Service",
        cluster=cluster,
        task_definition=_manual(batch, "Task", [2]),
        capacity=llm_capacity,
        rollout=Rollout.linear(step_percent=50, interval=Duration.minutes(3), alarms=RolloutAlarms(target_5xx=20)),
    )
    services["Batch"].attach_to_listener(listener, conditions=_path("/batch/*"), priority=30)

    embedding = Stack(app, "Embedding", env=ENV)
    fleet = NeuronFleet(embedding, "Fleet", cluster=cluster, instance_type="inf2.48xlarge", capacity=fleet_capacity)
    services["Embedding"] = fleet.add_model(
        "Model",
        cores_per_task=1,
        copies=4,
        image=IMAGE,
        port_mappings=[ecs.PortMapping(container_port=PORT)],
        rollout=Rollout.canary(percent=25),
    )
    services["Embedding"].attach_to_listener(listener, conditions=_path("/embed/*"), priority=40)

    sliced = Stack(app, "Sliced", env=ENV)
    services["Sliced"] = SlicedNeuronService(
        sliced,
        "Model",
        cluster=cluster,
        instance_type="inf2.24xlarge",
        devices_per_task=2,
        capacity=sliced_capacity,
        image=IMAGE,
        port_mappings=[ecs.PortMapping(container_port=PORT)],
        rollout=Rollout.linear(step_percent=34),
    )
    services["Sliced"].attach_to_listener(listener, conditions=_path("/sliced/*"), priority=50)

    assembly = app.synth()
    return {
        "templates": {s.stack_name: s.template for s in assembly.stacks},
        "depends_on": {
            s.stack_name: sorted(d.id for d in s.dependencies if not d.id.endswith(".assets")) for s in assembly.stacks
        },
        "warnings": [
            f"{m.id} {m.entry.data}" for s in assembly.stacks for m in s.messages if m.level.value.lower() == "warning"
        ],
        "services": services,
    }


@pytest.fixture(scope="module")
def app() -> dict[str, Any]:
    return synthesized()


def _service(template: dict[str, Any]) -> dict[str, Any]:
    """The template's one model service (the monitoring's daemon services aside)."""
    (service,) = [
        s
        for s in resources(template, "AWS::ECS::Service").values()
        if s["Properties"].get("SchedulingStrategy") != "DAEMON"
    ]
    return service["Properties"]


def _ref(value: Any) -> str:
    assert isinstance(value, dict) and "Ref" in value, value
    return str(value["Ref"])


def test_the_platform_depends_on_no_model_and_each_model_only_on_the_platform(app: dict[str, Any]) -> None:
    assert app["depends_on"]["Platform"] == []
    for name in MODEL_STACKS:
        assert app["depends_on"][name] == ["Platform"], name


@pytest.mark.parametrize(
    ("stack", "strategy", "bake", "shift"),
    [
        ("Llm", "BLUE_GREEN", 15, None),
        ("Chat", "CANARY", 10, ("CanaryConfiguration", {"CanaryPercent": 20, "CanaryBakeTimeInMinutes": 5})),
        ("Batch", "LINEAR", 10, ("LinearConfiguration", {"StepPercent": 50, "StepBakeTimeInMinutes": 3})),
    ],
)
def test_a_native_rollout_sets_ecs_s_strategy_and_its_numbers(
    app: dict[str, Any], stack: str, strategy: str, bake: int, shift: tuple[str, dict[str, Any]] | None
) -> None:
    deployment = _service(app["templates"][stack])["DeploymentConfiguration"]
    assert deployment["Strategy"] == strategy
    assert deployment["BakeTimeInMinutes"] == bake
    if shift is not None:
        assert deployment[shift[0]] == shift[1]
    assert deployment["Alarms"]["Enable"] is True and deployment["Alarms"]["Rollback"] is True


@pytest.mark.parametrize("stack", ["Llm", "Chat", "Batch"])
def test_the_target_group_pair_rules_and_role_are_the_model_s_own(app: dict[str, Any], stack: str) -> None:
    template = app["templates"][stack]
    (balanced,) = _service(template)["LoadBalancers"]
    advanced = balanced["AdvancedConfiguration"]
    groups = resources(template, "AWS::ElasticLoadBalancingV2::TargetGroup")
    production, alternate = _ref(balanced["TargetGroupArn"]), _ref(advanced["AlternateTargetGroupArn"])
    assert {production, alternate} == set(groups)
    assert groups[production]["Properties"] == groups[alternate]["Properties"]  # green is checked as blue is
    rule = resources(template, "AWS::ElasticLoadBalancingV2::ListenerRule")[_ref(advanced["ProductionListenerRule"])]
    assert rule["Properties"]["Actions"] == [{"TargetGroupArn": {"Ref": production}, "Type": "forward"}]
    (service,) = resources(template, "AWS::ECS::Service").values()
    referenced = {_ref(advanced["ProductionListenerRule"]), _ref(advanced.get("TestListenerRule", {"Ref": "-"}))}
    assert service.get("DependsOn") and not referenced & set(service["DependsOn"])  # cfn-lint W3005: no repeats
    role = resources(template, "AWS::IAM::Role")[advanced["RoleArn"]["Fn::GetAtt"][0]]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "ecs.amazonaws.com"}


def test_a_smoke_test_gets_a_test_rule_before_production_and_a_hook_after_test_traffic(app: dict[str, Any]) -> None:
    template = app["templates"]["Llm"]
    service = _service(template)
    rules_ = resources(template, "AWS::ElasticLoadBalancingV2::ListenerRule")
    advanced = service["LoadBalancers"][0]["AdvancedConfiguration"]
    production = rules_[_ref(advanced["ProductionListenerRule"])]["Properties"]
    test = rules_[_ref(advanced["TestListenerRule"])]["Properties"]
    assert test["Priority"] == production["Priority"] - 1 == 9
    assert test["Conditions"] == [
        *production["Conditions"],
        {"Field": "http-header", "HttpHeaderConfig": {"HttpHeaderName": TEST_HEADER, "Values": ["test"]}},
    ]
    (hook,) = service["DeploymentConfiguration"]["LifecycleHooks"]
    assert hook["LifecycleStages"] == ["POST_TEST_TRAFFIC_SHIFT"]
    function = resources(template, "AWS::Lambda::Function")[hook["HookTargetArn"]["Fn::GetAtt"][0]]["Properties"]
    environment = function["Environment"]["Variables"]
    assert environment["SMOKE_TEST_PATH"] == "/v1/models" and environment["SMOKE_TEST_EXPECT_STATUS"] == "200"
    assert environment["SMOKE_TEST_HEADER"] == f"{TEST_HEADER}: test"
    assert "VpcConfig" in function


def test_without_a_smoke_test_there_is_no_test_rule_and_no_hook(app: dict[str, Any]) -> None:
    for stack in ("Chat", "Batch"):
        service = _service(app["templates"][stack])
        assert "TestListenerRule" not in service["LoadBalancers"][0]["AdvancedConfiguration"]
        assert "LifecycleHooks" not in service["DeploymentConfiguration"]
        assert len(resources(app["templates"][stack], "AWS::ElasticLoadBalancingV2::ListenerRule")) == 1


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in resources(template, "AWS::CloudWatch::Alarm").items()}


def test_ecs_rolls_back_on_the_model_s_execution_errors_5xx_and_p99(app: dict[str, Any]) -> None:
    template = app["templates"]["Batch"]
    alarms = _alarms(template)
    names = [_ref(n) for n in _service(template)["DeploymentConfiguration"]["Alarms"]["AlarmNames"]]
    assert sorted(names) == sorted(alarms)
    by_description = {p["AlarmDescription"]: p for p in alarms.values()}
    errors = by_description["Rolls a deployment back: 1 or more Neuron execution errors of the model a minute"]
    assert errors["MetricName"] == "ExecutionErrors" and errors["Statistic"] == "Sum" and errors["Period"] == 60
    assert {d["Name"] for d in errors["Dimensions"]} == {"ClusterName", "Model"}
    five = by_description["Rolls a deployment back: 20 or more 5xx answers of the model's tasks a minute"]
    assert five["Threshold"] == 20 and five["Metrics"][0]["Expression"] == "FILL(e0, 0) + FILL(e1, 0)"
    slow = by_description["Rolls a deployment back: p99 response time of the model's tasks at or above 60 s"]
    assert slow["Metrics"][0]["Expression"] == "MAX([p0, p1])" and slow["Threshold"] == 60
    groups = set(resources(template, "AWS::ElasticLoadBalancingV2::TargetGroup"))
    watched = {
        m["MetricStat"]["Metric"]["Dimensions"][1]["Value"]["Fn::GetAtt"][0]
        for m in five["Metrics"]
        if "MetricStat" in m
    }
    assert watched == groups  # blue and green: ECS swaps their roles at every deployment
    for alarm in alarms.values():
        assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (3, 2)
        assert alarm["TreatMissingData"] == "notBreaching"


@pytest.mark.parametrize(
    ("stack", "copies", "stages"), [("Embedding", 4, [[0], [1, 2, 3]]), ("Sliced", 3, [[0, 1], [2]])]
)
def test_a_fleet_model_rolls_out_copy_by_copy_in_stages_with_the_model_s_alarms(
    app: dict[str, Any], stack: str, copies: int, stages: list[list[int]]
) -> None:
    model = app["services"][stack]
    assert model.waves == stages
    template = app["templates"][stack]
    services = resources(template, "AWS::ECS::Service")
    assert len(services) == copies
    ids = {Stack.of(s).resolve(s.service.node.default_child.logical_id): i for i, s in enumerate(model.copy_services)}
    alarms = set(_alarms(template))
    assert len(alarms) == 3
    for logical_id, service in services.items():
        index = ids[logical_id]
        properties = service["Properties"]
        assert "Strategy" not in properties["DeploymentConfiguration"]  # rolling deployments, stage by stage
        assert {_ref(n) for n in properties["DeploymentConfiguration"]["Alarms"]["AlarmNames"]} == alarms
        stage = next(n for n, members in enumerate(stages) if index in members)
        depends = {ids[d] for d in service.get("DependsOn", []) if d in ids}
        assert depends == (set(stages[stage - 1]) if stage else set()), (index, depends)


def test_rollout_stages_cover_every_copy_once_in_order() -> None:
    for copies in range(2, 25):
        for rollout in (Rollout.canary(percent=10), Rollout.canary(percent=90), Rollout.linear(step_percent=3)):
            stages = rollout_stages(rollout, copies)
            assert [i for stage in stages for i in stage] == list(range(copies))
            assert len(stages) >= 2 and all(stages)


def test_the_monitored_app_warns_of_nothing_a_rollout_needs(app: dict[str, Any]) -> None:
    for warning in app["warnings"]:
        assert r.ROLLOUT_WITHOUT_NEURON_ALARM.id not in warning and r.BLUE_GREEN_WITHOUT_TRAFFIC.id not in warning


def test_today_s_services_keep_the_rolling_update() -> None:
    app = App(analytics_reporting=False)
    stack = Stack(app, "Plain")
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=1)
    service = NeuronService(stack, "Service", cluster=cluster, task_definition=_manual(stack, "Task", [0]))
    deployment = _service(app.synth().get_stack_by_name("Plain").template)["DeploymentConfiguration"]
    assert "Strategy" not in deployment and "BakeTimeInMinutes" not in deployment
    assert deployment.get("Alarms", {"Enable": False})["Enable"] is False
    assert service.rollout == Rollout.rolling() and service.alternate_target_groups == []


def _unmonitored(rollout: Rollout, *, attach: bool) -> list[str]:
    app = App(analytics_reporting=False)
    stack = Stack(app, "Alone", env=ENV)
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    service = NeuronService(
        stack, "Service", cluster=cluster, task_definition=_manual(stack, "Task", [0]), rollout=rollout
    )
    if attach:
        service.attach_to_listener(
            NeuronLoadBalancer(stack, "Lb", cluster=cluster).listener, conditions=_path("/x/*"), priority=5
        )
    return [
        f"{m.id} {m.entry.data}" for s in app.synth().stacks for m in s.messages if m.level.value.lower() == "warning"
    ]


def test_without_monitoring_the_rollout_warns_the_neuron_alarm_is_missing() -> None:
    warnings = [w for w in _unmonitored(Rollout.canary(), attach=True) if r.ROLLOUT_WITHOUT_NEURON_ALARM.id in w]
    assert len(warnings) == 1
    assert "no NeuronMonitoring of this app covers Alone/Neuron/Inf2" in warnings[0]


def test_a_blue_green_rollout_without_a_load_balancer_warns_it_shifts_nothing() -> None:
    warnings = _unmonitored(Rollout.blue_green(alarms=False), attach=False)
    (warning,) = [w for w in warnings if r.BLUE_GREEN_WITHOUT_TRAFFIC.id in w]
    assert "manages no traffic shift" in warning


def test_a_canary_without_a_load_balancer_is_refused_at_synth() -> None:
    with pytest.raises(RuntimeError) as raised:
        _unmonitored(Rollout.canary(alarms=False), attach=False)
    assert f"[{r.ROLLOUT_TRAFFIC.id}:" in str(raised.value)
    assert "Alone/Service: a canary rollout of a service with neither a load balancer nor Service Connect" in str(
        raised.value
    )


def test_scaling_past_the_room_of_a_blue_green_rollout_is_refused_with_the_numbers() -> None:
    stack = Stack(App(analytics_reporting=False), "Room")
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=4)
    service = NeuronService(
        stack, "Service", cluster=cluster, task_definition=_manual(stack, "Task", [0, 1]), rollout=Rollout.blue_green()
    )
    with pytest.raises(NeuronConfigurationError) as raised:
        service.scale_on_neuron_utilization(max_count=3)
    message = str(raised.value)
    assert "Room/Service: max_count=3 rolled out blue/green bake 10 min" in message
    assert "6 copies holding 12 chips and 24 NeuronCores, 24576 CPU units and 98304 MiB" in message
    assert "6 inf2.48xlarge instances" in message and "launches at most 4" in message
    assert f"[{r.ROLLOUT_ROOM.id}:" in message


@pytest.mark.parametrize(
    ("rollout", "text"),
    [
        (Rollout.blue_green(), "a blue/green rollout of a fleet model"),
        (Rollout.canary(smoke_test=SmokeTest("/ping")), "a smoke test on a fleet model"),
        (Rollout.canary(interval=Duration.minutes(7)), "interval=7 min and bake_time=10 min on a fleet model"),
        (Rollout.linear(step_percent=100), "a linear step of 100 % of 2 copies: one stage that stops every copy"),
    ],
)
def test_what_a_fleet_model_cannot_take_is_refused(rollout: Rollout, text: str) -> None:
    stack = Stack(App(analytics_reporting=False), "Fleet")
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=1)
    fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    with pytest.raises(NeuronConfigurationError) as raised:
        fleet.add_model("Model", cores_per_task=1, copies=2, image=IMAGE, rollout=rollout)
    assert text in str(raised.value) and f"[{r.ROLLOUT_ON_FLEET.id}:" in str(raised.value)


def _behind_https(test_port: int | None) -> tuple[App, NeuronService, NeuronLoadBalancer]:
    from aws_cdk import aws_certificatemanager as acm

    app = App(analytics_reporting=False)
    platform, model = Stack(app, "TlsPlatform", env=ENV), Stack(app, "TlsModel", env=ENV)
    cluster = NeuronCluster(platform, "Neuron", vpc=imported_vpc(platform))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    certificate = acm.Certificate.from_certificate_arn(
        platform, "Certificate", "arn:aws:acm:us-east-1:111111111111:certificate/abc"
    )
    load_balancer = NeuronLoadBalancer(
        platform, "Lb", cluster=cluster, certificate=certificate, test_port=8443 if test_port else None
    )
    service = NeuronService(
        model,
        "Service",
        cluster=cluster,
        task_definition=_manual(model, "Task", [0]),
        rollout=Rollout.blue_green(smoke_test=SmokeTest("/health")),
    )
    return app, service, load_balancer


def test_a_smoke_test_through_an_https_listener_without_a_test_listener_is_refused() -> None:
    _, service, load_balancer = _behind_https(None)
    with pytest.raises(NeuronConfigurationError) as raised:
        service.attach_to_listener(load_balancer.listener, conditions=_path("/x/*"), priority=5)
    assert "an HTTPS listener with no test listener" in str(raised.value)
    assert "NeuronLoadBalancer(test_port=...)" in str(raised.value) and f"[{r.SMOKE_TEST.id}:" in str(raised.value)


def test_behind_https_the_smoke_test_goes_through_the_test_listener() -> None:
    app, service, load_balancer = _behind_https(8443)
    service.attach_to_listener(load_balancer.listener, conditions=_path("/x/*"), priority=5)
    assembly = app.synth()
    platform, model = (assembly.get_stack_by_name(n).template for n in ("TlsPlatform", "TlsModel"))
    listeners = {
        p["Properties"]["Port"]: (k, p["Properties"])
        for k, p in resources(platform, "AWS::ElasticLoadBalancingV2::Listener").items()
    }
    test_id, test_listener = listeners[8443]
    assert test_listener["Protocol"] == "HTTP"
    assert test_listener["DefaultActions"][0]["Type"] == "fixed-response"
    ingress = [
        p["Properties"]
        for p in resources(platform, "AWS::EC2::SecurityGroupIngress").values()
        if p["Properties"].get("FromPort") == 8443
    ]
    assert ingress == []  # no client reaches the test listener; only the model's smoke test, from its stack
    service_ = _service(model)
    rules_ = resources(model, "AWS::ElasticLoadBalancingV2::ListenerRule")
    test = rules_[_ref(service_["LoadBalancers"][0]["AdvancedConfiguration"]["TestListenerRule"])]["Properties"]
    assert test["Priority"] == 5 and test["Conditions"] == [
        {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/x/*"]}}
    ]
    assert "TlsPlatform" in str(test["ListenerArn"]) and test_id in str(test["ListenerArn"])
    (function,) = resources(model, "AWS::Lambda::Function").values()
    environment = function["Properties"]["Environment"]["Variables"]
    assert "SMOKE_TEST_HEADER" not in environment
    platform_depends = assembly.get_stack_by_name("TlsPlatform").dependencies
    assert [d.id for d in platform_depends if not d.id.endswith(".assets")] == []


def test_a_network_load_balancer_rollout_shifts_its_listener_with_a_role_scoped_to_it() -> None:
    """On a Network Load Balancer ECS shifts the listener itself (it has no rules): the alternate target group is a
    TCP group like the production one, and the role may modify that listener only; no load balancer alarm (NLB target
    groups publish neither metric), the Neuron one when monitored."""
    from aws_cdk import aws_ec2 as ec2

    app = App(analytics_reporting=False)
    stack = Stack(app, "Nlb", env=ENV)
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    NeuronMonitoring(stack, "Monitoring", cluster=cluster)
    group = ec2.SecurityGroup(stack, "NlbGroup", vpc=cluster.vpc, allow_all_outbound=False)
    listener = elbv2.NetworkLoadBalancer(stack, "Nlb", vpc=cluster.vpc, security_groups=[group]).add_listener(
        "Tcp", port=80
    )
    service = NeuronService(
        stack, "Service", cluster=cluster, task_definition=_manual(stack, "Task", [0]), rollout=Rollout.blue_green()
    )
    service.attach_to_listener(listener)
    template = app.synth().get_stack_by_name("Nlb").template
    (balanced,) = _service(template)["LoadBalancers"]
    advanced = balanced["AdvancedConfiguration"]
    groups = resources(template, "AWS::ElasticLoadBalancingV2::TargetGroup")
    production, alternate = _ref(balanced["TargetGroupArn"]), _ref(advanced["AlternateTargetGroupArn"])
    assert groups[production]["Properties"] == groups[alternate]["Properties"]
    assert groups[alternate]["Properties"]["Protocol"] == "TCP"
    listeners = resources(template, "AWS::ElasticLoadBalancingV2::Listener")
    assert _ref(advanced["ProductionListenerRule"]) in listeners and "TestListenerRule" not in advanced
    role = resources(template, "AWS::IAM::Role")[advanced["RoleArn"]["Fn::GetAtt"][0]]
    statements = [s for p in role["Properties"].get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
    modify = [s for s in statements if "elasticloadbalancing:ModifyListener" in json.dumps(s["Action"])]
    assert modify and all(s["Resource"] == {"Ref": _ref(advanced["ProductionListenerRule"])} for s in modify)
    names = [_ref(n) for n in _service(template)["DeploymentConfiguration"]["Alarms"]["AlarmNames"]]
    alarms = _alarms(template)
    assert [alarms[n]["MetricName"] for n in names] == ["ExecutionErrors"]


def _monitored_blue_green(stack: Stack, **options: Any) -> NeuronService:
    """A monitored blue/green service on an inf2.48xlarge capacity of ``stack``, not yet attached to a listener."""
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    NeuronMonitoring(stack, "Monitoring", cluster=cluster)
    return NeuronService(
        stack,
        "Service",
        cluster=cluster,
        task_definition=_manual(stack, "Task", [0]),
        rollout=Rollout.blue_green(),
        **options,
    )


def _attach(service: NeuronService) -> None:
    stack = Stack.of(service)
    service.attach_to_listener(
        NeuronLoadBalancer(stack, "Lb", cluster=service.cluster).listener, conditions=_path("/x/*"), priority=5
    )


def _own_alarms(how: str, behavior: ecs.AlarmBehavior = ecs.AlarmBehavior.ROLLBACK_ON_ALARM) -> App:
    """A monitored blue/green service behind a listener rule with an alarm of the user's, ``mine``: passed as
    ``deployment_alarms`` (``option``), or given to ``service.enable_deployment_alarms`` before or after
    ``attach_to_listener``."""
    app = App(analytics_reporting=False)
    stack = Stack(app, "Own", env=ENV)
    options: dict[str, Any] = {}
    if how == "option":
        options["deployment_alarms"] = ecs.DeploymentAlarmConfig(alarm_names=["mine"], behavior=behavior)
    service = _monitored_blue_green(stack, **options)
    if how == "before":
        service.service.enable_deployment_alarms(["mine"], behavior=behavior)
    _attach(service)
    if how == "after":
        service.service.enable_deployment_alarms(["mine"], behavior=behavior)
    return app


@pytest.mark.parametrize("how", ["option", "before", "after"])
def test_the_service_s_own_deployment_alarms_are_watched_with_the_rollout_s(how: str) -> None:
    """GIVEN an alarm of the user's on a rolled-out service, WHEN it synthesizes, THEN ECS watches the user's alarm
    and the rollout's three (Neuron errors, 5xx, p99), rolling back on any: neither list replaces the other."""
    template = _own_alarms(how).synth().get_stack_by_name("Own").template
    alarms = _service(template)["DeploymentConfiguration"]["Alarms"]
    assert alarms["Enable"] is True and alarms["Rollback"] is True
    assert alarms["AlarmNames"][0] == "mine"
    rollout_s = [k for k, p in _alarms(template).items() if p["AlarmDescription"].startswith("Rolls a deployment back")]
    assert sorted(_ref(n) for n in alarms["AlarmNames"][1:]) == sorted(rollout_s)
    assert len(rollout_s) == 3


def test_the_service_s_own_alarm_objects_are_named_by_reference_in_its_stack_and_by_import_from_another() -> None:
    """GIVEN the user's own deployment alarms as CloudWatch alarms, one in the service's stack and one in a stack of
    their own, WHEN it synthesizes, THEN ECS watches them by a reference to each (an import of the other stack's
    export), never by the text of an unresolved reference, beside the rollout's."""
    from aws_cdk import aws_cloudwatch as cloudwatch

    app = App(analytics_reporting=False)
    stack, alarms_stack = Stack(app, "Own", env=ENV), Stack(app, "Alarms", env=ENV)

    def alarm(scope: Stack, id: str) -> cloudwatch.Alarm:
        metric = cloudwatch.Metric(namespace="Team", metric_name="Errors")
        return cloudwatch.Alarm(scope, id, metric=metric, threshold=1, evaluation_periods=1)

    here, there = alarm(stack, "Here"), alarm(alarms_stack, "There")
    own = ecs.DeploymentAlarmConfig(alarm_names=[here.alarm_name, there.alarm_name])
    _attach(_monitored_blue_green(stack, deployment_alarms=own))
    template = app.synth().get_stack_by_name("Own").template
    names = _service(template)["DeploymentConfiguration"]["Alarms"]["AlarmNames"]
    assert names[0] == {"Ref": stack.get_logical_id(here.node.default_child)}  # type: ignore[arg-type]
    assert set(names[1]) == {"Fn::ImportValue"} and len(names) == 5
    assert not any(isinstance(n, str) and "Ref" in n for n in names)


def test_own_deployment_alarms_that_only_fail_a_deployment_are_refused_at_the_call() -> None:
    with pytest.raises(NeuronConfigurationError) as raised:
        _own_alarms("option", ecs.AlarmBehavior.FAIL_ON_ALARM)
    message = str(raised.value)
    assert "Own/Service: deployment_alarms= (mine) with AlarmBehavior.FAIL_ON_ALARM" in message
    assert f"[{r.DEPLOYMENT_ALARM_BEHAVIOR.id}:" in message and "ROLLBACK_ON_ALARM" in message


def test_deployment_alarms_enabled_later_that_only_fail_a_deployment_are_refused_at_synth() -> None:
    with pytest.raises(RuntimeError) as raised:
        _own_alarms("before", ecs.AlarmBehavior.FAIL_ON_ALARM).synth()
    message = str(raised.value)
    assert "Own/Service: the service's own deployment alarms (mine) with AlarmBehavior.FAIL_ON_ALARM" in message
    assert f"[{r.DEPLOYMENT_ALARM_BEHAVIOR.id}:" in message


def test_a_smoke_test_on_a_service_attached_to_no_load_balancer_is_refused_at_synth() -> None:
    """GIVEN a blue/green rollout with a smoke test, WHEN the service is never attached to a listener, THEN synth
    refuses it: there would be no hook and no function, and green would take traffic untested."""
    with pytest.raises(RuntimeError) as raised:
        _unmonitored(Rollout.blue_green(alarms=False, smoke_test=SmokeTest("/health")), attach=False)
    message = str(raised.value)
    assert "Alone/Service: a smoke test (GET /health) on a service attached to no load balancer" in message
    assert f"[{r.ROLLOUT_TRAFFIC.id}:" in message and "attach_to_listener" in message and "drop smoke_test=" in message


def _header_smoke_test(*, internet_facing: bool, test_port: int | None = None, priority: int = 5) -> App:
    app = App(analytics_reporting=False)
    stack = Stack(app, "Header", env=ENV)
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    service = NeuronService(
        stack,
        "Service",
        cluster=cluster,
        task_definition=_manual(stack, "Task", [0]),
        rollout=Rollout.blue_green(alarms=False, smoke_test=SmokeTest("/health")),
    )
    load_balancer = NeuronLoadBalancer(
        stack, "Lb", cluster=cluster, internet_facing=internet_facing, test_port=test_port
    )
    service.attach_to_listener(load_balancer.listener, conditions=_path("/x/*"), priority=priority)
    return app


def test_the_header_test_rule_on_an_internet_facing_listener_is_refused() -> None:
    """GIVEN an internet-facing load balancer without a test listener, WHEN a smoke-tested rollout attaches, THEN it is
    refused: anyone sending X-Neuron-Rollout: test would reach the untested green tasks during a deployment."""
    with pytest.raises(NeuronConfigurationError) as raised:
        _header_smoke_test(internet_facing=True)
    message = str(raised.value)
    assert "Header/Service/TargetGroup: a smoke test through the header rule of Header/Lb/LoadBalancer/Listener" in (
        message
    )
    assert f"any client that sends {TEST_HEADER}: test would reach the green tasks" in message
    assert f"[{r.OPEN_TEST_RULE.id}:" in message and "internal NeuronLoadBalancer (internet_facing=False" in message


def test_a_smoke_test_through_the_test_listener_of_an_internet_facing_load_balancer_is_refused() -> None:
    """GIVEN an internet-facing load balancer with a test listener, WHEN a smoke-tested rollout attaches, THEN it is
    refused: the function, in private subnets, reaches the load balancer's public addresses through the NAT gateway,
    and the test listener's rule admits the function's security group, which names only its private addresses (the
    request would never arrive and every deployment would roll back)."""
    with pytest.raises(NeuronConfigurationError) as raised:
        _header_smoke_test(internet_facing=True, test_port=8081)
    message = str(raised.value)
    assert "a smoke test through its test listener of Header/Lb/LoadBalancer/Listener, on an internet-facing" in message
    problem = message.split(f"[{r.OPEN_TEST_RULE.id}:")[0]
    assert "through the NAT gateway, from an address no rule admits" in problem and "any client" not in problem
    assert f"[{r.OPEN_TEST_RULE.id}:" in message


def test_a_smoke_test_through_a_listener_of_an_imported_load_balancer_is_refused() -> None:
    """GIVEN a listener made in the app on a load balancer it imports (its scheme unknown) WHEN a smoke-tested rollout
    attaches THEN it is refused (NEURON136): the load balancer may be internet-facing."""
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    app = App(analytics_reporting=False)
    stack = Stack(app, "Imported", env=ENV)
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    NeuronMonitoring(stack, "Monitoring", cluster=cluster)
    balancer = elbv2.ApplicationLoadBalancer.from_application_load_balancer_attributes(
        stack,
        "Lb",
        load_balancer_arn="arn:aws:elasticloadbalancing:us-east-1:111122223333:loadbalancer/app/lb/0123456789abcdef",
        security_group_id=ec2.SecurityGroup(stack, "LbGroup", vpc=cluster.vpc).security_group_id,
    )
    listener = elbv2.ApplicationListener(
        stack, "Listener", load_balancer=balancer, port=80, default_action=elbv2.ListenerAction.fixed_response(404)
    )
    service = NeuronService(
        stack,
        "Service",
        cluster=cluster,
        task_definition=_manual(stack, "Task", [0]),
        rollout=Rollout.blue_green(alarms=False, smoke_test=SmokeTest("/health")),
    )
    with pytest.raises(NeuronConfigurationError, match=r"whose load balancer this app imports.*NEURON136"):
        service.attach_to_listener(listener, conditions=_path("/x/*"), priority=5)


def test_an_internal_load_balancer_with_a_test_listener_keeps_the_test_rule_off_the_production_listener() -> None:
    template = _header_smoke_test(internet_facing=False, test_port=8081).synth().get_stack_by_name("Header").template
    rules_ = resources(template, "AWS::ElasticLoadBalancingV2::ListenerRule").values()
    assert all("http-header" not in json.dumps(rule["Properties"]["Conditions"]) for rule in rules_)


def test_an_internal_load_balancer_keeps_the_header_test_rule() -> None:
    template = _header_smoke_test(internet_facing=False).synth().get_stack_by_name("Header").template
    rules_ = resources(template, "AWS::ElasticLoadBalancingV2::ListenerRule").values()
    assert any("http-header" in json.dumps(rule["Properties"]["Conditions"]) for rule in rules_)


def test_a_production_rule_at_priority_1_leaves_no_room_for_the_header_rule_and_says_so() -> None:
    """The refusal names the priority the user passed, not a test_priority=0 the user never wrote."""
    with pytest.raises(NeuronConfigurationError) as raised:
        _header_smoke_test(internet_facing=False, priority=1)
    message = str(raised.value)
    assert "priority=1 leaves no room for the smoke test's header rule" in message
    assert "test_priority=0" not in message and "pass priority from 2 to 50000" in message


def test_a_fleet_model_s_own_deployment_alarms_are_watched_with_its_stages_alarms() -> None:
    """GIVEN deployment_alarms in a fleet model's service_options and a canary rollout, THEN every copy's deployment
    watches the user's alarm and the model's rollout alarms."""
    app = App(analytics_reporting=False)
    stack = Stack(app, "OwnFleet", env=ENV)
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=1)
    NeuronMonitoring(stack, "Monitoring", cluster=cluster)
    fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge", capacity=capacity)
    model = fleet.add_model(
        "Model",
        cores_per_task=1,
        copies=2,
        image=IMAGE,
        port_mappings=[ecs.PortMapping(container_port=PORT)],
        rollout=Rollout.canary(percent=50),
        service_options={"deployment_alarms": ecs.DeploymentAlarmConfig(alarm_names=["mine"])},
    )
    model.attach_to_listener(
        NeuronLoadBalancer(stack, "Lb", cluster=cluster).listener, conditions=_path("/x/*"), priority=5
    )
    template = app.synth().get_stack_by_name("OwnFleet").template
    rollout_s = sorted(
        k for k, p in _alarms(template).items() if p["AlarmDescription"].startswith("Rolls a deployment back")
    )
    services = [
        s
        for s in resources(template, "AWS::ECS::Service").values()
        if s["Properties"].get("SchedulingStrategy") != "DAEMON"
    ]
    assert len(services) == 2 and len(rollout_s) == 3
    for service in services:
        names = service["Properties"]["DeploymentConfiguration"]["Alarms"]["AlarmNames"]
        assert names[0] == "mine" and sorted(_ref(n) for n in names[1:]) == rollout_s


def test_a_fleet_model_s_own_alarms_that_only_fail_a_deployment_are_refused_at_add_model() -> None:
    """GIVEN a fleet model whose service_options give deployment alarms with FAIL_ON_ALARM and a canary rollout with
    alarms THEN add_model refuses it once, naming service_options (NEURON135), not each copy at synth."""
    app = App(analytics_reporting=False)
    stack = Stack(app, "FailFleet", env=ENV)
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=1)
    fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge", capacity=capacity)
    alarms = ecs.DeploymentAlarmConfig(alarm_names=["mine"], behavior=ecs.AlarmBehavior.FAIL_ON_ALARM)
    with pytest.raises(NeuronConfigurationError) as raised:
        fleet.add_model(
            "Model",
            cores_per_task=1,
            copies=2,
            image=IMAGE,
            port_mappings=[ecs.PortMapping(container_port=PORT)],
            rollout=Rollout.canary(percent=50),
            service_options={"deployment_alarms": alarms},
        )
    message = str(raised.value)
    assert message.startswith("FailFleet/Fleet/Model: service_options={'deployment_alarms': ...} with AlarmBehavior")
    assert f"[{r.DEPLOYMENT_ALARM_BEHAVIOR.id}:" in message
