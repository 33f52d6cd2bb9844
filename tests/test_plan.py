"""``neuron-ecs plan``: the NeuronCores of one planned instance of every Neuron capacity, from templates alone."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from cfn import container, ecs_template, managed_task, manual_task, service, with_resources
from conftest import examples

from neuron_constructs.tools.cli import EXIT_CONFLICT, EXIT_OK, EXIT_USAGE, main
from neuron_constructs.tools.device_map import CONFLICT, IDLE, render_layouts
from neuron_constructs.tools.planning import plan_template


def _cores(instance_type: str, devices: list[int], visible: str, **extra: Any) -> dict[str, Any]:
    """A manual task mapping ``devices`` and naming ``visible`` cores of them."""
    environment = [{"Name": "NEURON_RT_VISIBLE_CORES", "Value": visible}]
    return manual_task(instance_type, containers=[container(devices=devices, Environment=environment)], **extra)


def _plan(tmp_path: Path, template: dict[str, Any], *args: str) -> tuple[int, str, str]:
    path = tmp_path / "app.template.json"
    path.write_text(json.dumps(template))
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", str(path), *args], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_copies_on_disjoint_cores_of_one_chip_share_it_without_conflict(tmp_path: Path) -> None:
    template = with_resources(
        ecs_template("inf2.xlarge"),
        First=_cores("inf2.xlarge", [0], "0"),
        Second=_cores("inf2.xlarge", [0], "1"),
        FirstService=service("First", count=2),
        SecondService=service("Second", count=2),
    )
    (layout,) = plan_template(template)
    assert layout.cells == ("A", "B") and layout.conflicts == ()
    assert [sorted(h.cores) for h in layout.holders] == [[0], [1]]
    status, out, err = _plan(tmp_path, template)
    assert (status, err) == (EXIT_OK, "")
    assert out.splitlines()[2:8] == [
        "Asg (inf2.xlarge): 1 chip, 2 cores, each of up to 2 instances",
        "  chip  0",
        "  core  0",
        "        AB",
        "    A  FirstService: core 0 of /dev/neuron0; 2 tasks, one per instance (distinctInstance)",
        "    B  SecondService: core 1 of /dev/neuron0; 2 tasks, one per instance (distinctInstance)",
    ]
    assert out.rstrip().endswith("Idle on 1 planned instance: 0 chips, 0 NeuronCores.\nNo NeuronCore is held twice.")


def test_a_core_two_services_hold_is_marked_listed_and_exits_3(tmp_path: Path) -> None:
    template = with_resources(
        ecs_template("inf2.8xlarge"),
        Wide=_cores("inf2.8xlarge", [0], "0-1"),
        Narrow=_cores("inf2.8xlarge", [0], "1"),
        WideService=service("Wide"),
        NarrowService=service("Narrow"),
    )
    (layout,) = plan_template(template)
    assert layout.cells == ("A", CONFLICT) and layout.conflicts == ((1, ("A", "B")),)
    status, out, _ = _plan(tmp_path, template)
    assert status == EXIT_CONFLICT
    assert "        A!\n" in out and "    !  core 1 of /dev/neuron0 held by A and B\n" in out
    assert "1 NeuronCore held twice (marked !)" in out


def test_whole_chips_and_cores_mix_and_idle_chips_and_cores_are_counted(tmp_path: Path) -> None:
    template = with_resources(
        ecs_template("inf2.24xlarge"),
        Llm=manual_task("inf2.24xlarge", devices=[0, 1]),
        Embedding=_cores("inf2.24xlarge", [2], "4"),
        Reranker=_cores("inf2.24xlarge", [3], "6-7"),
        LlmService=service("Llm"),
        EmbeddingService=service("Embedding"),
        RerankerService=service("Reranker"),
    )
    (layout,) = plan_template(template)
    assert "".join(layout.cells) == "AAAAB.CC...."
    assert (layout.idle_chips, layout.idle_cores) == ((4, 5), (5, 8, 9, 10, 11))
    status, out, _ = _plan(tmp_path, template)
    assert status == EXIT_OK
    assert "Asg (inf2.24xlarge): 6 chips, 12 cores, each of up to 2 instances, 2 chips idle, 5 cores idle\n" in out
    assert "        AA AA B. CC .. ..\n" in out
    assert "Idle on 1 planned instance: 2 chips, 5 NeuronCores." in out


def test_copies_nothing_keeps_apart_land_together_and_hold_their_cores_twice() -> None:
    template = with_resources(
        ecs_template("inf2.24xlarge"),
        Model=manual_task("inf2.24xlarge", devices=[0]),
        Copies=service("Model", distinct=False),
    )
    (layout,) = plan_template(template)
    assert layout.cells[:2] == (CONFLICT, CONFLICT)
    assert layout.holders[0].name.endswith("1 task, two can land on one instance (no distinctInstance)")


def test_a_neuron_device_task_on_managed_instances_holds_every_core() -> None:
    template = with_resources(ecs_template(), Managed=managed_task(), ManagedService=service("Managed", capacity="Mi"))
    asg, managed = plan_template(template)
    assert set(asg.cells) == {IDLE}  # no service lands on the Auto Scaling capacity: all of it idle
    assert managed.title == "Mi (inf2.xlarge) for ManagedService"
    assert managed.cells == ("A", "A") and managed.holders[0].cores == frozenset({0, 1})


def test_trn2_cores_are_drawn_at_the_logical_core_setting_and_wrap() -> None:
    environment = [
        {"Name": "NEURON_RT_VISIBLE_CORES", "Value": "9"},
        {"Name": "NEURON_LOGICAL_NC_CONFIG", "Value": "1"},
    ]
    task = manual_task("trn2.48xlarge", containers=[container(devices=[1], Environment=environment)])
    (layout,) = plan_template(with_resources(ecs_template("trn2.48xlarge"), Task=task, Service=service("Task")))
    assert (layout.lnc, layout.cores) == (1, 128) and layout.cells[9] == "A"
    lines = render_layouts([layout], styled=False)
    assert lines[3] == "        ........ .A...... " + " ".join(["........"] * 6)
    assert all(len(line) < 100 for line in lines[:7])


def test_a_service_importing_its_capacity_from_another_stack_is_planned_with_it(tmp_path: Path) -> None:
    platform = ecs_template("inf2.xlarge")
    platform["Outputs"] = {
        "Capacity": {"Value": {"Ref": "Asg"}, "Export": {"Name": "Platform:Capacity"}},
        "Cluster": {"Value": {"Ref": "Cluster"}, "Export": {"Name": "Platform:Cluster"}},
    }
    model_service = service("Task")
    model_service["Properties"]["Cluster"] = {"Fn::ImportValue": "Platform:Cluster"}
    model_service["Properties"]["CapacityProviderStrategy"][0]["CapacityProvider"] = {
        "Fn::ImportValue": "Platform:Capacity"
    }
    model = {"Resources": {"Task": _cores("inf2.xlarge", [0], "1"), "Service": model_service}}
    (tmp_path / "Platform.template.json").write_text(json.dumps(platform))
    (tmp_path / "Model.template.json").write_text(json.dumps(model))
    out, err = io.StringIO(), io.StringIO()
    assert main(["plan", str(tmp_path), "--json"], stdout=out, stderr=err) == EXIT_OK
    (instance,) = json.loads(out.getvalue())["instances"]
    assert instance["title"] == "Platform/Asg (inf2.xlarge)"
    assert instance["cells"] == ".A" and instance["idle_cores"] == [0] and instance["held_twice"] == []
    (holder,) = instance["holders"]
    assert holder["name"] == "Model/Service: core 1 of /dev/neuron0; 1 task (distinctInstance)"
    assert holder["cores"] == [1]


def test_usage_errors_are_a_sentence_and_exit_2(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["plan", str(tmp_path / "missing.json")], stdout=out, stderr=err) == EXIT_USAGE
    assert err.getvalue() == f"neuron-ecs plan: {tmp_path / 'missing.json'}: no such file or directory\n"
    (tmp_path / "notes.txt").write_text("not a template")
    err = io.StringIO()
    assert main(["plan", str(tmp_path / "notes.txt")], stdout=io.StringIO(), stderr=err) == EXIT_USAGE
    assert err.getvalue().startswith(f"neuron-ecs plan: {tmp_path / 'notes.txt'}: ")
    assert main(["plan"], stdout=io.StringIO(), stderr=io.StringIO()) == EXIT_USAGE


def test_templates_without_neuron_capacity_say_so(tmp_path: Path) -> None:
    status, out, _ = _plan(tmp_path, {"Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}}})
    assert status == EXIT_OK and out.startswith("No Neuron capacity in these templates")


def test_the_example_app_plans_the_rag_fleet_by_construct_path(example_assembly_dir: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", str(example_assembly_dir / "examples")], stdout=out, stderr=err)
    assert (status, err.getvalue()) == (EXIT_OK, "")
    text = out.getvalue()
    rag = text.split("NeuronRagFleet/Neuron/Inf2/Provider (inf2.48xlarge): ", 1)[1].split("\n\n", 1)[0].splitlines()
    assert rag[0] == "12 chips, 24 cores, each of up to 2 instances"
    # The LLM's two copies on four chips each, the embedding model's eight one-core copies two to a chip.
    assert rag[3] == "        AA AA AA AA BB BB BB BB CD EF GH IJ"
    fleet = "    {}  NeuronRagFleet/Fleet/{}Service/Service: {} of /dev/neuron{}; 1-2 tasks, one per instance"
    assert rag[4].startswith(fleet.format("A", "Llm/Copy0", "cores 0-7", "0..3"))
    assert rag[10].startswith(fleet.format("G", "Embedding/Copy4", "core 20", "10"))
    assert rag[11].startswith(fleet.format("H", "Embedding/Copy5", "core 21", "10"))
    assert "No NeuronCore is held twice." in text


@pytest.mark.e2e  # a synthesis of its own, beside the docs build that CI runs
def test_the_cli_page_s_plan_sample_is_what_plan_draws_for_its_app(tmp_path: Path) -> None:
    """docs/cli.md's fleet, built from the page's own code and synthesized: plan prints the page's drawing."""
    from aws_cdk import App, Stack
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs import NeuronCluster, NeuronFleet

    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    section = page.split("## `neuron-ecs plan`", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    drawing = section.split("```text\n", 1)[1].split("```", 1)[0].split("\n", 1)[1]  # without the command line
    app = App(analytics_reporting=False, outdir=str(tmp_path))
    namespace = {
        "stack": Stack(app, "Models"),
        "image": ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37"),
        "port": [ecs.PortMapping(container_port=8080)],
        "NeuronCluster": NeuronCluster,
        "NeuronFleet": NeuronFleet,
    }
    exec(code, namespace)  # the page's code, as written there
    app.synth()
    out, err = io.StringIO(), io.StringIO()
    assert main(["plan", str(tmp_path)], stdout=out, stderr=err) == EXIT_OK, err.getvalue()
    assert out.getvalue() == drawing


# --- a cloud assembly manifest of any shape ----------------------------------------------------------------------

_NAME = "App.template.json"


def _stack(**artifact: Any) -> dict[str, Any]:
    return {
        "artifacts": {"App": {"type": "aws:cloudformation:stack", "properties": {"templateFile": _NAME}, **artifact}}
    }


@pytest.mark.parametrize(
    ("manifest", "sentence"),
    [
        ({"artifacts": []}, "artifacts is a list, not a cloud assembly manifest"),
        (_stack(metadata="x"), "the metadata of artifact 'App' is a string, not a cloud assembly manifest"),
        ({"artifacts": {"App": "x"}}, "artifact 'App' is a string"),
        ({"artifacts": {"App": {"properties": [1]}}}, "the properties of artifact 'App' are a list"),
        (_stack(metadata={"/App/Svc": "x"}), "the metadata of '/App/Svc' in artifact 'App' is a string"),
        (_stack(metadata={"/App/Svc": [{"type": "aws:cdk:logicalId", "data": 1}]}), "is a number"),
        (_stack(additionalMetadataFile="../outside.json"), "names '../outside.json', outside the cloud assembly"),
        (_stack(additionalMetadataFile="/dev/zero"), "names '/dev/zero', outside the cloud assembly"),
        (_stack(additionalMetadataFile=7), "the additionalMetadataFile of artifact 'App' is a number"),
        (_stack(additionalMetadataFile="dir"), "dir is a directory"),
        (_stack(additionalMetadataFile="list.json"), "list.json (the metadata of artifact 'App') is a JSON list"),
        ([1], "a JSON list, not a cloud assembly manifest"),
        ("{", "not valid JSON"),
        ("[" * 100_000, "nested more than 100 levels deep"),
    ],
)
def test_a_manifest_of_another_shape_is_a_sentence_and_exit_2_and_the_template_is_still_planned(
    manifest: Any, sentence: str, tmp_path: Path
) -> None:
    """cdk.out's manifest.json, read for construct paths: any shape is a sentence (it once raised a traceback for
    artifacts as a list, metadata as a string); the template is planned with its logical ids."""
    template = with_resources(ecs_template("inf2.xlarge"), T=_cores("inf2.xlarge", [0], "0-1"), Svc=service("T"))
    (tmp_path / _NAME).write_text(json.dumps(template))
    (tmp_path / "manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    (tmp_path / "dir").mkdir()
    (tmp_path / "list.json").write_text("[]")
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", str(tmp_path)], stdout=out, stderr=err)
    assert status == EXIT_USAGE
    (line,) = err.getvalue().splitlines()
    assert line.startswith(f"neuron-ecs plan: {tmp_path / 'manifest.json'}") or "dir is a directory" in line
    assert sentence in line and "Traceback" not in err.getvalue()
    assert "Svc: cores 0-1 of /dev/neuron0" in out.getvalue()


def test_a_manifest_that_is_a_pipe_or_a_device_is_not_read(tmp_path: Path) -> None:
    import os

    template = with_resources(ecs_template("inf2.xlarge"), T=_cores("inf2.xlarge", [0], "0-1"), Svc=service("T"))
    (tmp_path / _NAME).write_text(json.dumps(template))
    for make in (lambda path: os.mkfifo(path), lambda path: path.symlink_to("/dev/zero")):
        manifest = tmp_path / "manifest.json"
        manifest.unlink(missing_ok=True)
        make(manifest)
        err = io.StringIO()
        assert main(["plan", str(tmp_path)], stdout=io.StringIO(), stderr=err) == EXIT_USAGE
        assert err.getvalue() == f"neuron-ecs plan: {manifest} is not a regular file\n"


def test_the_construct_paths_of_a_well_formed_manifest_and_its_metadata_file_name_the_services(tmp_path: Path) -> None:
    template = with_resources(ecs_template("inf2.xlarge"), T=_cores("inf2.xlarge", [0], "0-1"), Svc=service("T"))
    (tmp_path / _NAME).write_text(json.dumps(template))
    entries = {"/App/Model/Service/Resource": [{"type": "aws:cdk:logicalId", "data": "Svc"}]}
    (tmp_path / "App.metadata.json").write_text(json.dumps(entries))
    (tmp_path / "manifest.json").write_text(json.dumps(_stack(additionalMetadataFile="App.metadata.json")))
    out, err = io.StringIO(), io.StringIO()
    assert main(["plan", str(tmp_path)], stdout=out, stderr=err) == EXIT_OK, err.getvalue()
    assert "App/Model/Service: cores 0-1 of /dev/neuron0" in out.getvalue()


def test_a_device_the_type_does_not_have_is_said_not_drawn_however_high() -> None:
    """GIVEN a task on inf2.48xlarge mapping /dev/neuron999999 WHEN planned THEN the layout holds the type's 12 chips
    and a remark names the device: the map's size never follows a number in the template."""
    template = with_resources(ecs_template(), T=manual_task(containers=[container(devices=[999999])]), S=service("T"))
    (layout,) = plan_template(template)
    assert layout.chips == 12
    assert any("/dev/neuron999999" in remark and "does not have" in remark for remark in layout.remarks)


# --- plan --rollout: the peak a model rollout needs on the chips -------------------------------------------------


def _override(service: Any, **configuration: Any) -> None:
    """The native strategy on a service's L1, as ``rollout=`` sets it."""
    for key, value in configuration.items():
        service.node.default_child.add_property_override(f"DeploymentConfiguration.{key}", value)


def _synthesize_rollouts(outdir: Path) -> None:
    """Stack ``Models`` (docs/cli.md's sample): six two-chip slices of one inf2.48xlarge, blue/green, on a capacity of
    at most 2; an LLM on four chips, canary, on a capacity of at most 1. Stack ``Fleets``: a fleet model of four
    one-core copies rolled out copy by copy (the default)."""
    from aws_cdk import App, Stack
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs import (
        ManualNeuronTaskDefinition,
        NeuronCluster,
        NeuronFleet,
        NeuronLoadBalancer,
        NeuronService,
        SlicedNeuronService,
    )

    image = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
    port = [ecs.PortMapping(container_port=8080)]
    app = App(analytics_reporting=False, outdir=str(outdir))
    stack = Stack(app, "Models")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    # -- docs/cli.md, plan --rollout: from here
    staged = NeuronCluster(stack, "Staged", vpc=vpc)
    staged.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    sliced = SlicedNeuronService(
        stack,
        "Sliced",
        cluster=staged,
        instance_type="inf2.48xlarge",
        devices_per_task=2,
        image=image,
        port_mappings=port,
    )
    sliced.attach_to_listener(NeuronLoadBalancer(stack, "StagedLb", cluster=staged).listener)
    for copy in sliced.services:
        _override(copy, Strategy="BLUE_GREEN", BakeTimeInMinutes=10, MaximumPercent=200)

    small = NeuronCluster(stack, "Small", vpc=vpc)
    small.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=1)
    task = ManualNeuronTaskDefinition(
        stack, "LlmTask", instance_type="inf2.48xlarge", devices=[0, 1, 2, 3], cpu=16384, memory_mib=65536
    )
    task.add_neuron_container("model", image=image, port_mappings=port)
    llm = NeuronService(stack, "Llm", cluster=small, task_definition=task)
    llm.attach_to_listener(NeuronLoadBalancer(stack, "SmallLb", cluster=small).listener)
    _override(
        llm.service,
        Strategy="CANARY",
        BakeTimeInMinutes=10,
        CanaryConfiguration={"CanaryPercent": 10, "CanaryBakeTimeInMinutes": 5},
    )
    # -- to here
    fleets = Stack(app, "Fleets")
    cluster = NeuronCluster(fleets, "Neuron")
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.24xlarge", max_capacity=2)
    fleet = NeuronFleet(fleets, "Fleet", cluster=cluster, instance_type="inf2.24xlarge")
    fleet.add_model("Embedding", image=image, cores_per_task=1, copies=4, port_mappings=port)
    app.synth()


ROLLOUT_APP = pytest.mark.xdist_group("plan_rollouts")  # one worker synthesizes the module's rollouts once


@pytest.fixture(scope="module")
def rollout_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthesized cloud assembly, once for the module."""
    outdir = tmp_path_factory.mktemp("rollouts")
    _synthesize_rollouts(outdir)
    return outdir


def _rollout(*paths: Path, json_out: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", "--rollout", *map(str, paths), *(["--json"] if json_out else [])], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def _section(text: str, heading: str) -> list[str]:
    """The lines of the drawn instance titled ``heading``, up to the blank line after it."""
    return text.split(heading, 1)[1].split("\n\n", 1)[0].splitlines()


@ROLLOUT_APP
def test_six_two_chip_slices_blue_green_in_two_stages_peak_at_18_chips_on_2_instances(rollout_app: Path) -> None:
    from neuron_constructs.tools.rollout_planning import rollout_paths
    from neuron_constructs.tools.rollout_result import Peak

    result = rollout_paths([str(rollout_app / "Models.template.json")])
    (fleet,) = result.fleets
    assert fleet.name == "Models/Sliced" and fleet.max_instances == 2
    assert [[name.rsplit("/", 2)[1] for name in stage] for stage in fleet.stages] == [
        ["Slice0Service", "Slice1Service", "Slice2Service"],
        ["Slice3Service", "Slice4Service", "Slice5Service"],
    ]
    inf2_48 = 196608  # 192 vCPUs
    assert fleet.steady == Peak(6, 12, 24, 1, inf2_48, fleet.steady.memory_mib if fleet.steady else 0)
    # Stage 1: all six blue copies and the three green of stage 1; stage 2: the three blue left, all six green.
    assert [(p.tasks, p.chips, p.cores, p.instances, p.cpu) for p in fleet.stage_peaks] == [
        (9, 18, 36, 2, inf2_48 * 3 // 2),
        (9, 18, 36, 2, inf2_48 * 3 // 2),
    ]
    assert fleet.fits is True and fleet.verdict == "fits (max 2)" and not fleet.peak_is_steady_state
    copies = [s for s in result.services if s.fleet == "Models/Sliced"]
    assert [(s.plan.strategy if s.plan else None, s.stage, s.green_instances) for s in copies] == [
        ("blue_green", 1, (2,)),
        ("blue_green", 1, (2,)),
        ("blue_green", 1, (2,)),
        ("blue_green", 2, (2,)),
        ("blue_green", 2, (2,)),
        ("blue_green", 2, (2,)),
    ]
    status, out, err = _rollout(rollout_app / "Models.template.json")
    assert err == "" and status == EXIT_CONFLICT  # the LLM below does not fit
    stage_1 = _section(out, "Models/Staged/Inf2/Provider (inf2.48xlarge) instance 2 of 2 at stage 1 of Models/Sliced")
    assert stage_1[3] == "        AA AA BB BB CC CC .. .. .. .. .. .."
    assert stage_1[4] == "    A  Models/Sliced/Slice0Service/Service: cores 0-3 of /dev/neuron0..1; green, stage 1"
    stage_2 = _section(out, "instance 2 of 2 at stage 2 of Models/Sliced")
    assert stage_2[3] == "        AA AA BB BB CC CC DD DD EE EE FF FF"
    assert stage_2[9] == "    F  Models/Sliced/Slice5Service/Service: cores 20-23 of /dev/neuron10..11; green, stage 2"
    assert "    stage 1: Slice0Service, Slice1Service, Slice2Service\n" in out
    assert "    peak of stage 2: 9 tasks, 18 chips, 36 NeuronCores, 2 instances, 294912 CPU units" in out


@ROLLOUT_APP
def test_six_two_chip_replicas_blue_green_at_once_need_2_instances_and_24_chips(rollout_app: Path) -> None:
    """The same slices without the stages (no DependsOn between them): all six green copies at once."""
    from neuron_constructs.tools.rollout_planning import rollout_templates

    template = json.loads((rollout_app / "Models.template.json").read_text())
    for resource in template["Resources"].values():
        resource.pop("DependsOn", None) if resource["Type"] == "AWS::ECS::Service" else None
    result = rollout_templates({"Models": template})
    (fleet,) = result.fleets
    assert len(fleet.stages) == 1 and len(fleet.stages[0]) == 6
    assert fleet.peak is not None
    assert (fleet.peak.tasks, fleet.peak.chips, fleet.peak.cores, fleet.peak.instances) == (12, 24, 48, 2)
    assert fleet.fits is True


@ROLLOUT_APP
def test_a_canary_llm_on_a_capacity_of_one_gets_the_shortfall_sentence_and_green_on_instance_2(
    rollout_app: Path,
) -> None:
    status, out, _ = _rollout(rollout_app / "Models.template.json")
    assert status == EXIT_CONFLICT
    blue = _section(out, "Models/Small/Inf2/Provider (inf2.48xlarge) instance 1 of 2: ")
    green = _section(out, "Models/Small/Inf2/Provider (inf2.48xlarge) instance 2 of 2: ")
    assert blue[0].startswith("12 chips, 24 cores, blue,") and green[0].startswith("12 chips, 24 cores, green,")
    assert blue[3] == green[3] == "        AA AA AA AA .. .. .. .. .. .. .. .."
    assert green[4] == "    A  Models/Llm/Service: cores 0-7 of /dev/neuron0..3; green"
    llm = out.split("  Models/Llm/Service on Models/Small/Inf2/Provider (inf2.48xlarge)\n", 1)[1].splitlines()
    assert (
        llm[0]
        == "    canary: 10 % of the traffic to green for 5 min, then the rest; blue kept 10 min after; 15 min in all"
    )
    assert llm[1] == "    peak: 2 tasks, 8 chips, 16 NeuronCores, 2 instances, 32768 CPU units, 131072 MiB"
    assert llm[2] == "    green on instance 2"
    assert llm[3].startswith("    a canary deployment runs blue and green together, each at the full desired count: 2 ")
    assert llm[3].endswith("but Models/Small/Inf2/Provider launches at most 1; raise its max_capacity to 2 or more")


@ROLLOUT_APP
def test_a_fleet_rolled_out_copy_by_copy_peaks_at_its_steady_state(rollout_app: Path) -> None:
    status, out, err = _rollout(rollout_app / "Fleets.template.json")
    assert (status, err) == (EXIT_OK, "")
    drawing = out.split("\n", 1)[1].split("\nRollouts\n", 1)[0]
    assert "green" not in drawing and "instance 1 of 1: 6 chips, 12 cores, blue," in drawing  # rolling at most 100 %
    assert (
        "  fleet model Fleets/Fleet/Embedding on Fleets/Neuron/Inf2/Provider (inf2.24xlarge): 4 copies\n"
        "    stage 1: Copy0Service, Copy1Service\n"
        "    stage 2: Copy2Service, Copy3Service\n"
        "    peak = steady state (copy by copy, rolling at most 100 %): 4 tasks, 2 chips, 4 NeuronCores, 1 instance, "
    ) in out
    assert "    fits (max 2)\n" in out


@ROLLOUT_APP
def test_rollout_json_holds_the_same_numbers(rollout_app: Path) -> None:
    status, out, _ = _rollout(rollout_app / "Models.template.json", rollout_app / "Fleets.template.json", json_out=True)
    assert status == EXIT_CONFLICT
    document = json.loads(out)
    assert set(document) == {"instances", "services", "fleet_models", "capacities", "unreadable"}
    (llm,) = [s for s in document["services"] if s["service"] == "Models/Llm/Service"]
    assert llm["strategy"] == "canary" and (llm["canary_percent"], llm["interval_minutes"]) == (10, 5)
    assert llm["peak"] == {"tasks": 2, "chips": 8, "cores": 16, "instances": 2, "cpu": 32768, "memory_mib": 131072}
    assert (llm["fits"], llm["max_instances"], llm["green_instances"]) == (False, 1, [2])
    assert llm["verdict"].startswith("a canary deployment runs blue and green together")
    sliced, embedding = document["fleet_models"]
    assert sliced["fleet_model"] == "Models/Sliced" and sliced["peak"]["chips"] == 18
    assert embedding["peak_is_steady_state"] is True and embedding["peak"]["instances"] == 1
    titles = [i["title"] for i in document["instances"]]
    assert "Models/Small/Inf2/Provider (inf2.48xlarge) instance 2 of 2" in titles


@ROLLOUT_APP
def test_the_cli_page_s_rollout_sample_is_what_plan_rollout_draws(rollout_app: Path) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    sample = page.split("$ .venv/bin/neuron-ecs plan --rollout cdk.out/Models.template.json\n", 1)[1].split("```", 1)[0]
    status, out, _ = _rollout(rollout_app / "Models.template.json")
    assert status == EXIT_CONFLICT and out == sample


# --- reading DeploymentConfiguration, whatever it holds ---------------------------------------------------------

_LB = [{"TargetGroupArn": {"Ref": "Tg"}, "ContainerName": "model", "ContainerPort": 8080}]


def _rollout_template(configuration: Any, *, count: int = 2, max_size: int = 4, **extra: Any) -> dict[str, Any]:
    return with_resources(
        ecs_template("inf2.48xlarge", max_size=max_size),
        Llm=manual_task("inf2.48xlarge", devices=[0, 1, 2, 3]),
        LlmService=service("Llm", count=count, DeploymentConfiguration=configuration, LoadBalancers=_LB, **extra),
    )


@pytest.mark.parametrize(
    ("configuration", "sentence"),
    [
        ([1], "its DeploymentConfiguration is a list, not an object: CloudFormation refuses it"),
        ({"Strategy": "RED_BLACK"}, "its Strategy is the string 'RED_BLACK', none ECS takes (ROLLING, BLUE_GREEN,"),
        ({"Strategy": 7}, "its Strategy is a number, none ECS takes"),
        ({"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": "ten"}, "its BakeTimeInMinutes is the string 'ten', not a"),
        ({"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": 2000}, "a bake time of 2000 minutes: ECS takes"),
        ({"Strategy": "BLUE_GREEN"}, "it has no BakeTimeInMinutes, which ECS requires with the BLUE_GREEN strategy"),
        (
            {"Strategy": "CANARY", "BakeTimeInMinutes": 5, "CanaryConfiguration": {"CanaryPercent": 0.05}},
            "a canary percent of 0.05 %: ECS takes canaryPercent as a multiple of 0.1 from 0.1 to 100.0",
        ),
        ({"Strategy": "LINEAR", "LinearConfiguration": "25"}, "its LinearConfiguration is the string '25', not an"),
        (
            {
                "Strategy": "LINEAR",
                "BakeTimeInMinutes": 1440,
                "LinearConfiguration": {"StepPercent": 3, "StepBakeTimeInMinutes": 60},
            },
            "CloudFormation rejects a linear deployment whose calculated time exceeds 33 hours",
        ),
        ({"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": True}, "its BakeTimeInMinutes is a boolean, not a number"),
        ({"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": 10**30}, "its BakeTimeInMinutes is 1e+30, far outside"),
    ],
)
def test_a_malformed_or_refused_deployment_configuration_is_a_sentence_and_exit_3(
    configuration: Any, sentence: str, tmp_path: Path
) -> None:
    status, out, err = _plan(tmp_path, _rollout_template(configuration), "--rollout")
    assert status == EXIT_CONFLICT and err == "" and "Traceback" not in out
    assert sentence in out


def test_a_value_worked_out_at_deploy_time_is_said_and_the_peak_kept_where_it_can_be(tmp_path: Path) -> None:
    from neuron_constructs.tools.rollout_reading import read_rollout

    read = read_rollout({"DeploymentConfiguration": {"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": {"Ref": "Bake"}}})
    assert read.plan is not None and read.plan.strategy == "blue_green" and read.plan.bake_time_minutes is None
    assert read.unknown == ("its BakeTimeInMinutes is worked out at deploy time",)
    unknown = read_rollout({"DeploymentConfiguration": {"Strategy": {"Fn::If": ["Green", "BLUE_GREEN", "ROLLING"]}}})
    assert unknown.plan is None and unknown.unknown == ("its Strategy is worked out at deploy time",)
    external = read_rollout({"DeploymentController": {"Type": "CODE_DEPLOY"}})
    assert external.plan is None and "CODE_DEPLOY deployment controller deploys it" in external.unknown[0]
    status, out, _ = _plan(tmp_path, _rollout_template({"Strategy": {"Ref": "S"}}), "--rollout")
    assert status == EXIT_OK and "    its Strategy is worked out at deploy time\n" in out
    assert "peak:" not in out


def test_a_rolling_update_that_keeps_every_copy_needs_one_instance_more(tmp_path: Path) -> None:
    """Rolling, 100 % healthy, 200 % at most (ECS's defaults): one new copy before an old one stops, on a new
    instance (distinctInstance), the room NEURON032 checks."""
    status, out, _ = _plan(tmp_path, _rollout_template(None, count=2, max_size=2), "--rollout")
    assert status == EXIT_CONFLICT
    assert "    rolling: at least 100 % healthy, at most 200 % running\n" in out
    assert "    peak: 3 tasks, 12 chips, 24 NeuronCores, 3 instances, 3072 CPU units, 12288 MiB\n" in out
    assert "    green on instance 3\n" in out
    assert "a rolling deployment runs at its peak 3 copies holding" in out
    status, out, _ = _plan(tmp_path, _rollout_template({"MinimumHealthyPercent": 50}, count=2), "--rollout")
    assert status == EXIT_OK and "    peak: 2 tasks, 8 chips" in out and "green on" not in out


def test_green_copies_land_first_on_instances_without_a_copy_of_their_service(tmp_path: Path) -> None:
    """An embedding model with one copy beside an LLM with two: its green copy lands on the LLM's second instance,
    where its chip is free; the LLM's two green copies need two new instances."""
    template = with_resources(
        _rollout_template({"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": 10}, max_size=3),
        Emb=manual_task("inf2.48xlarge", devices=[4]),
        EmbService=service("Emb", DeploymentConfiguration={"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": 0}),
    )
    status, out, _ = _plan(tmp_path, template, "--rollout")
    assert status == EXIT_CONFLICT  # the LLM alone needs 4 instances
    second = _section(out, "Asg (inf2.48xlarge) instance 2 of 4: ")
    assert second[0] == "12 chips, 24 cores, blue and green, 7 chips idle, 14 cores idle"
    assert second[3] == "        AA AA AA AA BB .. .. .. .. .. .. .."
    assert second[5] == "    B  EmbService: cores 8-9 of /dev/neuron4; green"
    assert _section(out, "Asg (inf2.48xlarge) instances 3-4 of 4: ")[4] == (
        "    A  LlmService: cores 0-7 of /dev/neuron0..3; green"
    )
    assert "  EmbService on Asg (inf2.48xlarge)\n" in out and "    fits (max 3)\n" in out
    assert "  Asg (inf2.48xlarge), every rollout at once: 4 instances (2 blue): more than the 3 it launches" in out


def test_a_managed_instances_service_says_the_template_sets_no_instance_limit(tmp_path: Path) -> None:
    template = with_resources(
        ecs_template(),
        Managed=managed_task(),
        ManagedService=service(
            "Managed", capacity="Mi", DeploymentConfiguration={"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": 10}
        ),
    )
    status, out, _ = _plan(tmp_path, template, "--rollout")
    assert status == EXIT_OK
    assert "Mi (inf2.xlarge) for ManagedService instance 2 of 2: 1 chip, 2 cores, green" in out
    assert "    peak: 2 tasks, 2 chips, 4 NeuronCores, 2 instances, 8192 CPU units, 16384 MiB\n" in out
    assert "    Mi is Managed Instances: no MaxSize; ECS launches instances of inf2.24xlarge, inf2.48xlarge, " in out


def test_random_deployment_configurations_never_break_plan_rollout(tmp_path: Path) -> None:
    """Any DeploymentConfiguration and DeploymentController (hypothesis): exit 0 or 3 and sentences, never a
    traceback; read_rollout answers every one."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from neuron_constructs.tools.rollout_reading import read_rollout

    numbers = st.one_of(
        st.integers(-(10**40), 10**40),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(["10", "0.5", "-1", "1e9", "", " 7 ", "NaN", "9" * 60]),
    )
    leaves = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=20), st.just({"Ref": "P"}))
    values = st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8,
    )
    strategy = st.one_of(st.sampled_from(["ROLLING", "BLUE_GREEN", "CANARY", "LINEAR"]), values)
    configuration = st.one_of(
        values,
        st.fixed_dictionaries(
            {"Strategy": strategy},
            optional={
                "BakeTimeInMinutes": numbers | values,
                "CanaryConfiguration": st.fixed_dictionaries(
                    {}, optional={"CanaryPercent": numbers | values, "CanaryBakeTimeInMinutes": numbers | values}
                )
                | values,
                "LinearConfiguration": st.fixed_dictionaries(
                    {}, optional={"StepPercent": numbers | values, "StepBakeTimeInMinutes": numbers | values}
                )
                | values,
                "MinimumHealthyPercent": numbers | values,
                "MaximumPercent": numbers | values,
            },
        ),
    )
    controller = st.one_of(
        st.none(), values, st.fixed_dictionaries({"Type": st.sampled_from(["ECS", "EXTERNAL"]) | values})
    )

    @settings(
        max_examples=examples(150, loop=40),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(configuration=configuration, controller=controller, count=st.integers(0, 12) | values)
    def check(configuration: Any, controller: Any, count: Any) -> None:
        properties: dict[str, Any] = {"DeploymentConfiguration": configuration}
        if controller is not None:
            properties["DeploymentController"] = controller
        read = read_rollout(properties)
        assert all(isinstance(s, str) and s for s in (*read.problems, *read.unknown))
        template = _rollout_template(None)
        template["Resources"]["LlmService"]["Properties"].update(properties, DesiredCount=count)
        path = tmp_path / "app.template.json"
        try:
            path.write_text(json.dumps(template, allow_nan=True))
        except ValueError:  # an integer too long to write as JSON
            return
        out, err = io.StringIO(), io.StringIO()
        status = main(["plan", "--rollout", str(path)], stdout=out, stderr=err)
        assert status in (EXIT_OK, EXIT_CONFLICT, EXIT_USAGE), err.getvalue()
        assert "Traceback" not in out.getvalue() + err.getvalue()
        assert status != EXIT_USAGE or err.getvalue().startswith(f"neuron-ecs plan: {path}")

    check()


@pytest.mark.parametrize("count", [10, 10**9])
def test_a_template_of_246_blue_green_services_is_planned_within_2_s_and_a_peak_above_5000_instances_not_drawn(
    count: int, tmp_path: Path
) -> None:
    """The most services a template holds beside its capacity (500 resources), each blue/green at ``count`` copies:
    4,920 instances drawn at 10 copies; at a billion, the peak is said but not drawn (more than the 5,000 instances
    ECS registers in a cluster)."""
    import time

    resources: dict[str, Any] = {}
    for index in range(246):
        resources[f"T{index}"] = manual_task("inf2.48xlarge", devices=[index % 12], cpu=1, memory=1)
        configuration = {"Strategy": "BLUE_GREEN", "BakeTimeInMinutes": 1}
        resources[f"S{index}"] = service(f"T{index}", count=count, DeploymentConfiguration=configuration)
    template = with_resources(ecs_template("inf2.48xlarge", max_size=10), **resources)
    started = time.process_time()
    status, out, err = _plan(tmp_path, template, "--rollout")
    assert time.process_time() - started < 2
    assert status == EXIT_CONFLICT and err == ""
    drawn = " above the 5000 ECS registers in a cluster: not drawn" in out
    assert drawn is (count > 10)
    assert f"    peak: {2 * count} tasks, {2 * count} chips" in out


def test_a_fleet_s_stages_follow_its_copies_depends_on_and_a_cycle_comes_last() -> None:
    """Copies of one fleet (their task definitions' ``fleet`` intent) by ``DependsOn``: A; B and D after A; C after
    B; E and F, which depend on each other (CloudFormation refuses that), after all of them."""
    from neuron_constructs.tools.rollout_planning import rollout_templates

    resources: dict[str, Any] = {}
    depends = {"A": [], "B": ["A"], "C": ["BService", "Bucket"], "D": ["A"], "E": ["F"], "F": ["E"]}
    for index, (copy, needs) in enumerate(depends.items()):
        task = manual_task("inf2.48xlarge", devices=[index])
        task["Metadata"] = {"NeuronConstructs": {"allocation": "manual", "fleet": "App/Fleet"}}
        resources[copy] = task
        configuration = {"MinimumHealthyPercent": 0, "MaximumPercent": 100}  # as a fleet of one instance deploys
        resources[f"{copy}Service"] = service(copy, DeploymentConfiguration=configuration)
        resources[f"{copy}Service"]["DependsOn"] = [
            n if n.endswith(("Service", "Bucket")) else f"{n}Service" for n in needs
        ]
    resources["Bucket"] = {"Type": "AWS::S3::Bucket"}
    result = rollout_templates({"App": with_resources(ecs_template("inf2.48xlarge"), **resources)})
    (fleet,) = result.fleets
    assert fleet.name == "App/Fleet"
    assert fleet.stages == (("AService",), ("BService", "DService"), ("CService",), ("EService", "FService"))
    assert fleet.peak_is_steady_state and fleet.peak is not None and fleet.peak.chips == 6
