"""What compiling a model costs where it is compiled: on the Neuron instances that serve it, once per copy that starts
without the graphs, or once per revision on CPU (``Precompile``), at rates the caller gives.

A copy that compiles at its start holds its Neuron devices idle for the compile: the instance-hours it pays are its
share of the instance (its chips of the instance's) for the compile's duration. A precompile pays the CPU job's
vCPU-hours and GiB-hours (AWS Fargate bills vCPU and memory per second; AWS Fargate pricing) for the same graphs once.
No rate is built in: prices change by Region and by purchase option, so every rate is the caller's, and the docs page
labels the rates it shows as examples.

Plain Python, no AWS CDK.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["CompileCost", "compile_cost"]


@dataclass(frozen=True)
class CompileCost:
    """One revision's compile, on the Neuron instances and on CPU, in hours and dollars."""

    neuron_instance_hours: float
    """The instance-hours the starting copies hold idle while each compiles (their share of the instance)."""
    neuron_dollars: float
    cpu_dollars: float
    """The precompile job: vCPU-hours and GiB-hours of the CPU compile, at the given rates."""

    @property
    def saved_dollars(self) -> float:
        """What a precompile saves on this revision: the Neuron cost less the CPU job's (negative: it costs more)."""
        return self.neuron_dollars - self.cpu_dollars


def _positive(name: str, value: float, *, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    if value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be {'0 or more' if zero else 'more than 0'}, not {value!r}")
    return float(value)


def compile_cost(
    *,
    compile_minutes: float,
    copies: int,
    chips_per_copy: int,
    chips_per_instance: int,
    instance_hourly: float,
    cpu_compile_minutes: float,
    vcpus: float,
    memory_gib: float,
    vcpu_hourly: float,
    gib_hourly: float,
) -> CompileCost:
    """The cost of one revision's compile: ``copies`` copies of ``chips_per_copy`` chips each compile for
    ``compile_minutes`` on instances of ``chips_per_instance`` chips at ``instance_hourly`` dollars, against one CPU job
    of ``vcpus`` and ``memory_gib`` for ``cpu_compile_minutes`` at ``vcpu_hourly`` and ``gib_hourly``. A ``ValueError``
    names an argument that is not a finite positive number (a count that is not a whole one, more chips per copy than
    the instance has)."""
    for name, value in (
        ("copies", copies),
        ("chips_per_copy", chips_per_copy),
        ("chips_per_instance", chips_per_instance),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of 1 or more, not {value!r}")
    if chips_per_copy > chips_per_instance:
        raise ValueError(f"chips_per_copy {chips_per_copy} is more than the instance's {chips_per_instance}")
    minutes = _positive("compile_minutes", compile_minutes)
    hours = copies * minutes / 60 * chips_per_copy / chips_per_instance
    cpu_hours = _positive("cpu_compile_minutes", cpu_compile_minutes) / 60
    cpu = cpu_hours * (
        _positive("vcpus", vcpus) * _positive("vcpu_hourly", vcpu_hourly, zero=True)
        + _positive("memory_gib", memory_gib) * _positive("gib_hourly", gib_hourly, zero=True)
    )
    return CompileCost(
        neuron_instance_hours=hours,
        neuron_dollars=hours * _positive("instance_hourly", instance_hourly, zero=True),
        cpu_dollars=cpu,
    )
