"""Neuron monitoring from the synthesized templates: daemons on every Neuron capacity and no other, least-privilege
roles, a dashboard that shows only metrics the daemon publishes, alarms that reach a topic, and recovery."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from conftest import ECS_STACKS, imported_vpc, resources

from neuron_constructs import NeuronConfigurationError, NeuronInstanceType
from neuron_constructs.knowledge.container_images import (
    AWS_CLI,
    IMAGES,
    NEURON_MONITOR,
    NODE_PROBLEM_DETECTOR,
    PRIVILEGED_IMAGES,
    NeuronImage,
)
from neuron_constructs.knowledge.engine_metrics import DERIVED_METRICS, ENGINE_METRICS
from neuron_constructs.monitoring.daemons import (
    MONITOR_IMAGE,
    NEURON_HARDWARE_ERRORS,
    health_script,
    monitor_script,
    publisher_source,
    recovery_script,
)
from neuron_constructs.programs.metric_publisher import (
    DIMENSION_SETS,
    METRICS,
    MODEL_DIMENSION_SETS,
    MODEL_METRICS,
    NAMESPACE,
)
from neuron_constructs.tools.inspection import ContainerInstance, NeuronDevices, Task, TaskContainer, find_problems

ENGINE_METRIC_NAMES = (*(m.name for m in ENGINE_METRICS), *DERIVED_METRICS)
"""What the engine-metrics collector publishes per model (the dashboard's start and compile rows)."""


def _neuron_types(template: dict[str, Any]) -> set[str]:
    return {
        lt["Properties"]["LaunchTemplateData"]["InstanceType"]
        for lt in resources(template, "AWS::EC2::LaunchTemplate").values()
        if NeuronInstanceType.find(lt["Properties"]["LaunchTemplateData"]["InstanceType"])
    }


def _daemon_services(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        k: v
        for k, v in resources(template, "AWS::ECS::Service").items()
        if v["Properties"].get("SchedulingStrategy") == "DAEMON"
    }


def _covered_types(service: dict[str, Any]) -> set[str]:
    (constraint,) = service["Properties"]["PlacementConstraints"]
    match = re.fullmatch(r"attribute:ecs\.instance-type in \[(.*)\]", constraint["Expression"])
    assert match, constraint
    return set(match.group(1).split(", "))


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_a_daemon_runs_on_every_neuron_capacity_and_no_other(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    template = templates[stack]
    neuron_types = _neuron_types(template)
    daemons = _daemon_services(template)
    # Auto Scaling capacity: a neuron-monitor service and a problem-detector service, each on exactly the Neuron types.
    assert len(daemons) == (2 if neuron_types else 0)
    for service in daemons.values():
        assert _covered_types(service) == neuron_types
    # Managed Instances capacity: a monitor daemon and a critical health daemon per capacity provider.
    managed = [
        k
        for k, v in resources(template, "AWS::ECS::CapacityProvider").items()
        if "ManagedInstancesProvider" in v["Properties"]
    ]
    managed_daemons = resources(template, "AWS::ECS::Daemon").values()
    for provider in managed:
        serving = [d for d in managed_daemons if provider in json.dumps(d["Properties"]["CapacityProviderArns"])]
        assert sorted(d["Properties"]["Critical"] for d in serving) == [False, True]
    assert len(managed_daemons) == 2 * len(managed)


def test_the_mixed_cluster_s_general_purpose_group_gets_no_daemon(templates: dict[str, dict[str, Any]]) -> None:
    for service in _daemon_services(templates["NeuronMixedCluster"]).values():
        assert _covered_types(service) == {"inf1.xlarge", "trn1.32xlarge"}  # never m7i.large


def _task(template: dict[str, Any], service: dict[str, Any]) -> dict[str, Any]:
    return template["Resources"][service["Properties"]["TaskDefinition"]["Ref"]]["Properties"]  # type: ignore[no-any-return]


def _daemon_task(template: dict[str, Any], container: str) -> tuple[dict[str, Any], dict[str, Any]]:
    for service in _daemon_services(template).values():
        task = _task(template, service)
        if task["ContainerDefinitions"][0]["Name"] == container:
            return service, task
    raise AssertionError(f"no daemon service runs {container}")


def _monitor(template: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return _daemon_task(template, "neuron-monitor")


AUTO_SCALING_STACKS = (
    "NeuronInferenceEc2",
    "NeuronMixedCluster",
    "NeuronSlicedInf2",
    "NeuronSlicedTrn1",
    "NeuronRagFleet",
    "NeuronInferenceTrn2",
)
"""The examples whose cluster has Neuron Auto Scaling capacity: the daemon services."""
MANAGED_STACKS = ("NeuronInferenceManaged", "NeuronMixedCluster")
"""The examples whose cluster has Managed Instances capacity: the managed daemons."""


def _managed_daemon_task(template: dict[str, Any], container: str) -> dict[str, Any]:
    for definition in resources(template, "AWS::ECS::DaemonTaskDefinition").values():
        if definition["Properties"]["ContainerDefinitions"][0]["Name"] == container:
            return definition["Properties"]  # type: ignore[no-any-return]
    raise AssertionError(f"no managed daemon runs {container}")


def test_the_example_stacks_with_each_capacity_kind_are_the_ones_the_daemon_tests_cover(
    templates: dict[str, dict[str, Any]],
) -> None:
    """Keeps the parametrized daemon tests below on every example stack where they apply."""
    assert {s for s in ECS_STACKS if _neuron_types(templates[s])} == set(AUTO_SCALING_STACKS)
    assert {s for s in ECS_STACKS if resources(templates[s], "AWS::ECS::DaemonTaskDefinition")} == set(MANAGED_STACKS)


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_the_monitor_is_privileged_maps_no_device_and_publishes_through_its_log_stream(
    stack: str, templates: dict[str, dict[str, Any]]
) -> None:
    """On both capacity kinds: the daemon service's task and the managed daemon's task definition."""
    template = templates[stack]
    if stack in MANAGED_STACKS:
        managed = _managed_daemon_task(template, "neuron-monitor")
        (daemon,) = managed["ContainerDefinitions"]
        assert daemon["Image"] == NEURON_MONITOR.reference and daemon["Privileged"] is True
        assert "LinuxParameters" not in daemon  # no /dev/neuronN of its own
        assert "TaskRoleArn" not in managed  # no task role at all: it publishes through its log stream
        assert "NetworkMode" not in managed  # ECS's daemon bridge network
        assert daemon["LogConfiguration"]["LogDriver"] == "awslogs"
        assert {e["Name"]: e["Value"] for e in daemon["Environment"]}["NEURON_MONITOR_EMF"] == publisher_source()
    if stack not in AUTO_SCALING_STACKS:
        return
    _, task = _monitor(template)
    (container,) = task["ContainerDefinitions"]
    assert container["Image"] == MONITOR_IMAGE == NEURON_MONITOR.reference and container["Privileged"] is True
    assert task["NetworkMode"] == "bridge"  # the hop limit of 1 keeps the metadata service from it
    assert container["EntryPoint"] == ["/bin/sh", "-c"]  # POSIX sh: the image's shell, whatever it links to
    assert "LinuxParameters" not in container  # no /dev/neuronN of its own: the workloads' devices stay theirs
    environment = {e["Name"]: e["Value"] for e in container["Environment"]}
    assert environment["NEURON_MONITOR_EMF"] == publisher_source()
    assert container["LogConfiguration"]["LogDriver"] == "awslogs"
    script = container["Command"][0]
    config = json.loads(re.search(r"printf '%s' '(.*)' >", script).group(1))  # type: ignore[union-attr]
    assert config["period"] == "60s"
    assert {m["type"] for m in config["neuron_runtimes"][0]["metrics"]} == {
        "neuroncore_counters",
        "memory_used",
        "neuron_runtime_vcpu_usage",
        "execution_stats",
    }
    assert config["system_metrics"] == [{"type": "neuron_hw_counters"}]


@pytest.mark.parametrize("stack", AUTO_SCALING_STACKS)
def test_no_daemon_holds_more_than_it_needs(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    """neuron-monitor privileged (the Neuron driver's counters of every device, as the Neuron SDK's manifest runs
    it); node-problem-detector and the recovery container not privileged: the kernel log read-only and CAP_SYSLOG
    only, the recovery container with a read-only root file system; every daemon task in the bridge network."""
    _, task = _daemon_task(templates[stack], "npd")
    assert task["NetworkMode"] == "bridge"
    containers = {c["Name"]: c for c in task["ContainerDefinitions"]}
    detector, recovery = containers["npd"], containers["recovery"]
    for container in (detector, recovery):
        assert "Privileged" not in container
        assert container["LinuxParameters"]["Devices"] == [
            {"ContainerPath": "/dev/kmsg", "HostPath": "/dev/kmsg", "Permissions": ["read"]}
        ]
        assert container["LinuxParameters"]["Capabilities"] == {"Add": ["SYSLOG"]}
    assert recovery["ReadonlyRootFilesystem"] is True


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_only_the_neuron_monitor_runs_privileged_and_nothing_in_the_host_network(
    stack: str, templates: dict[str, dict[str, Any]]
) -> None:
    """Every daemon of the library, on both capacity kinds: the one privileged container is neuron-monitor."""
    template = templates[stack]
    kinds = ("AWS::ECS::TaskDefinition", "AWS::ECS::DaemonTaskDefinition")
    daemons = {
        k: v
        for kind in kinds
        for k, v in resources(template, kind).items()
        if any(c["Name"] in ("neuron-monitor", "npd", "neuron-health") for c in v["Properties"]["ContainerDefinitions"])
    }
    assert daemons
    for task in daemons.values():
        if task["Type"] == "AWS::ECS::TaskDefinition":
            assert task["Properties"]["NetworkMode"] == "bridge"
        else:  # a managed daemon names no network mode: ECS runs it in its daemon bridge network
            assert "NetworkMode" not in task["Properties"]
        for container in task["Properties"]["ContainerDefinitions"]:
            assert bool(container.get("Privileged")) == (container["Name"] == "neuron-monitor"), container["Name"]


def test_every_image_the_daemons_run_is_the_module_s_reference(templates: dict[str, dict[str, Any]]) -> None:
    """Each daemon image is named as ``tag@digest`` where its source gives the digest, else by its tag (the problem
    detector v1.35.2: no source gives its digest)."""
    _, task = _daemon_task(templates["NeuronInferenceEc2"], "npd")
    images = {c["Name"]: c["Image"] for c in task["ContainerDefinitions"]}
    assert images == {"npd": NODE_PROBLEM_DETECTOR.reference, "recovery": AWS_CLI.reference}
    assert images["npd"] == "registry.k8s.io/node-problem-detector/node-problem-detector:v1.35.2"


def _statements(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


@pytest.mark.parametrize("stack", AUTO_SCALING_STACKS)
def test_each_daemon_role_holds_only_what_it_needs(stack: str, templates: dict[str, dict[str, Any]]) -> None:
    template = templates[stack]
    _, monitor = _monitor(template)
    assert _statements(template, monitor["TaskRoleArn"]["Fn::GetAtt"][0]) == []  # EMF: no CloudWatch API call
    execution = _statements(template, monitor["ExecutionRoleArn"]["Fn::GetAtt"][0])
    assert {a for s in execution for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])} == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    _, recovery = _daemon_task(template, "npd")
    # The bridge network: the instance id comes from DMI, so neither the metadata service nor a lookup is needed.
    assert recovery["NetworkMode"] == "bridge"
    statements = {s["Sid"]: s for s in _statements(template, recovery["TaskRoleArn"]["Fn::GetAtt"][0])}
    assert set(statements) == {"MarkNeuronInstancesUnhealthy"}
    assert statements["MarkNeuronInstancesUnhealthy"]["Action"] == "autoscaling:SetInstanceHealth"
    launch_templates = resources(template, "AWS::EC2::LaunchTemplate")
    neuron_groups = {
        k
        for k, v in resources(template, "AWS::AutoScaling::AutoScalingGroup").items()
        if NeuronInstanceType.find(
            launch_templates[v["Properties"]["LaunchTemplate"]["LaunchTemplateId"]["Ref"]]["Properties"][
                "LaunchTemplateData"
            ]["InstanceType"]
        )
    }
    resource = json.dumps(statements["MarkNeuronInstancesUnhealthy"]["Resource"])
    marked = set(re.findall(r'"Ref": "([A-Za-z0-9]+)"', resource))  # the groups' names; AWS::... never matches
    assert neuron_groups and marked == neuron_groups  # every Neuron group, never the general-purpose one


def _dashboard_body(template: dict[str, Any]) -> dict[str, Any]:
    (dashboard,) = resources(template, "AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    text = "".join(p if isinstance(p, str) else "TOKEN" for p in parts)
    return json.loads(text)  # type: ignore[no-any-return]


SEARCHED_AWS_METRICS = {
    ("AWS/ECS", ("ClusterName", "ServiceName")),
    ("AWS/ApplicationELB", ("LoadBalancer", "TargetGroup")),
}
"""What the dashboard searches beside the Neuron metrics: each service of the cluster, each target group of its load
balancers."""


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_the_dashboard_shows_only_metrics_the_daemon_publishes(
    stack: str, templates: dict[str, dict[str, Any]]
) -> None:
    body = _dashboard_body(templates[stack])
    ours: list[tuple[str, tuple[str, ...]]] = []
    searched: set[str] = set()
    for widget in body["widgets"]:
        for metric in widget["properties"].get("metrics", []):
            expression = next((m["expression"] for m in metric if isinstance(m, dict) and "expression" in m), None)
            if expression is not None:
                match = re.search(r"\{([^}]*)\} MetricName=\\?\"(\w+)\\?\"", expression)
                assert match, expression
                namespace, *dimensions = match.group(1).split(",")
                if namespace != NAMESPACE:  # the services and target groups of every stack, found by name
                    assert (namespace, tuple(dimensions)) in SEARCHED_AWS_METRICS, expression
                    searched.add(namespace)
                    continue
                ours.append((match.group(2), tuple(dimensions)))
            elif metric[0] == NAMESPACE:
                names = [m for m in metric[2:] if isinstance(m, str)][::2]
                ours.append((metric[1], tuple(names)))
    assert ours, "the dashboard shows Neuron metrics"
    assert "AWS/ECS" in searched  # every service of the cluster, whichever stack made it
    for name, dimensions in ours:
        published = (*MODEL_METRICS, *ENGINE_METRIC_NAMES) if dimensions == MODEL_DIMENSION_SETS[0] else METRICS
        assert name in published and dimensions in (*DIMENSION_SETS, *MODEL_DIMENSION_SETS), (name, dimensions)
    assert ("NeuronCoreUtilization", ("ClusterName", "Model")) in ours  # each model's utilization
    titles = [w["properties"].get("title") for w in body["widgets"]]
    assert {
        "NeuronCore utilization per instance (%)",
        "Accelerator memory used per instance (bytes)",
        "NeuronCore utilization per model (%)",
        "Executions completed per model",
    } <= set(titles)


def test_services_and_their_load_balancer_are_on_the_dashboard(templates: dict[str, dict[str, Any]]) -> None:
    titles = [w["properties"].get("title") for w in _dashboard_body(templates["NeuronRagFleet"])["widgets"]]
    assert {
        "Service CPU (%)",
        "Service memory (%)",
        "Load balancer response time (s, p99)",
        "5xx: targets and load balancer",
    } <= set(titles)
    body = json.dumps(_dashboard_body(templates["NeuronRagFleet"]))
    assert "HTTPCode_Target_5XX_Count" in body and "HTTPCode_ELB_5XX_Count" in body


@pytest.mark.parametrize("stack", ECS_STACKS)
def test_hardware_and_execution_error_alarms_reach_an_encrypted_topic(
    stack: str, templates: dict[str, dict[str, Any]]
) -> None:
    template = templates[stack]
    ((topic_id, topic),) = resources(template, "AWS::SNS::Topic").items()
    assert "KmsMasterKeyId" in topic["Properties"]
    # The monitoring's own alarms (a model's rollout and start alarms are the service's, named after it).
    alarms = {
        k.split("Monitoring", 1)[1]: a["Properties"]
        for k, a in resources(template, "AWS::CloudWatch::Alarm").items()
        if "Monitoring" in k
    }
    assert {k.split("Alarm")[0] for k in alarms} == {"HardwareErrors", "KernelHardwareErrors", "ExecutionErrors"}
    for alarm in alarms.values():
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
        assert (
            alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
            and alarm["TreatMissingData"] == "notBreaching"
        )
    hardware = next(a for k, a in alarms.items() if k.startswith("HardwareErrors"))
    (expression,) = [m for m in hardware["Metrics"] if "Expression" in m]
    assert expression["Expression"] == "MAX([ecc, execution])" and hardware["Threshold"] == 1
    stats = {m["Id"]: m["MetricStat"] for m in hardware["Metrics"] if "MetricStat" in m}
    assert {k: (v["Metric"]["Namespace"], v["Metric"]["MetricName"], v["Stat"]) for k, v in stats.items()} == {
        "ecc": (NAMESPACE, "HardwareEccUncorrected", "Maximum"),
        "execution": (NAMESPACE, "ExecutionHardwareErrors", "Maximum"),
    }
    execution = next(a for k, a in alarms.items() if k.startswith("ExecutionErrors"))
    assert (execution["Namespace"], execution["MetricName"], execution["Statistic"]) == (
        NAMESPACE,
        "ExecutionErrors",
        "Sum",
    )
    assert [d["Name"] for d in execution["Dimensions"]] == ["ClusterName"]
    # The daemons' kernel-log lines with NEURON_HW_ERR= (a replacement under way) notify too.
    (metric_filter,) = resources(template, "AWS::Logs::MetricFilter").values()
    assert metric_filter["Properties"]["FilterPattern"] == '"NEURON_HW_ERR=" -"Finish parsing"'
    kernel = next(a for k, a in alarms.items() if k.startswith("KernelHardwareErrors"))
    transform = metric_filter["Properties"]["MetricTransformations"][0]
    assert kernel["Namespace"] == transform["MetricNamespace"] and kernel["MetricName"] == transform["MetricName"]


def test_daemons_never_collide_with_a_workload_in_the_inspector(templates: dict[str, dict[str, Any]]) -> None:
    """The conflict rules of ``neuron-ecs inspect``, with every daemon task next to a task holding every chip."""
    from neuron_constructs.tools.inspection import _mapped_devices

    template = templates["NeuronSlicedTrn1"]
    daemon_tasks = [_task(template, s) for s in _daemon_services(template).values()]
    live = [
        {
            "containerDefinitions": [
                {
                    "name": c["Name"],
                    "linuxParameters": {
                        "devices": [
                            {"hostPath": d["HostPath"]} for d in c.get("LinuxParameters", {}).get("Devices", [])
                        ]
                    },
                }
                for c in task["ContainerDefinitions"]
            ]
        }
        for task in daemon_tasks
    ]
    instance = ContainerInstance("ci/a", "i-a", "trn1.32xlarge", NeuronDevices(tuple(map(str, range(16))), ()))
    workload = Task(
        "task/w", "td/w:1", "ci/a", (TaskContainer("model", (), tuple(f"/dev/neuron{i}" for i in range(16))),)
    )
    daemons = [
        Task(
            f"task/d{n}",
            f"td/d{n}:1",
            "ci/a",
            tuple(TaskContainer(name, (), mapped.paths) for name, mapped in _mapped_devices(t).items()),
        )
        for n, t in enumerate(live)
    ]
    assert [f for f in find_problems([instance], [workload, *daemons]) if f.kind == "conflict"] == []


def test_a_neuron_monitor_image_without_the_binary_or_python_stops_with_one_line(tmp_path: Any) -> None:
    """GIVEN a neuron-monitor tag no source describes (1.10.0) WHEN its image lacks neuron-monitor or python3 THEN the
    monitor container stops with one line naming what is missing; with both it runs the pipe."""
    from aws_cdk import Duration

    binary = tmp_path / "neuron-monitor"
    missing = subprocess.run(
        ["sh", "-c", monitor_script(Duration.minutes(1), str(binary))], capture_output=True, text=True, timeout=30
    )
    assert missing.returncode == 1 and missing.stdout == f"neuron-monitor: this image has no {binary}: " + (
        "run a neuron-monitor image that does (monitor_image=)\n"
    )
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    no_python = tmp_path / "bin"
    no_python.mkdir()
    env = {"PATH": str(no_python), "NEURON_MONITOR_EMF": ""}
    script = monitor_script(Duration.minutes(1), str(binary)).replace("/tmp/neuron-monitor.json", str(tmp_path / "c"))
    without = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, env=env, timeout=30)
    assert without.returncode == 1 and "this image has no python3 for the metric publisher" in without.stdout
    (no_python / "python3").symlink_to(sys.executable)
    env["PATH"] = str(no_python) + ":/usr/bin:/bin"
    ran = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 0 and ran.stdout == "", ran.stderr


def test_the_health_daemon_stops_on_an_unrecoverable_error_and_only_then(tmp_path: Any) -> None:
    """Watching a stream that blocks, as /dev/kmsg does: a FIFO."""
    import os

    fifo = tmp_path / "kmsg"
    os.mkfifo(fifo)
    env = {"NEURON_HEALTH_KMSG": str(fifo), "PATH": "/usr/bin:/bin"}
    daemon = subprocess.Popen(["sh", "-c", health_script()], env=env, stdout=subprocess.PIPE, text=True)
    try:
        with open(fifo, "w") as kernel:
            kernel.write("6,100,1;neuron: NEURON_HW_ERR=SRAM_CORRECTABLE_ERROR nd-id=0\n")
            kernel.write(
                "3,101,2;NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR instance-id=i-0abc hostname=ip-10-0-0-1 nd-id=3 "
                "nc-id=0 action=TERMINATE_INSTANCE\n"
            )
        out, _ = daemon.communicate(timeout=30)
    finally:
        daemon.kill()
    # It stops at the first line it stops for (grep -m1): the correctable error before it did not stop it.
    assert daemon.returncode == 1 and "HBM_UNCORRECTABLE_ERROR instance-id=i-0abc" in out
    assert "SRAM_CORRECTABLE_ERROR" not in out and out.count("\n") == 1
    assert set(NEURON_HARDWARE_ERRORS) == {
        "SRAM_UNCORRECTABLE_ERROR",
        "NC_UNCORRECTABLE_ERROR",
        "HBM_UNCORRECTABLE_ERROR",
        "DMA_ERROR",
    }


def test_a_kernel_log_it_cannot_read_never_stops_the_health_daemon(tmp_path: Any) -> None:
    """A missing kernel log and a directory in its place: each daemon says so once and waits its minute to look
    again."""
    (tmp_path / "a-directory").mkdir()
    daemons = [
        subprocess.Popen(
            ["sh", "-c", health_script()],
            env={"NEURON_HEALTH_KMSG": str(tmp_path / log), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its sleep holds stderr open: stop the whole group
        )
        for log in ("missing", "a-directory")
    ]
    for daemon in daemons:
        still_running = _sleeping(daemon, "60")
        os.killpg(daemon.pid, signal.SIGKILL)
        _, stderr = daemon.communicate()
        assert still_running
        assert stderr.count(b"neuron-health: cannot read") == 1  # said once, then a minute's wait


def _recovery(tmp_path: Any, *, enable: str = "true", instance: str | None = "i-0123456789abcdef0\n") -> Any:
    """The recovery script on a FIFO for /dev/kmsg, a DMI directory and an ``aws`` that records its arguments."""
    fifo, dmi, bin_dir = tmp_path / "kmsg", tmp_path / "dmi", tmp_path / "bin"
    os.mkfifo(fifo)
    dmi.mkdir()
    bin_dir.mkdir()
    if instance is not None:
        (dmi / "board_asset_tag").write_text(instance)
    aws = bin_dir / "aws"
    aws.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\n')
    aws.chmod(0o755)
    env = {
        "NEURON_HEALTH_KMSG": str(fifo),
        "NEURON_RECOVERY_DMI": str(dmi),
        "ENABLE_RECOVERY": enable,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
    }
    daemon = subprocess.Popen(
        ["sh", "-c", recovery_script()],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its sleep holds the pipes open: stop the whole group
    )
    return daemon, fifo, tmp_path / "calls"


def _stop(daemon: Any) -> tuple[str, str]:
    os.killpg(daemon.pid, signal.SIGKILL)
    out, err = daemon.communicate(timeout=10)
    return str(out), str(err)


def _sleeping(daemon: Any, seconds: str, timeout_s: float = 10.0) -> bool:
    """Whether ``daemon`` (a shell) reaches ``sleep <seconds>`` while still running: the wait its script ends each
    pass with, seen as the shell's child process, within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    children = Path(f"/proc/{daemon.pid}/task/{daemon.pid}/children")
    while daemon.poll() is None and time.monotonic() < deadline:
        for pid in children.read_text().split():
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", seconds.encode()]:
                    return daemon.poll() is None
            except OSError:
                continue
        time.sleep(0.01)
    return False


def _wait_for(path: Any, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return str(path.read_text()) if path.exists() else ""


def test_the_recovery_container_marks_the_instance_dmi_names_unhealthy_at_an_unrecoverable_error(tmp_path: Any) -> None:
    """The instance id from the instance's DMI identity (no metadata service), one call, then it waits."""
    daemon, fifo, calls = _recovery(tmp_path)
    try:
        with open(fifo, "w") as kernel:
            kernel.write("6,100,1;neuron: NEURON_HW_ERR=SRAM_CORRECTABLE_ERROR nd-id=0\n")
            kernel.write("3,101,2;NEURON_HW_ERR=DMA_ERROR nd-id=1 action=TERMINATE_INSTANCE\n")
        recorded = _wait_for(calls)
        assert _sleeping(daemon, "3600")  # it waits: a restart would not mark the instance again
    finally:
        out, _ = _stop(daemon)
    assert "SRAM_CORRECTABLE_ERROR" not in out  # the correctable error before it marked nothing
    assert recorded.splitlines() == [
        "autoscaling set-instance-health --instance-id i-0123456789abcdef0 --health-status Unhealthy "
        "--no-should-respect-grace-period"
    ]
    assert "unrecoverable Neuron hardware error on i-0123456789abcdef0" in out and "NEURON_HW_ERR=DMA_ERROR" in out
    assert "169.254.169.254" not in recovery_script()  # never the instance metadata service


@pytest.mark.parametrize(("enable", "instance"), [("false", "i-0123456789abcdef0\n"), ("true", None), ("true", "")])
def test_the_recovery_container_only_reports_with_recovery_off_or_no_instance_id(
    tmp_path: Any, enable: str, instance: str | None
) -> None:
    daemon, fifo, calls = _recovery(tmp_path, enable=enable, instance=instance)
    try:
        with open(fifo, "w") as kernel:
            kernel.write("3,101,2;NEURON_HW_ERR=NC_UNCORRECTABLE_ERROR nd-id=0\n")
        assert _sleeping(daemon, "3600")  # reported, and waits without calling
    finally:
        out, err = _stop(daemon)
    assert not calls.exists()
    assert "NEURON_HW_ERR=NC_UNCORRECTABLE_ERROR" in out
    assert ("no instance id in" in err) == (instance != "i-0123456789abcdef0\n")


@pytest.mark.parametrize("stack", MANAGED_STACKS)
def test_the_managed_instances_health_daemon_is_critical_and_reads_only_the_kernel_log(
    stack: str, templates: dict[str, dict[str, Any]]
) -> None:
    template = templates[stack]
    definitions = resources(template, "AWS::ECS::DaemonTaskDefinition")
    health_id, health = next(
        (k, d["Properties"])
        for k, d in definitions.items()
        if d["Properties"]["ContainerDefinitions"][0]["Name"] == "neuron-health"
    )
    (container,) = health["ContainerDefinitions"]
    assert container["LinuxParameters"]["Devices"] == [
        {"HostPath": "/dev/kmsg", "ContainerPath": "/dev/kmsg", "Permissions": ["read"]}
    ]
    assert container["LinuxParameters"]["Capabilities"] == {"Add": ["SYSLOG"]}  # CAP_SYSLOG, nothing more
    daemons = [
        d["Properties"]
        for d in resources(template, "AWS::ECS::Daemon").values()
        if d["Properties"]["DaemonTaskDefinitionArn"]["Fn::GetAtt"][0] == health_id
    ]
    assert daemons and all(d["Critical"] is True for d in daemons)  # its exit replaces the instance
    assert "Privileged" not in container and container["Essential"] is True
    assert container["Image"] == AWS_CLI.reference  # sh and grep; not the retired inference DLC
    assert "TaskRoleArn" not in health  # it calls no AWS API


def test_recovery_can_be_turned_off() -> None:
    from neuron_constructs import NeuronCluster, NeuronMonitoring

    stack = Stack(App(), "Metrics")
    cluster = NeuronCluster(stack, "N", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    cluster.add_managed_instances_capacity("Mi")
    NeuronMonitoring(cluster, "Monitoring", cluster=cluster, recovery=False)
    template = App.of(stack).synth().get_stack_by_name("Metrics").template  # type: ignore[union-attr]
    daemons = resources(template, "AWS::ECS::Daemon").values()
    assert [d["Properties"]["Critical"] for d in daemons] == [False]
    policies = json.dumps(resources(template, "AWS::IAM::Policy"))
    assert "autoscaling:SetInstanceHealth" not in policies  # nothing to mark unhealthy with recovery off
    containers = {
        c["Name"]: c
        for t in resources(template, "AWS::ECS::TaskDefinition").values()
        for c in t["Properties"]["ContainerDefinitions"]
    }
    assert {"npd", "recovery"} <= set(containers)  # both still run on the Auto Scaling capacity: they only report
    assert {"Name": "ENABLE_RECOVERY", "Value": "false"} in containers["recovery"]["Environment"]


def test_the_monitoring_page_s_metric_table_and_cost_figures_are_the_code_s() -> None:
    from pathlib import Path

    from neuron_constructs.programs import metric_publisher as emf

    page = (Path(__file__).resolve().parent.parent / "docs" / "monitoring.md").read_text()
    section = page.split("## Observability", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \|", section, flags=re.M)
    assert dict(rows) == dict(METRICS)
    assert f"{len(METRICS)} custom metrics per instance" in section
    assert f"${len(METRICS) * 0.30:.2f} per instance per month" in section
    sample = json.loads((Path(__file__).parent / "data" / "neuron_monitor_sample.json").read_text())
    line = json.dumps(
        emf.emf_record(
            sample, cluster="NeuronInferenceEc2-NeuronCluster877957E9-ABCDEFGHIJKL", timestamp_ms=1764500000000
        ),
        separators=(",", ":"),
    )
    assert f"gives {len(line)} bytes" in section
    assert f"Namespace `{NAMESPACE}`" in section


def test_monitoring_is_registered_however_it_is_made_and_only_once() -> None:
    from neuron_constructs import NeuronCluster, NeuronConfigurationError
    from neuron_constructs.monitoring.monitoring import NeuronMonitoring

    stack = Stack(App(), "Direct")
    cluster = NeuronCluster(stack, "N", vpc=imported_vpc(stack))
    monitoring = NeuronMonitoring(stack, "Mon", cluster=cluster)
    assert cluster.monitoring is monitoring
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    assert monitoring.daemon_service is not None  # capacity added later is covered
    with pytest.raises(NeuronConfigurationError, match="NEURON054"):
        NeuronMonitoring(stack, "Again", cluster=cluster)


@pytest.mark.parametrize("seconds", [0, 30, 90, 7200])
def test_a_period_that_is_not_whole_minutes_is_refused(seconds: int) -> None:
    from aws_cdk import Duration

    from neuron_constructs import NeuronCluster, NeuronConfigurationError, NeuronMonitoring

    cluster = NeuronCluster(Stack(App(), "Period"), "N")
    with pytest.raises(NeuronConfigurationError, match="period="):
        NeuronMonitoring(cluster, "Monitoring", cluster=cluster, period=Duration.seconds(seconds))


def test_the_managed_instances_rollout_drains_a_tenth_at_a_time_or_what_you_choose() -> None:
    from neuron_constructs import NeuronCluster, NeuronMonitoring

    stack = Stack(App(), "Rollout")
    cluster = NeuronCluster(stack, "N", vpc=imported_vpc(stack))
    cluster.add_managed_instances_capacity("Mi")
    NeuronMonitoring(cluster, "Monitoring", cluster=cluster, drain_percent=25)
    template = App.of(stack).synth().get_stack_by_name("Rollout").template  # type: ignore[union-attr]
    rollouts = [d["Properties"]["DeploymentConfiguration"] for d in resources(template, "AWS::ECS::Daemon").values()]
    assert rollouts == [{"DrainPercent": 25, "BakeTimeInMinutes": 10}] * 2


def test_the_examples_roll_managed_daemons_out_a_tenth_at_a_time(templates: dict[str, dict[str, Any]]) -> None:
    for daemon in resources(templates["NeuronInferenceManaged"], "AWS::ECS::Daemon").values():
        assert daemon["Properties"]["DeploymentConfiguration"] == {"DrainPercent": 10, "BakeTimeInMinutes": 10}


DIGEST = "sha256:" + "5e" * 32
"""A digest of the right form for tests; no registry holds it."""


def _monitored_app(**monitoring: Any) -> tuple[App, Stack]:
    from neuron_constructs import NeuronCluster, NeuronMonitoring

    app = App(analytics_reporting=False)
    stack = Stack(app, "Pins")
    cluster = NeuronCluster(stack, "N", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    cluster.add_managed_instances_capacity("Mi")
    NeuronMonitoring(cluster, "Monitoring", cluster=cluster, **monitoring)
    return app, stack


def _warnings(stack: Stack, rule_id: str) -> list[str]:
    return [
        str(entry.data)
        for construct in stack.node.find_all()
        for entry in construct.node.metadata
        if entry.type == "aws:cdk:warning" and rule_id in str(entry.data)
    ]


@pytest.mark.parametrize(
    "image",
    [i for i in IMAGES.values() if i.digest is None and i not in PRIVILEGED_IMAGES.values()]
    + [
        NeuronImage(
            "my.registry.example/team",
            "neuron-monitor",
            "1.3.0",
            None,
            "neuron-monitor",
            "1.3.0",
            None,
            None,
            ("inf2",),
            "mine",
        )
    ],
    ids=lambda i: i.repository,
)
def test_a_privileged_daemon_image_without_a_digest_is_refused(image: NeuronImage) -> None:
    with pytest.raises(NeuronConfigurationError) as raised:
        _monitored_app(monitor_image=image)
    message = str(raised.value)
    assert "Pins/N/Monitoring: monitor_image " + image.uri + " has no digest" in message
    assert "[NEURON068: " in message and "neuron-ecs digests" in message
    constant = next((n for n, i in IMAGES.items() if i.uri == image.uri), "your_image")
    assert f'pass monitor_image={constant}.pinned("sha256:...")' in message


def test_a_pinned_monitor_image_runs_by_its_digest_on_both_capacity_kinds_without_a_warning() -> None:
    app, stack = _monitored_app(monitor_image=NEURON_MONITOR.pinned(DIGEST))
    template = app.synth().get_stack_by_name("Pins").template
    images = {
        c["Image"]
        for kind in ("AWS::ECS::TaskDefinition", "AWS::ECS::DaemonTaskDefinition")
        for t in resources(template, kind).values()
        for c in t["Properties"]["ContainerDefinitions"]
        if c.get("Privileged")
    }
    assert images == {f"{NEURON_MONITOR.uri}@{DIGEST}"}
    assert _warnings(stack, "NEURON116") == []


def test_the_library_s_own_monitor_image_runs_by_its_tag_only_with_a_warning() -> None:
    """No published source gives neuron-monitor:1.10.0's digest: the default runs by tag, and says so."""
    assert NEURON_MONITOR.digest is None  # when a source gives it, pin it in the module and this test changes
    _, stack = _monitored_app()
    (warning,) = _warnings(stack, "NEURON116")
    assert (
        "Pins/N/Monitoring: neuron-monitor runs privileged from public.ecr.aws/neuron/neuron-monitor:1.10.0" in warning
    )
    assert 'monitor_image=NEURON_MONITOR.pinned("sha256:...")' in warning


def test_the_library_acknowledges_only_its_privileged_monitor_and_a_user_s_privileged_container_warns() -> None:
    """NEURON115 at synth: the library's neuron-monitor task definitions (service and managed daemon) are
    acknowledged with their reason; a user's privileged container and host-network task are reported until the
    user acknowledges them."""
    from aws_cdk import Acknowledgment, Validations
    from aws_cdk import aws_ecs as ecs
    from conftest import synth_warnings

    from neuron_constructs.knowledge import rules

    def build(acknowledge: bool) -> App:
        app, stack = _monitored_app(monitor_image=NEURON_MONITOR.pinned(DIGEST))
        mine = ecs.Ec2TaskDefinition(stack, "Agent", network_mode=ecs.NetworkMode.HOST)
        mine.add_container(
            "agent", image=ecs.ContainerImage.from_registry("busybox"), memory_limit_mib=64, privileged=True
        )
        if acknowledge:
            Validations.of(mine).acknowledge(
                Acknowledgment(id=rules.PRIVILEGED_CONTAINER.warning_id, reason="the agent manages the host")
            )
        return app

    warnings = [w for w in synth_warnings(build(acknowledge=False)) if "[NEURON115: " in w]
    assert [w.split(". [")[0] for w in warnings] == [
        "Pins/Agent: container agent: it is privileged and its task uses the host network, so it can use the "
        "instance role (ecs:Poll: every task's credentials on the instance)"
    ]
    assert [w for w in synth_warnings(build(acknowledge=True)) if "[NEURON115: " in w] == []
    _, stack = _monitored_app(monitor_image=NEURON_MONITOR.pinned(DIGEST))
    acknowledged = [
        c.node.path
        for c in stack.node.find_all()
        for e in c.node.metadata
        if e.type == "aws:cdk:acknowledged-rules" and "neuron-constructs:NEURON115" in e.data
    ]
    assert acknowledged == ["Pins/N/Monitoring/MonitorTask", "Pins/N/Monitoring/MonitorDaemonTask"]


def test_neuron_ecs_lint_sees_the_library_s_acknowledgement_in_the_template_and_reports_the_rest() -> None:
    """The template carries the library's acknowledgement (cfn-lint's ignore_checks, NEURON115's W9215) on the
    monitor's two task definitions only; a user's host-network task in the same template is reported."""
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs.checks.template_checks import check_template

    app, stack = _monitored_app(monitor_image=NEURON_MONITOR.pinned(DIGEST))
    ecs.Ec2TaskDefinition(stack, "Proxy", network_mode=ecs.NetworkMode.HOST).add_container(
        "proxy", image=ecs.ContainerImage.from_registry("busybox"), memory_limit_mib=64
    )
    template = app.synth().get_stack_by_name("Pins").template
    ignoring = {
        k for k, r in template["Resources"].items() if "W9215" in json.dumps(r.get("Metadata", {}).get("cfn-lint", {}))
    }
    monitors = {
        k
        for kind in ("AWS::ECS::TaskDefinition", "AWS::ECS::DaemonTaskDefinition")
        for k, r in resources(template, kind).items()
        if [c["Name"] for c in r["Properties"]["ContainerDefinitions"]] == ["neuron-monitor"]
    }
    assert len(monitors) == 2 and ignoring == monitors
    found = [f for f in check_template(template) if f.rule.id == "NEURON115"]
    assert [(f.logical_id[:5], f.message.split(": ", 1)[1].split(". [")[0]) for f in found] == [
        (
            "Proxy",
            "container proxy: its task uses the host network, so it can use the instance role (ecs:Poll: every "
            "task's credentials on the instance)",
        )
    ]


NPD_V1_35_2 = json.loads((Path(__file__).parent / "data" / "node_problem_detector_v1.35.2.json").read_text())
"""What node-problem-detector v1.35.2 reads, recorded from its repository at the tag (the file's ``_source``)."""


def test_the_detector_runs_with_flags_and_a_kernel_monitor_v1_35_2_reads() -> None:
    """GIVEN the flags and kmsg monitor configuration node-problem-detector v1.35.2 accepts (recorded) WHEN the
    recovery task runs the library's default detector image THEN every flag it passes and every key of its kernel
    monitor is one v1.35.2 reads, and the start-up line the kernel alarm excludes is v1.35.2's."""
    app, _ = _monitored_app()
    template = app.synth().get_stack_by_name("Pins").template
    (npd,) = [
        c
        for t in resources(template, "AWS::ECS::TaskDefinition").values()
        for c in t["Properties"]["ContainerDefinitions"]
        if c["Name"] == "npd"
    ]
    assert npd["Image"] == NODE_PROBLEM_DETECTOR.reference and NODE_PROBLEM_DETECTOR.tag == "v1.35.2"
    (command,) = npd["Command"]
    flags = re.findall(r"/node-problem-detector((?: --[\w.-]+(?:=\S+)?)+)", command)[0]
    names = {flag.split("=", 1)[0].removeprefix("--") for flag in flags.split()}
    assert names == {"v", "logtostderr", "enable-k8s-exporter", "config.system-log-monitor"}
    assert names <= set(NPD_V1_35_2["flags"])
    monitor = json.loads(command.split("echo '", 1)[1].split("' >", 1)[0])
    assert set(monitor) <= set(NPD_V1_35_2["monitor_config_keys"])
    assert all(set(rule) <= set(NPD_V1_35_2["rule_keys"]) for rule in monitor["rules"])
    assert {rule["type"] for rule in monitor["rules"]} <= set(NPD_V1_35_2["rule_types"])
    assert all(set(condition) <= set(NPD_V1_35_2["condition_keys"]) for condition in monitor["conditions"])
    (kernel_filter,) = [
        f["Properties"]["FilterPattern"]
        for f in resources(template, "AWS::Logs::MetricFilter").values()
        if "NEURON_HW_ERR" in f["Properties"]["FilterPattern"]
    ]
    assert '-"Finish parsing"' in kernel_filter and NPD_V1_35_2["start_up_log_line"].startswith("Finish parsing")


def test_the_kernel_events_namespace_is_still_imported_from_the_monitoring_module_and_is_the_alarms_module_s() -> None:
    # GIVEN the name neuron_constructs.monitoring.monitoring defined before it was split by concept
    from neuron_constructs.monitoring import alarms, monitoring

    # WHEN it is imported from the old module
    # THEN it is the very object the alarms module defines, documented there only
    assert monitoring.KERNEL_EVENTS_NAMESPACE is alarms.KERNEL_EVENTS_NAMESPACE
    assert "KERNEL_EVENTS_NAMESPACE" not in monitoring.__all__
    assert "KERNEL_EVENTS_NAMESPACE" in alarms.__all__
