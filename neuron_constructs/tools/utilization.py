"""Each instance's and each task's NeuronCore utilization from CloudWatch, for ``neuron-ecs inspect --metrics``.

Reads what the monitoring daemon publishes (:mod:`neuron_constructs.programs.metric_publisher`): the latest 1-minute
``NeuronCoreUtilization`` average of each instance, and of each model on each instance (a task's figure: the model
its Neuron containers are tagged with, on the instance it runs on; copies of one model on one instance share it),
with one ``GetMetricData`` call per 500 series (the API's limit of queries per call) and no other call.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from neuron_constructs.programs.metric_publisher import (
    CLUSTER_DIMENSION,
    INSTANCE_DIMENSION,
    MODEL_DIMENSION,
    NAMESPACE,
)

__all__ = ["QUERIES_PER_CALL", "cluster_name_of", "model_utilization", "neuroncore_utilization"]

QUERIES_PER_CALL = 500
"""GetMetricData takes at most 500 metric queries per call (CloudWatch API reference: GetMetricData)."""


def cluster_name_of(cluster: str) -> str:
    """The cluster name from a name or an ARN (``arn:...:cluster/<name>``): the metrics' ``ClusterName``."""
    return cluster.rsplit("/", 1)[-1] if cluster.startswith("arn:") else cluster


def _latest(
    cloudwatch: Any,
    series: Sequence[tuple[tuple[str, str], ...]],
    *,
    minutes: int,
    now: datetime.datetime | None,
) -> list[float | None]:
    """The latest 1-minute NeuronCoreUtilization average of each series (its dimensions) in the last ``minutes``."""
    end = now or datetime.datetime.now(datetime.UTC)
    start = end - datetime.timedelta(minutes=minutes)
    found: list[float | None] = [None] * len(series)
    for offset in range(0, len(series), QUERIES_PER_CALL):
        batch = series[offset : offset + QUERIES_PER_CALL]
        queries = [
            {
                "Id": f"m{n}",
                "MetricStat": {
                    "Metric": {
                        "Namespace": NAMESPACE,
                        "MetricName": "NeuronCoreUtilization",
                        "Dimensions": [{"Name": name, "Value": value} for name, value in dimensions],
                    },
                    "Period": 60,
                    "Stat": "Average",
                },
                "ReturnData": True,
            }
            for n, dimensions in enumerate(batch)
        ]
        response = cloudwatch.get_metric_data(
            MetricDataQueries=queries, StartTime=start, EndTime=end, ScanBy="TimestampDescending"
        )
        for result in response.get("MetricDataResults", []):
            index = int(str(result["Id"])[1:])
            values = result.get("Values") or []
            if values:
                found[offset + index] = round(float(values[0]), 1)
    return found


def neuroncore_utilization(
    cloudwatch: Any,
    cluster: str,
    instance_ids: Sequence[str],
    *,
    minutes: int = 10,
    now: datetime.datetime | None = None,
) -> dict[str, float | None]:
    """Instance id -> its latest 1-minute NeuronCore utilization (percent) in the last ``minutes``, or ``None`` when
    the daemon published nothing for it in that time."""
    unique = list(dict.fromkeys(instance_ids))
    name = cluster_name_of(cluster)
    series = [((CLUSTER_DIMENSION, name), (INSTANCE_DIMENSION, i)) for i in unique]
    return dict(zip(unique, _latest(cloudwatch, series, minutes=minutes, now=now), strict=True))


def model_utilization(
    cloudwatch: Any,
    cluster: str,
    placements: Sequence[tuple[str, str]],
    *,
    minutes: int = 10,
    now: datetime.datetime | None = None,
) -> dict[tuple[str, str], float | None]:
    """(model, instance id) -> the model's latest 1-minute NeuronCore utilization on that instance (percent: the
    average over the cores its tasks there hold) in the last ``minutes``, or ``None`` when nothing was published."""
    unique = list(dict.fromkeys(placements))
    name = cluster_name_of(cluster)
    series = [((CLUSTER_DIMENSION, name), (MODEL_DIMENSION, m), (INSTANCE_DIMENSION, i)) for m, i in unique]
    return dict(zip(unique, _latest(cloudwatch, series, minutes=minutes, now=now), strict=True))
