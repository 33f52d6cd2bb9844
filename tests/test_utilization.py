"""``neuron-ecs inspect --metrics``: each instance's NeuronCore utilization from CloudWatch, one GetMetricData call per
500 instances (moto's CloudWatch)."""

from __future__ import annotations

import datetime
import io
import json

import boto3
import pytest
from moto_fleet import TaskSpec, build_fleet

from neuron_constructs.programs.metric_publisher import NAMESPACE
from neuron_constructs.tools.cli import EXIT_OK, main
from neuron_constructs.tools.inspection import count_api_calls
from neuron_constructs.tools.utilization import (
    QUERIES_PER_CALL,
    cluster_name_of,
    model_utilization,
    neuroncore_utilization,
)

pytestmark = pytest.mark.xdist_group("moto")  # one worker loads moto

REGION = "us-east-1"


def _publish(session: boto3.Session, cluster: str, instance: str, value: float, *, model: str | None = None) -> None:
    """What the daemon's EMF line becomes in CloudWatch: the metric with the cluster and instance dimensions (and the
    model's, for a model's line)."""
    dimensions = {"ClusterName": cluster, **({"Model": model} if model else {}), "InstanceId": instance}
    session.client("cloudwatch").put_metric_data(
        Namespace=NAMESPACE,
        MetricData=[
            {
                "MetricName": "NeuronCoreUtilization",
                "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
                "Value": value,
                "Unit": "Percent",
                "Timestamp": datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1),
            }
        ],
    )


def test_one_call_per_500_instances_and_none_for_instances_that_published_nothing(aws: boto3.Session) -> None:
    _publish(aws, "neuron", "i-0000", 37.5)
    _publish(aws, "neuron", "i-0999", 80.0)
    _publish(aws, "other", "i-0001", 99.0)  # another cluster's instance: not this cluster's metric
    ids = [f"i-{n:04d}" for n in range(1001)]
    cloudwatch = aws.client("cloudwatch")
    with count_api_calls(cloudwatch) as calls:
        found = neuroncore_utilization(cloudwatch, "arn:aws:ecs:us-east-1:123456789012:cluster/neuron", ids)
    assert calls == {"GetMetricData": -(-1001 // QUERIES_PER_CALL)} == {"GetMetricData": 3}
    assert (found["i-0000"], found["i-0999"], found["i-0001"], found["i-1000"]) == (37.5, 80.0, None, None)
    assert len(found) == 1001


def test_cluster_names_come_from_names_or_arns() -> None:
    assert cluster_name_of("neuron") == "neuron"
    assert cluster_name_of("arn:aws:ecs:us-east-1:123456789012:cluster/neuron") == "neuron"


def test_inspect_metrics_adds_utilization_to_the_map_and_the_json(aws: boto3.Session) -> None:
    fleet = build_fleet(aws, cluster="neuron", instance_types=["inf2.xlarge", "inf2.xlarge"])
    _publish(aws, "neuron", fleet.ec2_instance_ids[0], 42.0)
    out = io.StringIO()
    assert main(["inspect", "--cluster", "neuron", "--metrics"], stdout=out, stderr=io.StringIO()) == EXIT_OK
    text = out.getvalue()
    assert f"{fleet.ec2_instance_ids[0]} (inf2.xlarge): 1 chip, 2 cores, NeuronCore utilization 42.0 %" in text
    assert f"{fleet.ec2_instance_ids[1]} (inf2.xlarge): 1 chip, 2 cores, NeuronCore utilization not published" in text
    out = io.StringIO()
    main(["inspect", "--cluster", "neuron", "--metrics", "--json"], stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["neuroncore_utilization"] == {
        fleet.ec2_instance_ids[0]: 42.0,
        fleet.ec2_instance_ids[1]: None,
    }


def test_a_model_s_utilization_is_read_per_instance_in_one_call_per_500_series(aws: boto3.Session) -> None:
    _publish(aws, "neuron", "i-1", 91.0, model="llama")
    _publish(aws, "neuron", "i-1", 12.0, model="embed")
    _publish(aws, "neuron", "i-1", 50.0)  # the instance's own figure is not a model's
    placements = [("llama", "i-1"), ("embed", "i-1"), ("llama", "i-2"), *((f"m{n}", "i-3") for n in range(600))]
    cloudwatch = aws.client("cloudwatch")
    with count_api_calls(cloudwatch) as calls:
        found = model_utilization(cloudwatch, "neuron", placements)
    assert calls == {"GetMetricData": 2}
    assert (found[("llama", "i-1")], found[("embed", "i-1")], found[("llama", "i-2")]) == (91.0, 12.0, None)


def test_inspect_metrics_shows_each_task_s_model_and_its_utilization(aws: boto3.Session) -> None:
    fleet = build_fleet(
        aws,
        cluster="neuron",
        instance_types=["inf2.xlarge", "inf2.xlarge"],
        tasks=[
            TaskSpec("llama", on_instances=[0], mapped_devices=[0], visible_cores="0", model="Team/Llama"),
            TaskSpec("embed", on_instances=[0, 1], mapped_devices=[0], visible_cores="1", model="Team/Embed"),
        ],
    )
    first, second = fleet.ec2_instance_ids
    _publish(aws, "neuron", first, 88.5, model="Team/Llama")
    _publish(aws, "neuron", first, 20.0, model="Team/Embed")
    _publish(aws, "neuron", second, 35.0, model="Team/Llama")  # no Llama task runs there: not shown
    out = io.StringIO()
    main(["inspect", "--cluster", "neuron", "--metrics"], stdout=out, stderr=io.StringIO())
    rows = [line.split() for line in out.getvalue().splitlines()]
    header = next(r for r in rows if r[:1] == ["TASK"])
    assert header[-2:] == ["UTIL", "%"] and "MODEL" in header
    shown = {(r[2], r[-2], r[-1]) for r in rows if len(r) > 6 and r[-2].startswith("Team/")}
    assert shown == {(first, "Team/Llama", "88.5"), (first, "Team/Embed", "20.0"), (second, "Team/Embed", "-")}
    out = io.StringIO()
    main(["inspect", "--cluster", "neuron", "--metrics", "--json"], stdout=out, stderr=io.StringIO())
    document = json.loads(out.getvalue())
    by_task = document["task_neuroncore_utilization"]
    models = {t["arn"]: t["containers"][0]["model"] for t in document["tasks"]}
    on = {t["arn"]: t["container_instance_arn"] for t in document["tasks"]}
    assert sorted(by_task.values(), key=str) == sorted([88.5, 20.0, None], key=str)
    assert {models[arn] for arn, value in by_task.items() if value == 88.5} == {"Team/Llama"}
    assert len(set(on.values())) == 2
