"""docs/warm-starts.md: its timeline is what ``neuron-ecs plan --startup`` prints for the page's own code, and its
costs are what :func:`~neuron_constructs.knowledge.compile_cost.compile_cost` gives at the page's example rates."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from neuron_constructs.knowledge.compile_cost import compile_cost

RATES = {"instance_hourly": 40.0, "vcpu_hourly": 0.04048, "gib_hourly": 0.004445}
"""The page's example rates: a trn2.48xlarge-hour, and AWS Fargate's vCPU-hour and GB-hour."""


@pytest.mark.e2e
def test_the_page_s_timeline_is_what_plan_startup_prints(tmp_path: Path) -> None:
    """The page's three stacks (cold, warm pool, precompiled), built from its own code and synthesized."""
    from aws_cdk import App, Duration, Stack
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs import (
        CompileCache,
        ManualNeuronTaskDefinition,
        NeuronCluster,
        NeuronService,
        Precompile,
        Startup,
        WarmPool,
    )
    from neuron_constructs.knowledge.container_images import VLLM_TRN2
    from neuron_constructs.tools.cli import main

    page = (Path(__file__).resolve().parent.parent / "docs" / "warm-starts.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    sample = page.split("$ .venv/bin/neuron-ecs plan --startup cdk.out\n", 1)[1].split("```", 1)[0]
    app = App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"))
    namespace: dict[str, Any] = {
        "Any": Any,
        "app": app,
        "image": ecs.ContainerImage.from_registry(VLLM_TRN2.uri),
        "command": [
            "vllm",
            "serve",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--tensor-parallel-size",
            "4",
            "--port",
            "8000",
        ],
        "port": [ecs.PortMapping(container_port=8000, host_port=8000)],
        "Duration": Duration,
        "Stack": Stack,
        "CompileCache": CompileCache,
        "ManualNeuronTaskDefinition": ManualNeuronTaskDefinition,
        "NeuronCluster": NeuronCluster,
        "NeuronService": NeuronService,
        "Precompile": Precompile,
        "Startup": Startup,
        "WarmPool": WarmPool,
    }
    exec(code, namespace)
    app.synth()
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", str(tmp_path / "cdk.out"), "--startup"], stdout=out, stderr=err)
    assert (status, out.getvalue(), err.getvalue()) == (0, sample, "")
    # The summary table's "to serve" row is the plan's, model by model.
    served = dict(re.findall(r"^(\w+)/Service on .*?\n(?:  .*\n)*?  to serve    (\d+) min", sample, re.M))
    row = next(line for line in page.splitlines() if line.startswith("| to serve |"))
    assert row == f"| to serve | {served['Cold']} min | {served['WarmPool']} min | {served['Precompiled']} min |"


def test_the_page_s_costs_are_what_compile_cost_gives() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "warm-starts.md").read_text()
    for copies in (1, 4):
        cost = compile_cost(
            compile_minutes=40,
            copies=copies,
            chips_per_copy=16,
            chips_per_instance=16,
            cpu_compile_minutes=60,
            vcpus=16,
            memory_gib=64,
            **RATES,
        )
        row = (
            f"| {copies} | {cost.neuron_instance_hours:.2f} instance-hours, ${cost.neuron_dollars:.2f} | "
            f"${cost.cpu_dollars:.2f} | ${cost.saved_dollars:.2f} |"
        )
        assert row in page
    assert "$40.00 a trn2.48xlarge-hour" in page and "$0.04048 per\nvCPU-hour and $0.004445 per GB-hour" in page
    assert "example rates, not quoted prices" in page


def test_a_copy_on_a_share_of_an_instance_pays_its_share_and_the_cpu_job_does_not_grow_with_copies() -> None:
    one = compile_cost(
        compile_minutes=30,
        copies=1,
        chips_per_copy=4,
        chips_per_instance=16,
        cpu_compile_minutes=60,
        vcpus=8,
        memory_gib=32,
        **RATES,
    )
    eight = compile_cost(
        compile_minutes=30,
        copies=8,
        chips_per_copy=4,
        chips_per_instance=16,
        cpu_compile_minutes=60,
        vcpus=8,
        memory_gib=32,
        **RATES,
    )
    assert one.neuron_instance_hours == pytest.approx(0.5 * 4 / 16)
    assert eight.neuron_instance_hours == pytest.approx(8 * one.neuron_instance_hours)
    assert eight.cpu_dollars == one.cpu_dollars == pytest.approx(8 * 0.04048 + 32 * 0.004445)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"copies": 0}, "copies must be a whole number of 1 or more"),
        ({"copies": 1.5}, "copies must be a whole number"),
        ({"chips_per_copy": 17}, "more than the instance's 16"),
        ({"compile_minutes": 0}, "compile_minutes must be more than 0"),
        ({"compile_minutes": float("nan")}, "compile_minutes must be a finite number"),
        ({"instance_hourly": -1}, "instance_hourly must be 0 or more"),
        ({"vcpus": True}, "vcpus must be a finite number"),
    ],
)
def test_compile_cost_refuses_what_is_not_a_count_or_a_rate(change: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {
        "compile_minutes": 40,
        "copies": 1,
        "chips_per_copy": 16,
        "chips_per_instance": 16,
        "cpu_compile_minutes": 60,
        "vcpus": 16,
        "memory_gib": 64,
        **RATES,
        **change,
    }
    with pytest.raises(ValueError, match=re.escape(message)):
        compile_cost(**arguments)
