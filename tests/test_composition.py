"""Composing like a team: a platform stack, and model and training stacks that depend on it and never the reverse.

The team app (``examples/team_app``) puts the VPC, the cluster, its capacity, the load balancer and the monitoring
in ``Platform``, and each workload in a stack of its own. Every workload attaches to the platform's load balancer,
scales, and is monitored by the platform's dashboard; none of that may make the platform refer to a workload.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from conftest import ROOT, resources

from neuron_constructs import NeuronCluster, NeuronFleet, NeuronLoadBalancer, NeuronMonitoring
from neuron_constructs.knowledge import rules as r

_TEAM_APP = importlib.util.spec_from_file_location("team_app", ROOT / "examples" / "team_app" / "app.py")
assert _TEAM_APP is not None and _TEAM_APP.loader is not None
team = importlib.util.module_from_spec(_TEAM_APP)
_TEAM_APP.loader.exec_module(team)  # by path: the examples' own app.py is the module ``app``
TEAM_CONTEXT = json.loads((ROOT / "examples" / "team_app" / "cdk.json").read_text())["context"]
"""The context ``cdk synth`` gives the team app (its ``cdk.json``)."""
pytestmark = pytest.mark.xdist_group("composition")  # one worker synthesizes each layout of the team app once
IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
DASHBOARD_PICTURE_TITLE = "NeuronMonitoring dashboard of the team app's platform"


@functools.cache
def synthesized(split: str) -> dict[str, Any]:
    """Each stack of the team app laid out as ``split``: its template, the stacks it depends on and the warnings and
    errors of its synthesis."""
    app = App(analytics_reporting=False, context=TEAM_CONTEXT)
    team.build_app(app, split=split)
    assembly = app.synth()
    return {
        stack.stack_name: {
            "template": stack.template,
            "depends_on": sorted(d.id for d in stack.dependencies if not d.id.endswith(".assets")),
            "messages": [f"{m.id} {m.entry.data}" for m in stack.messages if m.level.value != "info"],
        }
        for stack in assembly.stacks
    }


@pytest.fixture
def stacks() -> dict[str, Any]:
    return synthesized(team.SPLITS[0])


def imports(template: dict[str, Any]) -> set[str]:
    """The exports a template imports."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "Fn::ImportValue" in value:
                found.add(json.dumps(value["Fn::ImportValue"], sort_keys=True))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(template)
    return found


def test_the_platform_depends_on_no_workload_and_every_workload_on_the_platform(stacks: dict[str, Any]) -> None:
    assert stacks["Platform"]["depends_on"] == []
    assert imports(stacks["Platform"]["template"]) == set()
    for name in ("LlmService", "EmbeddingFleet", "Training"):
        assert stacks[name]["depends_on"] == ["Platform"], name


def test_a_workload_owns_its_listener_rule_target_group_and_security_group_rules(stacks: dict[str, Any]) -> None:
    platform, llm = stacks["Platform"]["template"], stacks["LlmService"]["template"]
    assert not resources(platform, "AWS::ElasticLoadBalancingV2::ListenerRule")
    assert not resources(platform, "AWS::ElasticLoadBalancingV2::TargetGroup")
    (production, test) = sorted(  # the production rule, and the rollout's test rule on the test listener
        resources(llm, "AWS::ElasticLoadBalancingV2::ListenerRule").values(),
        key=lambda rule: "TestRule" in json.dumps(rule),
    )
    for rule in (production, test):
        assert rule["Properties"]["Priority"] == 10
        assert "Fn::ImportValue" in rule["Properties"]["ListenerArn"]  # the platform's listeners, by their exports
    assert production["Properties"]["ListenerArn"] != test["Properties"]["ListenerArn"]
    assert len(resources(llm, "AWS::ElasticLoadBalancingV2::TargetGroup")) == 2  # blue and green
    egress = resources(llm, "AWS::EC2::SecurityGroupEgress").values()
    assert any("Fn::ImportValue" in e["Properties"]["GroupId"] for e in egress)  # the load balancer's group
    embedding = stacks["EmbeddingFleet"]["template"]  # bridge tasks on the platform's capacity: its rules are the
    assert not resources(embedding, "AWS::EC2::SecurityGroupIngress")  # platform's (one per port range)
    assert not resources(embedding, "AWS::EC2::SecurityGroupEgress")


