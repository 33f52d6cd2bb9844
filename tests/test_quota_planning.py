"""``neuron-ecs plan --quotas``: the EC2 vCPU quotas an app's Neuron capacity needs, per family and purchase option,
at its maximum and at a rollout's peak, read from a synthesized app with every kind of Neuron capacity."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from neuron_constructs.knowledge.quotas import QUOTAS, quota_family, quota_of
from neuron_constructs.tools.cli import main
from neuron_constructs.tools.quota_planning import quota_templates

pytestmark = pytest.mark.xdist_group("plan_quotas")  # one worker synthesizes the app once


def _synthesize(outdir: Path) -> None:
    """Stack ``Quotas``: an inf2.48xlarge group of at most 2 running one blue/green model on two chips, a Spot
    inf2.xlarge group of at most 3, Managed Instances (inf2) running one model, and a two-node trn1.32xlarge
    training queue."""
    from aws_cdk import App, Stack
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    from neuron_constructs import (
        ManagedNeuronTaskDefinition,
        ManualNeuronTaskDefinition,
        NeuronCluster,
        NeuronLoadBalancer,
        NeuronService,
        NeuronTrainingQueue,
        Rollout,
    )

    image = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
    app = App(analytics_reporting=False, outdir=str(outdir))
    stack = Stack(app, "Quotas")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    cluster = NeuronCluster(stack, "Neuron", vpc=vpc)
    group = cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    cluster.add_ec2_capacity("Spot", instance_type="inf2.xlarge", max_capacity=3, spot=True)
    cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=image, port_mappings=[ecs.PortMapping(container_port=8080)])
    llm = NeuronService(
        stack, "Llm", cluster=cluster, task_definition=task, capacity=group, rollout=Rollout.blue_green()
    )
    llm.attach_to_listener(
        NeuronLoadBalancer(stack, "Lb", cluster=cluster).listener,
        conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])],
        priority=10,
    )
    managed = ManagedNeuronTaskDefinition(stack, "Managed", cpu=8192, memory_mib=16384)
    managed.add_neuron_container("model", image=image)
    NeuronService(stack, "Chat", cluster=cluster, task_definition=managed, desired_count=2)
    NeuronTrainingQueue(stack, "Train", instance_type="trn1.32xlarge", max_nodes=2, vpc=vpc)
    app.synth()


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("quotas")
    _synthesize(outdir)
    return outdir


def _plan(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", "--quotas", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_each_family_and_purchase_option_sums_its_capacities_at_the_maximum_and_the_peak(assembly: Path) -> None:
    status, out, _ = _plan(str(assembly), "--json")
    assert status == 0
    planned = json.loads(out)
    by_kind = {(c["kind"], c["purchase"]): c for c in planned["capacities"]}
    group = by_kind[("Auto Scaling", "On-Demand")]
    assert (group["vcpus"], group["peak_vcpus"]) == (2 * 192, 2 * 192)  # blue and green fit its two instances
    spot = by_kind[("Auto Scaling", "Spot")]
    assert (spot["vcpus"], spot["peak_vcpus"], spot["quota_code"]) == (3 * 4, 3 * 4, "L-B5D1601B")
    chat = by_kind[("Managed Instances", "On-Demand")]
    # THEN two tasks, an instance each, of at most the largest inf2 the capacity admits; its rolling update adds one
    assert (chat["vcpus"], chat["peak_vcpus"]) == (2 * 192, 3 * 192)
    train = by_kind[("AWS Batch", "On-Demand")]
    assert (train["vcpus"], train["quota_code"]) == (2 * 128, "L-2C3B7624")
    totals = {(q["family"], q["purchase"]): (q["vcpus"], q["peak_vcpus"]) for q in planned["quotas"]}
    assert totals == {
        ("Inf", "On-Demand"): (384 + 384, 384 + 576),
        ("Inf", "Spot"): (12, 12),
        ("Trn", "On-Demand"): (256, 256),
    }


def test_the_text_names_each_quota_and_the_request_to_make(assembly: Path) -> None:
    status, out, _ = _plan(str(assembly))
    assert status == 0
    assert "Running On-Demand Inf instances  L-1945791B  768" in out
    assert "All Inf Spot Instance Requests   L-B5D1601B  12" in out
    assert (
        "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-1945791B "
        "--desired-value 960"
    ) in out


def test_a_maximum_the_template_does_not_give_as_a_number_is_unknown_never_guessed(assembly: Path) -> None:
    template: dict[str, Any] = json.loads((assembly / "Quotas.template.json").read_text())
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::AutoScaling::AutoScalingGroup":
            resource["Properties"]["MaxSize"] = {"Ref": "Size"}
        if resource["Type"] == "AWS::Batch::ComputeEnvironment":
            resource["Properties"]["ComputeResources"]["MaxvCpus"] = "many"
    needs = quota_templates({"Quotas.template.json": template}).needs
    assert {n.vcpus for n in needs if n.kind in ("Auto Scaling", "AWS Batch")} == {None}
    assert any("not a number in the template" in n.how for n in needs if n.kind == "AWS Batch")
    status, out, err = _plan(str(Path(__file__).parent / "data" / "neuron-ls-2.34-output-format-json.json"))
    assert status == 2 and "No Neuron capacity in these templates" in out  # JSON, but no template: said, exit 2
    assert "not a CloudFormation template: no Resources section" in err


def test_every_quota_is_one_family_and_purchase_option_of_the_neuron_types() -> None:
    assert len({(q.family, q.purchase) for q in QUOTAS}) == len(QUOTAS) == 4
    assert [quota_family(t) for t in ("inf1.xlarge", "inf2.48xlarge", "trn1n.32xlarge", "trn2.48xlarge")] == [
        "Inf",
        "Inf",
        "Trn",
        "Trn",
    ]
    assert quota_family("g5.xlarge") is None
    with pytest.raises(ValueError, match="no vCPU quota"):
        quota_of("Gpu", "On-Demand")
