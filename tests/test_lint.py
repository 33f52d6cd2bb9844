"""``neuron-ecs lint`` and the cfn-lint rule pack: every example template passes, hand-broken copies fail."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cfn import container, ecs_template, manual_task, service, with_resources
from conftest import ROOT, workloads

from neuron_constructs.tools.cli import EXIT_CONFLICT, EXIT_OK, EXIT_USAGE, main

NEURON_ECS = str(Path(sys.executable).parent / "neuron-ecs")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def example_dir(templates: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("cdk.out")
    for name, template in templates.items():
        (directory / f"{name}.template.json").write_text(json.dumps(template, indent=1))
    return directory


@pytest.fixture(scope="module")
def broken(templates: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sliced inf2 example, hand-edited: slice 1 unpinned, slice 0 with a Hugging Face token in plain text."""
    template = copy.deepcopy(templates["NeuronSlicedInf2"])
    tasks = workloads(template, "AWS::ECS::TaskDefinition")
    slice0, slice1 = sorted(tasks)[:2]
    template["Resources"][slice1]["Properties"]["PlacementConstraints"] = []
    template["Resources"][slice0]["Properties"]["ContainerDefinitions"][0]["Environment"] = [
        {"Name": "HF_TOKEN", "Value": "hf_0123456789"}
    ]
    path = tmp_path_factory.mktemp("broken") / "NeuronSlicedInf2.template.json"
    path.write_text(json.dumps(template, indent=1))
    return path


def test_every_example_template_passes(example_dir: Path) -> None:
    assert run("lint", str(example_dir)) == (EXIT_OK, "", "")


def test_a_broken_copy_fails_the_way_cfn_lint_prints(broken: Path) -> None:
    status, out, _ = run("lint", str(broken))
    assert status == EXIT_CONFLICT
    blocks = out.strip().split("\n\n")
    assert [b.split()[0] for b in blocks] == ["E9121", "W9209"]
    error, location = blocks[0].splitlines()
    assert "VllmSlice1TaskDefinition" in error and "[NEURON021: " in error and "Fix: " in error
    file, line, column = location.rsplit(":", 2)
    assert file == str(broken)
    lines = broken.read_text().splitlines()
    assert lines[int(line) - 1].strip().startswith('"PlacementConstraints"') and int(column) >= 1
    # ... inside the resource the finding names (resources are the keys indented by two spaces)
    starts = [i for i, text in enumerate(lines) if text.startswith('  "') and text.endswith("{")]
    owner = max(i for i in starts if i < int(line))
    assert lines[owner].strip().startswith('"VllmSlice1TaskDefinition')


def test_parseable_and_json_output(broken: Path) -> None:
    _, parseable, _ = run("lint", "--format", "parseable", str(broken))
    first = parseable.splitlines()[0].split(":", 6)
    assert first[0] == str(broken) and first[5] == "E9121" and "NEURON021" in first[6]
    status, out, _ = run("lint", "--json", str(broken))
    findings = json.loads(out)
    assert status == EXIT_CONFLICT
    assert [(f["rule"], f["severity"], f["cfn_lint_id"]) for f in findings] == [
        ("NEURON021", "error", "E9121"),
        ("NEURON109", "warning", "W9209"),
    ]
    assert findings[0]["location"].endswith("/Properties/PlacementConstraints")


def test_warnings_alone_exit_0_and_can_be_ignored(tmp_path: Path) -> None:
    template = with_resources(
        ecs_template(),
        Task=manual_task(containers=[container(devices=[0], Environment=[{"Name": "DB_PASSWORD", "Value": "x"}])]),
        Svc=service("Task"),
    )
    path = tmp_path / "t.json"
    path.write_text(json.dumps(template))
    status, out, _ = run("lint", str(path))
    assert status == EXIT_OK and out.startswith("W9209 Task/model: environment variable DB_PASSWORD")
    assert run("lint", "--ignore", "NEURON109", str(path)) == (EXIT_OK, "", "")
    assert run("lint", "--ignore", "W9209", str(path)) == (EXIT_OK, "", "")