def test_the_platform_dashboard_finds_every_workload_by_name(stacks: dict[str, Any]) -> None:
    (dashboard,) = resources(stacks["Platform"]["template"], "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert "{AWS/ECS,ClusterName,ServiceName}" in body and "{AWS/ApplicationELB,LoadBalancer,TargetGroup}" in body


def test_fleets_scaling_and_training_run_on_the_platform_s_capacity_and_vpc(stacks: dict[str, Any]) -> None:
    fleet = stacks["EmbeddingFleet"]["template"]
    strategies = [
        s["Properties"]["CapacityProviderStrategy"][0]["CapacityProvider"]
        for s in resources(fleet, "AWS::ECS::Service").values()
    ]
    assert len(strategies) == 8 and all("Fn::ImportValue" in json.dumps(s) for s in strategies)
    assert len(resources(fleet, "AWS::ApplicationAutoScaling::ScalingPolicy")) == 8
    # One NeuronCore each, in the model's stack, on the platform's capacity: cores 0-7 of chips 0-3.
    visible = sorted(
        int(e["Value"])
        for t in resources(fleet, "AWS::ECS::TaskDefinition").values()
        for e in t["Properties"]["ContainerDefinitions"][0]["Environment"]
        if e["Name"] == "NEURON_RT_VISIBLE_CORES"
    )
    assert visible == list(range(8))
    training = stacks["Training"]["template"]
    (environment,) = resources(training, "AWS::Batch::ComputeEnvironment").values()
    assert "Fn::ImportValue" in json.dumps(environment["Properties"]["ComputeResources"]["Subnets"])
    assert not resources(training, "AWS::EC2::VPC")


def test_the_device_rules_hold_across_the_stacks_of_an_app() -> None:
    """A plain aws-cdk-lib service in a third stack, mapping a chip on the capacity a fleet in a second stack
    owns, fails the synth: the template checks read every stack of the app together."""
    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform")
    cluster = NeuronCluster(platform, "Neuron")
    capacity = cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    fleet = NeuronFleet(Stack(app, "Fleet"), "Fleet", cluster=cluster, instance_type="inf2.48xlarge")
    fleet.add_model("Model", devices_per_task=4, copies=3, image=IMAGE)
    intruder = Stack(app, "Intruder")
    task = ecs.Ec2TaskDefinition(intruder, "Task")
    devices = ecs.LinuxParameters(intruder, "Devices")
    devices.add_devices(ecs.Device(host_path="/dev/neuron0"))
    task.add_container("peek", image=IMAGE, memory_limit_mib=64, linux_parameters=devices)
    ecs.Ec2Service(
        intruder,
        "Service",
        cluster=cluster.cluster,
        task_definition=task,
        capacity_provider_strategies=[
            ecs.CapacityProviderStrategy(capacity_provider=capacity.capacity_provider.capacity_provider_name, weight=1)
        ],
        min_healthy_percent=0,
    )
    with pytest.raises(RuntimeError, match=r"NEURON020.*Intruder/Service"):
        app.synth()


@functools.cache
def shared_platform() -> dict[str, dict[str, Any]]:
    """One platform (an inf2.48xlarge capacity for an awsvpc fleet, an inf2.24xlarge one for two bridge models,
    Managed Instances, monitoring, a load balancer) and a stack per model: each stack's template and dependencies."""
    from neuron_constructs import ManagedNeuronTaskDefinition, ManualNeuronTaskDefinition, NeuronService

    app = App(analytics_reporting=False)
    platform = Stack(app, "Platform")
    cluster = NeuronCluster(platform, "Neuron")
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    cluster.add_ec2_capacity("Small", instance_type="inf2.24xlarge", max_capacity=2)
    cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
    NeuronMonitoring(platform, "Monitoring", cluster=cluster)
    listener = NeuronLoadBalancer(platform, "LoadBalancer", cluster=cluster).listener

    def path(priority: int, pattern: str) -> dict[str, Any]:
        return {"conditions": [elbv2.ListenerCondition.path_patterns([pattern])], "priority": priority}

    fleet = NeuronFleet(
        Stack(app, "Awsvpc"),
        "Fleet",
        cluster=cluster,
        instance_type="inf2.48xlarge",
        network_mode=ecs.NetworkMode.AWS_VPC,
        eni_trunking=True,
    )
    model = fleet.add_model(
        "Llm", devices_per_task=4, copies=2, image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)]
    )
    model.attach_to_listener(listener, **path(1, "/v1/*"))
    managed = Stack(app, "Managed")
    task = ManagedNeuronTaskDefinition(managed, "Task", cpu=4096, memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
    NeuronService(managed, "Service", cluster=cluster, task_definition=task).attach_to_listener(
        listener, **path(2, "/embed/*")
    )
    for priority, name in enumerate(("First", "Second"), start=3):
        stack = Stack(app, name)
        bridge = ManualNeuronTaskDefinition(
            stack, "Task", instance_type="inf2.24xlarge", devices=[priority - 3], cpu=1024, memory_mib=4096
        )
        bridge.add_neuron_container("model", image=IMAGE, port_mappings=[ecs.PortMapping(container_port=8080)])
        NeuronService(stack, "Service", cluster=cluster, task_definition=bridge).attach_to_listener(
            listener, **path(priority, f"/{name}/*")
        )
    return {
        s.stack_name: {
            "template": s.template,
            "depends_on": sorted(d.id for d in s.dependencies if not d.id.endswith(".assets")),
        }
        for s in app.synth().stacks
    }


def test_an_awsvpc_fleet_and_a_managed_instances_service_in_their_own_stacks_attach_by_rule() -> None:
    stacks = shared_platform()
    assert {name: stack["depends_on"] for name, stack in stacks.items()} == {
        "Platform": [],
        "Awsvpc": ["Platform"],
        "Managed": ["Platform"],
        "First": ["Platform"],
        "Second": ["Platform"],
    }
    for name in ("Awsvpc", "Managed"):  # their tasks' own groups: the rules to them are theirs
        assert resources(stacks[name]["template"], "AWS::EC2::SecurityGroupIngress"), name


def test_two_model_stacks_on_one_capacity_share_the_platform_s_one_rule_to_it() -> None:
    """EC2 refuses a second rule equal to one a group already has: two model stacks each adding the load balancer's
    rule to the capacity's host ports would fail the second deploy. The rule is made once, in the platform."""
    stacks = shared_platform()
    for name in ("First", "Second"):
        assert not resources(stacks[name]["template"], "AWS::EC2::SecurityGroupIngress")
        assert resources(stacks[name]["template"], "AWS::ElasticLoadBalancingV2::ListenerRule")
    ingress = [
        rule["Properties"]
        for rule in resources(stacks["Platform"]["template"], "AWS::EC2::SecurityGroupIngress").values()
        if rule["Properties"].get("FromPort") == 32768
    ]
    assert len(ingress) == 1 and ingress[0]["ToPort"] == 65535


@pytest.mark.parametrize(
    "split",
    # The one-stack split has no cross-stack reference to get wrong; it is synthesized with the deploys (e2e).
    [pytest.param(s, marks=pytest.mark.e2e) if s == "one stack" else s for s in team.SPLITS],
)
def test_no_split_of_the_team_app_has_the_platform_depend_on_a_workload(split: str) -> None:
    stacks = synthesized(split)
    platform = "Team" if split == "one stack" else "Platform"
    assert stacks[platform]["depends_on"] == []
    assert imports(stacks[platform]["template"]) == set()
    for name, stack in stacks.items():
        assert stack["messages"] == [], name  # cross-stack references are strong on purpose (cdk.json)
        if name != platform:
            assert stack["depends_on"] == [platform], name


CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"


def test_with_a_certificate_the_team_s_load_balancer_serves_https_only() -> None:
    """``-c certificateArn=...``: the platform's listener is HTTPS on 443 with the TLS 1.3 policy and that certificate,
    its clients reach 443 only, and the workloads' listener rules attach to it unchanged."""
    app = App(analytics_reporting=False, context=TEAM_CONTEXT)
    platform_stack, llm_stack = Stack(app, "Platform"), Stack(app, "LlmService")
    platform_ = team.Platform(platform_stack, "Platform", certificate_arn=CERTIFICATE)
    team.LlmService(llm_stack, "LlmService", platform=platform_)
    assembly = app.synth()
    platform = assembly.get_stack_by_name("Platform").template
    listeners = {
        p["Properties"]["Port"]: p["Properties"]
        for p in resources(platform, "AWS::ElasticLoadBalancingV2::Listener").values()
    }
    assert set(listeners) == {443, team.TEST_PORT}
    properties = listeners[443]
    assert (properties["Protocol"], properties["Port"]) == ("HTTPS", 443)
    assert listeners[team.TEST_PORT]["Protocol"] == "HTTP"  # rollout test traffic, from the smoke test only
    assert properties["Certificates"] == [{"CertificateArn": CERTIFICATE}]
    assert properties["SslPolicy"] == "ELBSecurityPolicy-TLS13-1-2-Res-2021-06"
    ports = {
        (i.get("FromPort"), i.get("ToPort"))
        for logical_id, g in resources(platform, "AWS::EC2::SecurityGroup").items()
        if "LoadBalancerSecurityGroup" in logical_id
        for i in g["Properties"].get("SecurityGroupIngress", [])
    }
    assert ports == {(443, 443)}
    llm = assembly.get_stack_by_name("LlmService").template
    assert resources(llm, "AWS::ElasticLoadBalancingV2::ListenerRule")
    (output,) = [o for k, o in platform.get("Outputs", {}).items() if "Url" in k]
    assert "https://" in json.dumps(output["Value"])


def test_without_a_certificate_it_listens_on_http_inside_the_vpc(stacks: dict[str, Any]) -> None:
    listeners = {
        p["Properties"]["Port"]: p["Properties"]
        for p in resources(stacks["Platform"]["template"], "AWS::ElasticLoadBalancingV2::Listener").values()
    }
    assert set(listeners) == {80, team.TEST_PORT}
    assert listeners[80]["Protocol"] == "HTTP" and "Certificates" not in listeners[80]


def test_every_load_balanced_workload_is_reachable_across_the_stacks_and_found_when_its_rules_go(
    stacks: dict[str, Any],
) -> None:
    """NEURON076 reads the stacks together (the target group, its rule and the security group rules of a workload,
    the load balancer and the capacity of the platform): nothing is found in the team app, and every load-balanced
    service is found once the ingress rules are gone; each template on its own judges only what it shows."""
    import copy

    from neuron_constructs.checks.template_checks import check_template, check_templates

    templates = {name: stack["template"] for name, stack in stacks.items()}
    assert [f.message for f in check_templates(templates) if f.rule is r.UNREACHABLE_TARGETS] == []
    for name, template in templates.items():
        assert [f.message for f in check_template(template, name=name) if f.rule is r.UNREACHABLE_TARGETS] == []
    closed = copy.deepcopy(templates)
    for template in closed.values():
        for logical_id, resource in list(template["Resources"].items()):
            if resource["Type"] == "AWS::EC2::SecurityGroupIngress":
                del template["Resources"][logical_id]
    found = {(f.template, f.logical_id) for f in check_templates(closed) if f.rule is r.UNREACHABLE_TARGETS}
    registered = {
        (name, logical_id)
        for name, template in templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::ECS::Service" and resource["Properties"].get("LoadBalancers")
    }
    assert found == registered and len(registered) > 2


def test_the_docs_picture_of_the_dashboard_is_the_team_platform_s() -> None:
    """docs/_static/dashboard.svg is the dashboard the team app's platform synthesizes, drawn by
    ``neuron_constructs.tools.dashboard_picture``; regenerate it with the command in docs/serving-llms.md."""
    from neuron_constructs.tools.dashboard_picture import dashboards_of, metric_names, picture

    (body,) = dashboards_of(synthesized(team.SPLITS[0])["Platform"]["template"]).values()
    titles = [w["properties"].get("title", "") for w in body["widgets"]]
    queue = body["widgets"][titles.index("Requests per copy of each model: waiting, running; KV cache used (%)")]
    assert metric_names(queue) == ["WaitingRequests", "RunningRequests", "KvCacheUsage"]
    drawn = picture(body, title=DASHBOARD_PICTURE_TITLE)
    assert (ROOT / "docs" / "_static" / "dashboard.svg").read_text() == drawn, (
        "run: python -m neuron_constructs.tools.dashboard_picture cdk.out/Platform.template.json "
        f"--title '{DASHBOARD_PICTURE_TITLE}' --out docs/_static/dashboard.svg"
    )


def test_the_cli_page_shows_the_quotas_plan_prints_for_the_team_app() -> None:
    from neuron_constructs.tools.commands.output import _Output
    from neuron_constructs.tools.quota_planning import quota_templates

    templates = {f"{name}.template.json": s["template"] for name, s in synthesized(team.SPLITS[0]).items()}
    result = quota_templates(templates)
    out = io.StringIO()
    _Output(out).table(result.TABLE_HEADERS, result.table_rows())
    page = (ROOT / "docs" / "cli.md").read_text()
    assert out.getvalue() in page


# --- plan --diff: the team app's week-to-week change -------------------------------------------------------------


def _week(directory: Path, *, release: str = "2023.0.20260701", vllm: str = "", embedding: str = "") -> Path:
    """The team app's templates as ``a stack each`` synthesizes them, with the AMI release and two image tags moved."""
    from neuron_constructs.knowledge.container_images import EMBEDDING, VLLM

    directory.mkdir(parents=True, exist_ok=True)
    for name, stack in synthesized(team.SPLITS[0]).items():
        text = json.dumps(stack["template"])
        text = text.replace("2023.0.20260701", release).replace("2023020260701", release.replace(".", ""))
        text = text.replace(VLLM.tag, vllm or VLLM.tag).replace(EMBEDDING.tag, embedding or EMBEDDING.tag)
        (directory / f"{name}.template.json").write_text(text)
    return directory


def test_plan_diff_names_the_refresh_the_rolled_services_their_stages_the_peak_and_the_terms(tmp_path: Path) -> None:
    from neuron_constructs.knowledge.container_images import EMBEDDING, VLLM
    from neuron_constructs.tools.diff_planning import diff_paths

    old = _week(tmp_path / "week1")
    new = _week(tmp_path / "week2", release="2023.0.20260722", vllm="0.16.1-neuronx", embedding=EMBEDDING.tag + "-r2")
    result = diff_paths([str(old)], [str(new)], {"inf2.48xlarge": 12.98})
    (refresh,) = result.capacities
    assert refresh.instance_type == "inf2.48xlarge" and "2023.0.20260722" in refresh.what[0]
    assert (refresh.instances, refresh.batch, refresh.batches, refresh.warmup_s, refresh.launch_first) == (
        2,
        1,
        2,
        600,
        True,
    )
    services = {s.name.split("/")[0]: s for s in result.services}
    assert set(services) == {"LlmService", "DevModel", "EmbeddingFleet"}  # Training's image did not move
    llm = services["LlmService"]
    assert any(w.startswith(f"image vllm: {VLLM.uri} -> ") for w in llm.what)
    assert llm.wait_minutes == 10 + 8 * 60 and llm.extra_instances == 4  # bake, the approval's timeout; blue and green
    assert [len(stage) for stage in services["EmbeddingFleet"].stages] == [2, 6]  # canary 25 %: two copies, then six
    refresh_term, minutes, complete = result.duration_terms()[0]
    assert "instance refresh, 2 batches x 10 min warm-up, + each new instance's launch" in refresh_term
    assert (minutes, complete) == (20.0, False)  # the launch itself is the user's to measure
    assert result.least_minutes() == 20 + 490
    assert result.instance_hours()[0][2] == pytest.approx(1 * 20 / 60)
    out = io.StringIO()
    from neuron_constructs.tools.cli import main

    assert main(["plan", "--diff", str(old), str(new), "--price", "inf2.48xlarge=12.98"], stdout=out) == 0
    text = out.getvalue()
    assert "instance refresh of up to 2 instances, 1 at a time (2 batches), launched before the old one stops" in text
    (first,) = [line for line in text.splitlines() if line.strip().startswith("stage 1: ")]
    assert first.count(",") == 1 and first.endswith("out of service while they start")  # two copies
    assert "0.33 instance-hours of inf2.48xlarge = $4.33 at $12.98/h" in text


def test_plan_diff_flags_a_removed_model_whose_listener_rule_forwards_requests(tmp_path: Path) -> None:
    from neuron_constructs.tools.diff_planning import diff_paths

    old = _week(tmp_path / "before")
    new = _week(tmp_path / "after")
    (new / "DevModel.template.json").unlink()  # the team drops the dev model
    result = diff_paths([str(old)], [str(new)])
    removed = {(r.kind, r.serves) for r in result.removed}
    assert ("service", None) in removed
    assert any(kind == "listener rule" and serves and "/dev/v1/*" in serves for kind, serves in removed)
    assert not result.services and not result.capacities
    out = io.StringIO()
    from neuron_constructs.tools.cli import main

    assert main(["plan", "--diff", str(old), str(new)], stdout=out) == 0
    assert "serves traffic listener rule" in out.getvalue()


def _staged_platform(outdir: Path, release: str) -> Path:
    """A platform stack in a Stage (``Prod``): its template in the nested assembly ``assembly-Prod/``, its stack
    named ``Prod-Platform``."""
    from aws_cdk import Stage
    from conftest import imported_vpc

    from neuron_constructs import NeuronAmi

    app = App(analytics_reporting=False, outdir=str(outdir))
    stack = Stack(Stage(app, "Prod"), "Platform")
    cluster = NeuronCluster(stack, "Neuron", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", max_capacity=2, machine_image=NeuronAmi.release(release)
    )
    app.synth()
    return outdir


def test_plan_diff_deployed_finds_the_stacks_of_a_stage_s_nested_assembly(
    tmp_path: Path, fake_aws_credentials: None
) -> None:
    """``--deployed`` reads each stack of the new version by its name, the stacks of Stages' nested assemblies too."""
    from urllib.parse import parse_qs
    from xml.sax.saxutils import escape

    from local_server import LocalServer

    from neuron_constructs.tools.cli import main

    deployed = _staged_platform(tmp_path / "deployed", "2023.0.20260701")
    new = _staged_platform(tmp_path / "new", "2023.0.20260722")
    (template,) = (deployed / "assembly-Prod").glob("*.template.json")
    asked: list[str] = []

    def answer(path: str, headers: Any, body: bytes) -> tuple[int, str, bytes]:
        stack = parse_qs(body.decode()).get("StackName", [""])[0]
        asked.append(stack)
        if stack != "Prod-Platform":
            error = (
                f"<Error><Code>ValidationError</Code><Message>Stack with id {stack} does not exist</Message></Error>"
            )
            return 400, "text/xml", f"<ErrorResponse>{error}</ErrorResponse>".encode()
        result = f"<GetTemplateResult><TemplateBody>{escape(template.read_text())}</TemplateBody></GetTemplateResult>"
        return 200, "text/xml", f"<GetTemplateResponse>{result}</GetTemplateResponse>".encode()

    server = LocalServer(answer)
    try:
        out, err = io.StringIO(), io.StringIO()
        argv = ["plan", "--diff", "--deployed", str(new), "--region", "us-east-1", "--endpoint-url", server.url]
        status = main(argv, stdout=out, stderr=err)
    finally:
        server.close()
    assert status == 0, err.getvalue()
    assert asked == ["Prod-Platform"]
    assert "2023.0.20260722" in out.getvalue() and "instance refresh" in out.getvalue(), out.getvalue()


def test_an_instance_refresh_replaces_as_many_at_once_as_its_healthy_range_allows() -> None:
    """EC2 Auto Scaling: "a large range [between the minimum and maximum healthy percentage] increases the number of
    instances that can be replaced at the same time"; what runs above the group is the part above 100 %."""
    from neuron_constructs.tools.diff_planning import _refresh

    group = {
        "Properties": {"MaxSize": "10"},
        "UpdatePolicy": {
            "AutoScalingInstanceRefresh": {"Preferences": {"MinHealthyPercentage": 90, "MaxHealthyPercentage": 110}}
        },
    }
    change = _refresh("Group", group, ["AMI"], "trn1.32xlarge")
    assert (change.batch, change.batches, change.above, change.launch_first) == (2, 5, 1, True)
    maintained = {"Properties": {"MaxSize": 4, "InstanceMaintenancePolicy": {"MinHealthyPercentage": 50}}}
    maintained["UpdatePolicy"] = {"AutoScalingInstanceRefresh": {"Preferences": {"MaxHealthyPercentage": 100}}}
    # THEN what the refresh leaves out comes from the group's own maintenance policy: 50 %, two at a time
    assert _refresh("Group", maintained, ["AMI"], "trn1.32xlarge").batch == 2
