"""The container health check of a model server: a Neuron start takes longer than any start period ECS accepts.

ECS takes a container health check ``startPeriod`` of 0 to 300 s; a Neuron model server answers only after it has
downloaded the model, compiled it (or loaded it from a cache) and loaded it onto the chips, often longer. The service's
health check grace period (``MODEL_START_GRACE_PERIOD`` of :mod:`neuron_constructs.serving.listeners`) covers the rest
of the start.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_ecs as ecs

from neuron_constructs.knowledge.vllm_server import HEALTH_PATH

__all__ = ["CONTAINER_START_PERIOD", "model_server_health_check"]

CONTAINER_START_PERIOD = Duration.seconds(300)
"""The longest ``startPeriod`` ECS accepts for a container health check (0-300 s)."""


def model_server_health_check(*, port: int, path: str = HEALTH_PATH) -> ecs.HealthCheck:
    """A container health check for a model server on ``port``: ``GET http://localhost:<port><path>`` with
    Python's standard library (every Neuron serving image has Python; not every one has curl), every 30 s,
    10 s to answer, 3 retries, and a start period of 300 s, the most ECS accepts: the service's health check
    grace period covers the rest of a Neuron start."""
    probe = f"import urllib.request; urllib.request.urlopen('http://localhost:{port}{path}', timeout=8)"
    return ecs.HealthCheck(
        command=["CMD", "python3", "-c", probe],
        interval=Duration.seconds(30),
        timeout=Duration.seconds(10),
        retries=3,
        start_period=CONTAINER_START_PERIOD,
    )