def test_yaml_templates_with_short_forms(tmp_path: Path) -> None:
    path = tmp_path / "service.yaml"
    path.write_text(
        "Resources:\n"
        "  Task:\n"
        "    Type: AWS::ECS::TaskDefinition\n"
        "    Properties:\n"
        "      RequiresCompatibilities: [EC2]\n"
        "      Memory: '2048'\n"
        "      PlacementConstraints:\n"
        "        - Type: memberOf\n"
        "          Expression: attribute:ecs.instance-type == inf2.xlarge\n"
        "      ContainerDefinitions:\n"
        "        - Name: model\n"
        "          Image: !Sub '${AWS::AccountId}.dkr.ecr.${AWS::Region}.amazonaws.com/model:1'\n"
        "          LinuxParameters:\n"
        "            Devices:\n"
        "              - HostPath: /dev/neuron0\n"
        "              - HostPath: /dev/neuron1\n"
        "  Service:\n"
        "    Type: AWS::ECS::Service\n"
        "    Properties:\n"
        "      Cluster: !Ref Cluster\n"
        "      TaskDefinition: !Ref Task\n"
        "      DesiredCount: 2\n"
    )
    status, out, _ = run("lint", "--format", "parseable", str(path))
    assert status == EXIT_CONFLICT
    rules = {line.split(":")[5] for line in out.splitlines()}
    assert rules == {"E9109", "E9122"}  # /dev/neuron1 on a one-chip type; two copies without distinctInstance
    assert f"{path}:16:17:" in out  # the line of /dev/neuron1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["lint"], "lint needs at least one template"),
        (["lint", "missing.json"], "missing.json: no such file or directory"),
        (["lint", "--ignore", "NEURON999", "README.md"], "--ignore NEURON999: no such rule"),
        (["lint", "pyproject.toml"], "pyproject.toml: "),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    status, _, err = run(*argv)
    assert status == EXIT_USAGE
    assert message in err


def test_list_rules_names_every_template_rule() -> None:
    from neuron_constructs.knowledge.rules import RULES

    _, out, _ = run("lint", "--list-rules")
    assert [line.split()[1] for line in out.splitlines()] == [r.id for r in RULES if r.on_template]


