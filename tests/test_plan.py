"""``neuron-ecs plan``: the NeuronCores of one planned instance of every Neuron capacity, from templates alone."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from cfn import container, ecs_template, managed_task, manual_task, service, with_resources

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
