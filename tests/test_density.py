"""The physical limit, synthesized: one-core models fill an inf2.48xlarge (24), a trn1.32xlarge (32), an
inf1.24xlarge (64) and a trn2.48xlarge at LNC=2 (64); one more copy is refused; ``neuron-ecs lint`` passes each
cloud assembly and fails it once two copies name one core.

End to end (``make test-e2e``): the four fleets are 184 ECS services, too many to synthesize in the everyday loop.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs

from neuron_constructs import NeuronCluster, NeuronConfigurationError, NeuronFleet, NeuronInstanceType
from neuron_constructs.tools.cli import main

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("density")]

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
LIMITS = {
    "inf2.48xlarge": (None, 24),
    "trn1.32xlarge": (None, 32),
    "inf1.24xlarge": (None, 64),
    "trn2.48xlarge": (2, 64),
}


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cloud assembly with one stack per type, each a fleet of one-core copies at the type's limit."""
    out = tmp_path_factory.mktemp("density")
    app = App(analytics_reporting=False, outdir=str(out))
    for name, (lnc, limit) in LIMITS.items():
        stack = Stack(app, f"Density-{name.replace('.', '-')}")
        cluster = NeuronCluster(stack, "Neuron", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
        cluster.add_ec2_capacity("Capacity", instance_type=name, max_capacity=2, lnc=lnc)
        fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type=name, lnc=lnc)
        model = fleet.add_model("Embedding", cores_per_task=1, copies=limit, image=IMAGE)
        assert len(model.task_definitions) == limit == NeuronInstanceType.of(name).cores(lnc)
        with pytest.raises(NeuronConfigurationError, match=r"1 copy of 1 NeuronCore do not fit.*NEURON046"):
            fleet.add_model("OneMore", cores_per_task=1, image=IMAGE)
    app.synth()
    return out


def _lint(path: Path) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    status = main(["lint", str(path)], stdout=stdout, stderr=stderr)
    return status, stdout.getvalue() + stderr.getvalue()


def _templates(assembly: Path) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(assembly.glob("Density-*.template.json"))}


def test_every_limit_fleet_names_each_core_once(assembly: Path) -> None:
    for name, template in _templates(assembly).items():
        visible = [
            e["Value"]
            for r in template["Resources"].values()
            if r["Type"] == "AWS::ECS::TaskDefinition"
            for e in r["Properties"]["ContainerDefinitions"][0].get("Environment", [])
            if e["Name"] == "NEURON_RT_VISIBLE_CORES"
        ]
        assert sorted(map(int, visible)) == list(range(len(visible))) and len(visible) in (24, 32, 64), name


def test_lint_passes_the_limit_fleets_and_fails_a_shared_core(assembly: Path, tmp_path: Path) -> None:
    status, report = _lint(assembly)
    assert status == 0, report
    inf2 = assembly / "Density-inf2-48xlarge.template.json"
    template = json.loads(inf2.read_text())
    definitions = [r for r in template["Resources"].values() if r["Type"] == "AWS::ECS::TaskDefinition"]
    for definition in definitions:  # the copy on core 1 now names core 0 too: two tasks on one core
        for variable in definition["Properties"]["ContainerDefinitions"][0].get("Environment", []):
            if variable["Name"] == "NEURON_RT_VISIBLE_CORES" and variable["Value"] == "1":
                variable["Value"] = "0-1"
    broken = tmp_path / "broken.template.json"
    broken.write_text(json.dumps(template))
    status, report = _lint(broken)
    assert status == 3 and "NEURON023" in report and "both hold NeuronCore 0 of /dev/neuron0" in report, report


def test_plan_draws_every_core_of_the_limit_fleets_held_once_and_none_idle(assembly: Path) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    status = main(["plan", str(assembly), "--json"], stdout=stdout, stderr=stderr)
    assert status == 0, stderr.getvalue()
    document = json.loads(stdout.getvalue())
    assert not document["unreadable"]
    drawn = {i["instance_type"]: i for i in document["instances"]}
    assert set(drawn) == set(LIMITS)
    for name, (_lnc, limit) in LIMITS.items():
        assert len(drawn[name]["holders"]) == limit, name
        assert drawn[name]["idle_cores"] == [] and not drawn[name]["held_twice"], name
        assert drawn[name]["cells"].count(".") == 0 and len(drawn[name]["cells"]) == limit, name