def test_lint_loads_neither_the_cdk_nor_boto3(broken: Path) -> None:
    code = (
        "import sys; from neuron_constructs.tools.cli import main;"
        f"status = main(['lint', {str(broken)!r}]);"
        "assert not {'aws_cdk', 'jsii', 'boto3', 'botocore'} & set(sys.modules), sorted(sys.modules);"
        "sys.exit(status)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == EXIT_CONFLICT, result.stderr


def test_console_script_exit_status(broken: Path, example_dir: Path) -> None:
    assert subprocess.run([NEURON_ECS, "lint", str(example_dir)], capture_output=True).returncode == EXIT_OK
    assert subprocess.run([NEURON_ECS, "lint", str(broken)], capture_output=True).returncode == EXIT_CONFLICT


def test_the_cfn_lint_rule_pack_reports_the_same_findings(broken: Path) -> None:
    """cfn-lint running the Neuron rule pack alone (every example passes cfn-lint with the pack and cfn-lint's own
    rules: test_examples.py::test_cfn_lint_with_the_neuron_rule_pack_reports_nothing)."""
    from cfnlint.api import ManualArgs, lint
    from cfnlint.rules import RulesCollection

    pack = RulesCollection()
    pack.create_from_module("neuron_constructs.checks.cfn_lint_rules")
    matches = lint(broken.read_text(), rules=pack, config=ManualArgs(regions=["us-east-1"]))
    assert sorted(m.rule.id for m in matches) == ["E9121", "W9209"]


def test_templates_linted_together_resolve_each_others_exports(tmp_path: Path) -> None:
    base = ecs_template()
    base["Outputs"] = {"Provider": {"Value": {"Ref": "Asg"}, "Export": {"Name": "Base:Provider"}}}
    base["Resources"].update(with_resources({"Resources": {}}, Task=manual_task())["Resources"])
    other = {
        "Resources": {
            "Task": manual_task(),
            "Svc": service("Task", capacity=None, distinct=False, count=2),
        }
    }
    other["Resources"]["Svc"]["Properties"].pop("LaunchType")
    other["Resources"]["Svc"]["Properties"]["CapacityProviderStrategy"] = [
        {"CapacityProvider": {"Fn::ImportValue": "Base:Provider"}, "Weight": 1}
    ]
    (tmp_path / "Base.template.json").write_text(json.dumps(base))
    (tmp_path / "Other.template.json").write_text(json.dumps(other))
    status, out, _ = run("lint", "--format", "parseable", str(tmp_path))
    assert status == EXIT_CONFLICT
    lines = [line for line in out.splitlines() if ":E9122:" in line]
    assert len(lines) == 1 and lines[0].startswith(str(tmp_path / "Other.template.json"))


def test_an_unreadable_file_is_a_usage_error_and_the_others_are_still_checked(broken: Path, tmp_path: Path) -> None:
    (tmp_path / "Empty.template.json").write_text("")
    (tmp_path / "Broken.template.json").write_text(broken.read_text())
    status, out, err = run("lint", str(tmp_path))
    assert status == EXIT_USAGE
    assert out.startswith("E9121 ")
    assert "Empty.template.json: the file is empty" in err


def test_a_device_file_is_read_not_refused() -> None:
    status, _, err = run("lint", "/dev/null")
    assert status == EXIT_USAGE and "the file is empty" in err


def test_a_stage_assembly_inside_cdk_out_is_linted(broken: Path, tmp_path: Path) -> None:
    """A Stage writes its stacks to ``cdk.out/assembly-<Stage>/``; linting ``cdk.out`` reaches them."""
    stage = tmp_path / "assembly-Prod"
    stage.mkdir()
    (stage / broken.name).write_text(broken.read_text())
    status, out, _ = run("lint", str(tmp_path))
    assert status == EXIT_CONFLICT
    assert "assembly-Prod/NeuronSlicedInf2.template.json" in out


def _on_core(cores: str) -> dict[str, Any]:
    environment = [{"Name": "NEURON_RT_VISIBLE_CORES", "Value": cores}]
    return manual_task(containers=[container(devices=[0], Environment=environment)])


@pytest.mark.parametrize(("second", "status"), [("1", EXIT_OK), ("0-1", EXIT_CONFLICT)])
def test_lint_passes_two_copies_on_one_chip_with_their_own_cores_and_fails_a_shared_core(
    second: str, status: int, tmp_path: Path
) -> None:
    template = with_resources(ecs_template(), A=_on_core("0"), B=_on_core(second), ASvc=service("A"), BSvc=service("B"))
    path = tmp_path / "fleet.template.json"
    path.write_text(json.dumps(template))
    code, out, _ = run("lint", str(path))
    assert code == status, out
    assert ("NEURON023" in out) is (status == EXIT_CONFLICT)
    if status == EXIT_CONFLICT:
        assert "BSvc: it and ASvc both hold NeuronCore 0 of /dev/neuron0" in out


@pytest.mark.parametrize("kind", ["device", "too large"])
def test_lint_refuses_a_template_above_the_size_limit_without_reading_it_whole(kind: str, tmp_path: Path) -> None:
    """/dev/zero once read without limit into a MemoryError: it is read up to the limit, a regular file above it is
    not read at all; both are a usage error, quickly, with a sentence."""
    import time

    from neuron_constructs.checks.cfn_template import MAX_TEMPLATE_BYTES

    if kind == "device":
        path = Path("/dev/zero")
    else:
        path = tmp_path / "huge.template.json"
        with path.open("wb") as huge:
            huge.truncate(MAX_TEMPLATE_BYTES + 1)  # sparse: nothing written
    started = time.monotonic()
    status, _, err = run("lint", str(path))
    assert status == EXIT_USAGE and "Traceback" not in err, err
    assert "5,242,880 bytes a template can be" in err if kind == "device" else "above the 5,242,880" in err
    assert time.monotonic() - started < 2
