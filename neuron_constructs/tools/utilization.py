"""Each instance's NeuronCore utilization from CloudWatch, for ``neuron-ecs inspect --metrics``.

Reads what the monitoring daemon publishes (:mod:`neuron_constructs.knowledge.metrics`): the
``NeuronCoreUtilization`` average of each instance over the last minutes, with one
``GetMetricData`` call per 500 instances (the API's limit of queries per call) and no other call.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence
from typing import Any

from neuron_constructs.knowledge.metrics import CLUSTER_DIMENSION, INSTANCE_DIMENSION, NAMESPACE

__all__ = ["QUERIES_PER_CALL", "cluster_name_of", "neuroncore_utilization"]

QUERIES_PER_CALL = 500
"""GetMetricData takes at most 500 metric queries per call (CloudWatch API reference: GetMetricData)."""


def cluster_name_of(cluster: str) -> str:
    """The cluster name from a name or an ARN (``arn:...:cluster/<name>``): the metrics' ``ClusterName``."""
    return cluster.rsplit("/", 1)[-1] if cluster.startswith("arn:") else cluster


def _batches(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), QUERIES_PER_CALL):
        yield items[start : start + QUERIES_PER_CALL]


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
    end = now or datetime.datetime.now(datetime.UTC)
    start = end - datetime.timedelta(minutes=minutes)
    found: dict[str, float | None] = {i: None for i in instance_ids}
    unique = list(dict.fromkeys(instance_ids))
    for batch in _batches(unique):
        queries = [
            {
                "Id": f"m{n}",
                "MetricStat": {
                    "Metric": {
                        "Namespace": NAMESPACE,
                        "MetricName": "NeuronCoreUtilization",
                        "Dimensions": [
                            {"Name": CLUSTER_DIMENSION, "Value": cluster_name_of(cluster)},
                            {"Name": INSTANCE_DIMENSION, "Value": instance},
                        ],
                    },
                    "Period": 60,
                    "Stat": "Average",
                },
                "ReturnData": True,
            }
            for n, instance in enumerate(batch)
        ]
        response = cloudwatch.get_metric_data(
            MetricDataQueries=queries, StartTime=start, EndTime=end, ScanBy="TimestampDescending"
        )
        for result in response.get("MetricDataResults", []):
            index = int(str(result["Id"])[1:])
            values = result.get("Values") or []
            if values:
                found[batch[index]] = round(float(values[0]), 1)
    return found
