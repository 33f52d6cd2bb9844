"""``Startup``: how long each step of a new copy's start takes, as the user measured it.

Given to ``add_neuron_container(startup=)`` (or ``NeuronFleet.add_model(startup=)``,
``SlicedNeuronService(startup=)``), it is recorded in the task definition's metadata
(:data:`~neuron_constructs.knowledge.startup.STARTUP_KEY`) for ``neuron-ecs plan --startup``, which shows each step
with its duration or "measure it", and for the template check of NEURON167, which warns when a copy that compiles at
start has a health check grace period shorter than the stated compile and load. No source gives these durations for a
given model (:mod:`neuron_constructs.knowledge.startup`): the library never assumes one.
"""

from __future__ import annotations

from aws_cdk import Duration

from neuron_constructs.base.arguments import is_token, seconds_of
from neuron_constructs.knowledge import rules

__all__ = ["Startup"]

MAXIMUM_STEP_S = 2_147_483_647
"""The longest step stated: the longest health check grace period ECS takes (about 68 years)."""

_NAMES = {
    "instance": "instance",
    "image": "image_pull",
    "weights": "weights",
    "compile": "compile",
    "cacheFetch": "cache_fetch",
    "load": "load",
}


class Startup:
    """The durations of a new copy's start that you measured, each a ``Duration`` (default unknown: shown as
    "measure it" by ``neuron-ecs plan --startup``).

    ``instance``: from the scale-out to the instance registered with the cluster; ``image_pull``: the pull of the
    model's image; ``weights``: the copy of its ``ModelArtifacts``; ``compile``: the compile of every graph on a cache
    miss (vLLM Neuron publishes it per bucket as ``compilation_time_seconds``); ``cache_fetch``: the fetch of the
    compiled graphs from the compile cache on a hit; ``load``: the model load until the server answers its health check
    (``model_load_time_seconds``).

    Refused: a value that is not a ``Duration`` (NEURON026), one known only at deploy time (NEURON028), zero or longer
    than 2,147,483,647 s (NEURON027).
    """

    def __init__(
        self,
        *,
        instance: Duration | None = None,
        image_pull: Duration | None = None,
        weights: Duration | None = None,
        compile: Duration | None = None,
        cache_fetch: Duration | None = None,
        load: Duration | None = None,
    ) -> None:
        given = {
            "instance": instance,
            "image": image_pull,
            "weights": weights,
            "compile": compile,
            "cacheFetch": cache_fetch,
            "load": load,
        }
        self.seconds: dict[str, float] = {}
        """The stated durations in seconds, by step (:data:`~neuron_constructs.knowledge.startup.STEPS`)."""
        for step, duration in given.items():
            if duration is None:
                continue
            name = _NAMES[step]
            if not isinstance(duration, Duration):
                raise rules.WRONG_TYPE.error(
                    "Startup", f"{name}={duration!r}", expected=f"{name}=Duration.minutes(...) or leave it unset"
                )
            seconds = seconds_of(duration)
            if seconds is None or is_token(seconds):
                raise rules.TOKEN_NOT_LITERAL.error("Startup", f"{name} is a CDK token", name=name)
            if not 0 < seconds <= MAXIMUM_STEP_S:
                raise rules.OUT_OF_RANGE.error(
                    "Startup",
                    f"{name}={duration.to_human_string()}",
                    name=name,
                    minimum="more than 0 s",
                    maximum="2,147,483,647 s",
                )
            self.seconds[step] = seconds

    def __repr__(self) -> str:
        stated = ", ".join(f"{_NAMES[step]}={seconds:g} s" for step, seconds in self.seconds.items())
        return f"Startup({stated})"
