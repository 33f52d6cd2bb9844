"""The deployment report read from canned API answers: what it leads with, what it says of imported clusters,
which endpoint it names, and what its device counts count. No endpoint runs: each test hands the report the
answers a boto3 client would give."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from neuron_constructs.tools.deployment_report import (
    Gap,
    ReportItem,
    ServiceState,
    StackReport,
    describe_stack,
    endpoint_label,
    format_reports,
    gap_summary,
)

IMPORTED_CLUSTER = "platform-cluster"
SERVICE_ARN = f"arn:aws:ecs:us-east-1:123456789012:service/{IMPORTED_CLUSTER}/Llm-Service-1"


class _Pages:
    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages

    def paginate(self, **_: Any) -> list[dict[str, Any]]:
        return self.pages


class _CloudFormation:
    def __init__(self, template: dict[str, Any], created: dict[str, str], status: str = "CREATE_COMPLETE") -> None:
        self.template, self.created, self.status = template, created, status

    def describe_stacks(self, StackName: str) -> dict[str, Any]:
        return {"Stacks": [{"StackName": StackName, "StackStatus": self.status, "Outputs": [], "Parameters": []}]}

    def get_template(self, **_: Any) -> dict[str, Any]:
        return {"TemplateBody": json.dumps(self.template)}

    def get_paginator(self, name: str) -> _Pages:
        assert name == "list_stack_resources"
        summaries = [{"LogicalResourceId": k, "PhysicalResourceId": v} for k, v in self.created.items()]
        return _Pages([{"StackResourceSummaries": summaries}])


class _Ecs:
    def __init__(self, services: dict[tuple[str, str], dict[str, Any]], tasks: int = 0) -> None:
        self.services, self.tasks = services, tasks
        self.asked: list[tuple[str, str]] = []

    def describe_services(self, cluster: str, services: list[str]) -> dict[str, Any]:
        self.asked.append((cluster, services[0]))
        found = self.services.get((cluster, services[0]))
        return {"services": [found] if found else [], "failures": [] if found else [{"reason": "MISSING"}]}

    def get_paginator(self, name: str) -> _Pages:
        assert name == "list_tasks"
        return _Pages([{"taskArns": [f"task-{i}" for i in range(self.tasks)]}])


def _service_template(cluster: Any) -> dict[str, Any]:
    return {
        "Resources": {
            "LlmService": {
                "Type": "AWS::ECS::Service",
                "Properties": {"Cluster": cluster, "DesiredCount": 2, "TaskDefinition": {"Ref": "Task"}},
            }
        }
    }


def _live_service() -> dict[str, Any]:
    return {
        "serviceName": "Llm-Service-1",
        "desiredCount": 2,
        "runningCount": 1,
        "taskDefinition": "arn:aws:ecs:us-east-1:123456789012:task-definition/llm:1",
        "launchType": "EC2",
    }


def test_a_service_in_an_imported_cluster_named_literally_is_reported_as_created() -> None:
    """GIVEN a workload stack whose service names the platform's cluster by its literal name, WHEN DescribeServices
    finds the service there, THEN the report lists it as a service with its tasks, and no gap."""
    ecs = _Ecs({(IMPORTED_CLUSTER, SERVICE_ARN): _live_service()}, tasks=2)
    clients = {
        "cloudformation": _CloudFormation(_service_template(IMPORTED_CLUSTER), {"LlmService": SERVICE_ARN}),
        "ecs": ecs,
    }
    report = describe_stack(clients.__getitem__, "LlmService")
    assert ecs.asked == [(IMPORTED_CLUSTER, SERVICE_ARN)]
    assert report.gaps == []
    assert report.services == [ServiceState("Llm-Service-1", IMPORTED_CLUSTER, desired=2, running=1, placed=2)]
    assert [item.kind for item in report.items] == ["service", "iam"]
    line = format_reports([report]).splitlines()[1]
    assert "1 service, 1 of 2 tasks running, 2 placed" in line and f"--cluster {IMPORTED_CLUSTER}" in line


def test_a_service_describe_services_does_not_find_is_a_gap_naming_the_cluster() -> None:
    clients = {
        "cloudformation": _CloudFormation(_service_template(IMPORTED_CLUSTER), {"LlmService": SERVICE_ARN}),
        "ecs": _Ecs({}),
    }
    report = describe_stack(clients.__getitem__, "LlmService")
    (gap,) = report.gaps
    assert (gap.attribute, gap.detail) == (
        "resource",
        f"not created (DescribeServices does not find it in cluster {IMPORTED_CLUSTER})",
    )


DEPLOYMENT = {
    "MaximumPercent": 100,
    "MinimumHealthyPercent": 50,
    "DeploymentCircuitBreaker": {"Enable": True, "Rollback": True},
    "Alarms": {"AlarmNames": [{"Ref": "Errors"}, {"Ref": "Health"}], "Enable": True, "Rollback": True},
}
"""What a fleet's copy asks for (NeuronFleet: a 100 % maximum, the circuit breaker and the model's alarms)."""


def _deployed(live: dict[str, Any]) -> StackReport:
    template = _service_template(IMPORTED_CLUSTER)
    template["Resources"]["LlmService"]["Properties"]["DeploymentConfiguration"] = DEPLOYMENT
    clients = {
        "cloudformation": _CloudFormation(template, {"LlmService": SERVICE_ARN}),
        "ecs": _Ecs({(IMPORTED_CLUSTER, SERVICE_ARN): {**_live_service(), **live}}),
    }
    return describe_stack(clients.__getitem__, "LlmService")


def test_a_rolling_service_s_deployment_settings_the_endpoint_dropped_are_one_gap_naming_each() -> None:
    """GIVEN a fleet copy's deploymentConfiguration (percentages, circuit breaker, alarms) WHEN the endpoint reports
    none of it (moto keeps no deploymentConfiguration) THEN one gap names each setting, and the summary counts it."""
    (gap,) = _deployed({}).gaps
    assert (gap.attribute, gap.detail) == (
        "deploymentConfiguration",
        "deploymentConfiguration not kept: maximumPercent 100, minimumHealthyPercent 50, deploymentCircuitBreaker "
        "(circuit breaker: rollback), alarms (alarms: 2 alarms, rollback)",
    )
    assert "ECS::Service deploymentConfiguration" in gap_summary(_deployed({}), "the endpoint")


def test_deployment_settings_reported_as_asked_are_no_gap() -> None:
    kept = {
        "maximumPercent": 100,
        "minimumHealthyPercent": 50,
        "deploymentCircuitBreaker": {"enable": True, "rollback": True},
        "alarms": {"alarmNames": ["e", "h"], "enable": True, "rollback": True},
    }
    assert _deployed({"deploymentConfiguration": kept}).gaps == []
    without_rollback = {**kept, "alarms": {"alarmNames": ["e", "h"], "enable": True, "rollback": False}}
    (gap,) = _deployed({"deploymentConfiguration": without_rollback}).gaps
    assert gap.detail == "deploymentConfiguration not kept: alarms (alarms: 2 alarms, rollback)"


class _AutoScaling:
    def describe_auto_scaling_groups(self, AutoScalingGroupNames: list[str]) -> dict[str, Any]:
        name = AutoScalingGroupNames[0]
        return {"AutoScalingGroups": [{"AutoScalingGroupName": name, "MinSize": 0, "MaxSize": 2, "DesiredCapacity": 0}]}


def test_a_group_s_instance_refresh_policy_is_a_gap_no_api_reads_back() -> None:
    """GIVEN a group pinned to an AMI release with an AMI rollout (UpdatePolicy: AutoScalingInstanceRefresh) WHEN
    reported THEN the policy and its preferences are a gap: nothing on the endpoint (or in any API) exercises it."""
    refresh = {"Preferences": {"MinHealthyPercentage": 50, "MaxHealthyPercentage": 100, "SkipMatching": True}}
    template = {
        "Resources": {
            "Group": {
                "Type": "AWS::AutoScaling::AutoScalingGroup",
                "Properties": {"MinSize": "0", "MaxSize": "2"},
                "UpdatePolicy": {
                    "AutoScalingInstanceRefresh": refresh,
                    "AutoScalingScheduledAction": {"IgnoreUnmodifiedGroupSizeProperties": True},  # replaces nothing
                },
            }
        }
    }
    clients = {"cloudformation": _CloudFormation(template, {"Group": "group-1"}), "autoscaling": _AutoScaling()}
    (gap,) = describe_stack(clients.__getitem__, "Capacity").gaps
    assert gap.attribute == "UpdatePolicy" and gap.detail.startswith(
        "UpdatePolicy.AutoScalingInstanceRefresh (MaxHealthyPercentage 100, MinHealthyPercentage 50, SkipMatching "
        "true) not exercised: CloudFormation applies it when a stack update changes the group"
    )


def _report(name: str = "Serving", gaps: int = 0, status: str = "CREATE_COMPLETE") -> StackReport:
    return StackReport(
        name=name,
        status=status,
        resources_declared=66,
        resources_created=61,
        items=[ReportItem("cluster", "serving-cluster", ("ACTIVE",))],
        gaps=[Gap("AWS::ECS::CapacityProvider", f"Provider{i}", "resource", "not created") for i in range(gaps)]
        + [Gap("AWS::ECS::Service", "Svc", "strategy", "deploymentConfiguration.strategy not kept")],
        services=[ServiceState("svc", "serving-cluster", desired=3, running=0, placed=0)],
        clusters=["serving-cluster"],
    )


def test_the_report_leads_with_one_result_line_and_one_gap_line_per_stack() -> None:
    text = format_reports([_report("A", gaps=4), _report("B", gaps=40)], endpoint="the endpoint at http://x")
    lines = text.splitlines()
    assert lines[0] == "What each stack created, read back from the endpoint at http://x:"
    assert lines[1].startswith("A: created (CREATE_COMPLETE); 61 of 66 resources; 1 service, 0 of 3 tasks running")
    assert lines[2].startswith("  not created or not kept by the endpoint: 4 not created (ECS::CapacityProvider x4)")
    assert "1 properties not kept (ECS::Service rollout)" in lines[2]
    assert lines[3].startswith("B: created") and "40 not created" in lines[4]
    assert len(lines) == 6 and "--verbose" in lines[-1]
    assert "Provider0" not in text, "each gap is listed only with verbose"


def test_verbose_adds_every_resource_and_every_gap() -> None:
    text = format_reports([_report(gaps=3)], verbose=True)
    assert "  cluster          serving-cluster: ACTIVE" in text
    assert "    AWS::ECS::CapacityProvider Provider2: not created" in text
    assert "not created or not kept by AWS:" in text


def test_a_failed_stack_says_so_and_points_at_its_events() -> None:
    line = format_reports([_report(status="ROLLBACK_COMPLETE")]).splitlines()[1]
    assert line.startswith("Serving: FAILED (ROLLBACK_COMPLETE)")
    assert "describe-stack-events --stack-name Serving" in line


def test_the_summary_names_the_most_frequent_gaps_and_counts_the_rest() -> None:
    kinds = [f"AWS::Kind{i}::Thing" for i in range(9)]
    report = StackReport("S", "CREATE_COMPLETE", 20, 11, gaps=[Gap(k, k, "resource", "not created") for k in kinds])
    summary = gap_summary(report, "AWS")
    assert summary.count("Kind") == 4 and "5 more kinds" in summary and "1 more kind," not in summary
    assert "\n" not in summary


@pytest.mark.parametrize(
    ("url", "region", "label"),
    [
        ("https://cloudformation.us-east-1.amazonaws.com", "us-east-1", "AWS (us-east-1)"),
        ("https://cloudformation.cn-north-1.amazonaws.com.cn", "cn-north-1", "AWS (cn-north-1)"),
        ("http://127.0.0.1:5000", "us-east-1", "the endpoint at http://127.0.0.1:5000"),
        (
            "http://localhost.amazonaws.com.evil:80",
            "us-east-1",
            "the endpoint at http://localhost.amazonaws.com.evil:80",
        ),
    ],
)
def test_the_heading_names_aws_only_for_an_aws_endpoint(url: str, region: str, label: str) -> None:
    assert endpoint_label(url, region) == label
    heading = format_reports([_report()], endpoint=endpoint_label(url, region)).splitlines()[0]
    assert heading.endswith(f"read back from {label}:")
    if not label.startswith("AWS"):
        assert "by AWS" not in format_reports([_report(gaps=2)], endpoint=label, verbose=True)


def test_job_definition_device_counts_say_what_they_count() -> None:
    neuron = [{"hostPath": f"/dev/neuron{i}"} for i in range(16)]
    efa = [{"hostPath": f"/dev/infiniband/uverbs{i}"} for i in range(8)]
    definition = {
        "jobDefinitionName": "train",
        "type": "multinode",
        "nodeProperties": {
            "numNodes": 2,
            "nodeRangeProperties": [{"targetNodes": "0:", "container": {"linuxParameters": {"devices": neuron + efa}}}],
        },
    }

    class Batch:
        def describe_job_definitions(self, **_: Any) -> dict[str, Any]:
            return {"jobDefinitions": [definition]}

    template = {"Resources": {"Job": {"Type": "AWS::Batch::JobDefinition", "Properties": {"Type": "multinode"}}}}
    clients = {"cloudformation": _CloudFormation(template, {"Job": "arn:job"}), "batch": Batch()}
    (item, _) = describe_stack(clients.__getitem__, "Training").items
    assert item.details == ("multinode, 2 node(s)", "nodes 0:: 16 Neuron + 8 EFA devices")


# --- What the local endpoint prints around the report ------------------------------------------------------------


def _fake_cdk(tmp_path: Any, lines: list[str], status: int) -> str:
    script = tmp_path / "cdk"
    body = "".join(f"print({line!r})\n" for line in lines)
    script.write_text(f"#!{sys.executable}\n{body}raise SystemExit({status})\n")
    script.chmod(0o755)
    return str(script)


CDK_OUTPUT = [
    "NeuronInferenceEc2: creating CloudFormation changeset...",
    "NeuronInferenceEc2 |  1/64 | 3:25:35 AM | CREATE_COMPLETE | AWS::CloudFormation::Stack | NeuronInferenceEc2",
    "",
    " \u2705  NeuronInferenceEc2",
    "Stack ARN:",
]


def test_by_default_only_the_cdk_cli_s_outcome_lines_are_printed(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from neuron_constructs.local_endpoint.cdk_cli import run_cdk_summarised

    run_cdk_summarised(_fake_cdk(tmp_path, CDK_OUTPUT, 0), ["deploy"], env=os.environ, cwd=tmp_path)
    out, err = capsys.readouterr()
    assert out.splitlines() == [" \u2705  NeuronInferenceEc2"] and err == ""


def test_a_failing_cdk_command_prints_the_end_of_its_output_and_raises(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from neuron_constructs.local_endpoint.cdk_cli import run_cdk_summarised
    from neuron_constructs.local_endpoint.endpoint import LocalEndpointError

    failing = ["noise"] * 500 + ["\u274c  LlmService failed to deploy", "InvalidPermission.Duplicate: rule exists"]
    with pytest.raises(LocalEndpointError, match=r"deploy exited with status 1\."):
        run_cdk_summarised(_fake_cdk(tmp_path, failing, 1), ["deploy"], env=os.environ, cwd=tmp_path)
    out, err = capsys.readouterr()
    assert out.splitlines() == ["\u274c  LlmService failed to deploy"]
    assert err.endswith("InvalidPermission.Duplicate: rule exists\n") and err.count("\n") == 400


def test_synth_warnings_are_one_line_each_for_the_deployed_stacks_only(tmp_path: Any) -> None:
    from neuron_constructs.local_endpoint.report import format_synth_warnings, synth_warnings

    text = "{0}: neuron-monitor runs privileged, by its tag. [NEURON116: no digest] Fix: pin it\nmore"
    for stack in ("A", "B", "C"):
        path = f"/{stack}/Neuron/Monitoring"
        entries = {path: [{"type": "aws:cdk:warning", "data": text.format(path.strip("/"))}]}
        (tmp_path / f"{stack}.metadata.json").write_text(json.dumps(entries))
    artifacts = {
        stack: {"type": "aws:cloudformation:stack", "additionalMetadataFile": f"{stack}.metadata.json"}
        for stack in ("A", "B", "C")
    }
    (tmp_path / "manifest.json").write_text(json.dumps({"artifacts": artifacts}))
    warnings = synth_warnings(tmp_path, ["A", "B"])
    assert warnings == {
        "neuron-monitor runs privileged, by its tag. [NEURON116: no digest] Fix: pin it": [
            "A/Neuron/Monitoring",
            "B/Neuron/Monitoring",
        ]
    }
    assert format_synth_warnings(warnings) == [
        "  NEURON116: neuron-monitor runs privileged, by its tag. (A/Neuron/Monitoring and 1 more)"
    ]
