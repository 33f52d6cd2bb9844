"""``neuron-ecs lint`` and the cfn-lint rule pack: every example template passes, hand-broken copies fail."""

from __future__ import annotations

import copy
import functools
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cfn import container, ecs_template, manual_task, service, with_resources
from conftest import MEASURED_IN_CI, ROOT, workloads

from neuron_constructs.knowledge.rules import BY_ID
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


def test_every_example_template_passes(example_dir: Path, templates: dict[str, dict[str, Any]]) -> None:
    resources = sum(len(t["Resources"]) for t in templates.values())
    status, out, err = run("lint", str(example_dir))
    assert (status, err) == (EXIT_OK, "")
    checked = f"{len(templates)} templates, {resources:,} resources, {_RULES} rules checked"
    assert out == f"neuron-ecs lint: {checked}: no findings\n"


_RULES = sum(1 for rule in BY_ID.values() if rule.on_template)


def test_lint_ends_with_a_one_line_summary_of_what_it_checked_and_found(broken: Path) -> None:
    status, out, _ = run("lint", str(broken))
    assert status == EXIT_CONFLICT
    assert out.splitlines()[-1].startswith("neuron-ecs lint: 1 template, ")
    assert out.splitlines()[-1].endswith(f"{_RULES} rules checked: 1 error, 1 warning")
    for form in (["--json"], ["--format", "parseable"]):  # stdout stays what a parser reads; the summary on stderr
        _, out, err = run("lint", *form, str(broken))
        assert "rules checked" not in out and err.startswith("neuron-ecs lint: 1 template, ")


def test_quiet_lint_prints_findings_only(broken: Path, example_dir: Path) -> None:
    assert run("lint", "--quiet", str(example_dir)) == (EXIT_OK, "", "")
    status, out, err = run("lint", "-q", "--json", str(broken))
    assert status == EXIT_CONFLICT and err == "" and len(json.loads(out)) == 2


def test_a_broken_copy_fails_the_way_cfn_lint_prints(broken: Path) -> None:
    status, out, _ = run("lint", str(broken))
    assert status == EXIT_CONFLICT
    *blocks, summary = out.strip().split("\n\n")
    assert [b.split()[0] for b in blocks] == ["E9121", "W9209"] and summary.startswith("neuron-ecs lint: ")
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
    assert run("lint", "--quiet", "--ignore", "NEURON109", str(path)) == (EXIT_OK, "", "")
    status, out, _ = run("lint", "--ignore", "W9209", str(path))
    assert status == EXIT_OK and out.endswith(f"{_RULES - 1} rules checked: no findings\n")


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

    from neuron_constructs.checks.template_loading import MAX_TEMPLATE_BYTES

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


# --- any file: a sentence and exit 0, 2 or 3, within 2 s of CPU and 256 MB ---------------------------------------


def _alias_bomb(width: int, levels: int) -> str:
    """Billion laughs: each level a list of ``width`` aliases of the one before (``width ** levels`` strings)."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join([*lines, "Resources: {}", ""])


@functools.cache
def _hostile_inputs() -> dict[str, tuple[str, str]]:
    """Name -> (file text, what the sentence on stderr says; empty for a file that checks clean)."""
    chain = "[" * 99 + "0" + "]" * 99
    template = with_resources(ecs_template(), T=manual_task(containers=[container(devices=[0])]))
    services = {f"S{n}": service("T") for n in range(500 - len(template["Resources"]))}
    return {
        "alias bomb, 9 wide, 9 deep": (_alias_bomb(9, 9), "is a YAML alias, which CloudFormation does not accept"),
        "alias bomb, 10 wide, 10 deep": (_alias_bomb(10, 10), "is a YAML alias"),
        "JSON nested 100,000 deep": ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested more than 100 levels deep"),
        "JSON lists nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "neither JSON nor YAML"),
        "YAML nested 100,000 deep": ("Resources: {}\na: " + "[" * 100_000 + "]" * 100_000, "neither JSON nor YAML"),
        "YAML nested 101 deep": ("Resources: {}\na: " + "[" * 100 + "]" * 100, "nested more than 100 levels deep"),
        "5 MiB of one-element lists": (
            '{"Resources": {}, "a": [' + "[0]," * 1_300_000 + "[0]]}",
            "more than 200,000 mappings and lists",
        ),
        "lists 99 deep, 2,000 of them": (
            '{"Resources": {}, "a": [' + ",".join([chain] * 2000) + "]}",
            "nested more than 100",
        ),
        "5 MiB of numbers": ('{"Resources": {}, "a": [' + "1," * 2_600_000 + "1]}", ""),
        "5 MiB of strings in one line": ('{"Resources": {}, "a": ["' + '", "'.join(["ab"] * 870_000) + '"]}', ""),
        "200,000 YAML values": ("Resources: {}\na: [" + "1, " * 200_000 + "1]\n", "more than 100,000 values"),
        "two YAML documents": ("Resources: {}\n---\nResources: {}\n", "a second YAML document"),
        "a complex key": ("Resources: {}\n? [a]\n: b\n", "a key that is a list or mapping"),
        "dates and bytes where names go": (
            "Resources:\n  S: {Type: AWS::ECS::Service, Properties: {Cluster: 2020-01-01, TaskDefinition: !!binary "
            "aGk=}}\n  T: {Type: AWS::ECS::TaskDefinition, Properties: {Cpu: 2020-01-01, ContainerDefinitions: "
            "[{Name: !!binary aGk=, Environment: [{Name: NEURON_RT_VISIBLE_CORES, Value: 2020-01-01}]}]}}\n",
            "",
        ),
        "a Python tag": ("Resources: !!python/object:os.system {}\n", "is not one a CloudFormation template holds"),
        "500 services on one chip": (json.dumps(with_resources(template, **services)), ""),
        "501 resources": (json.dumps({"Resources": {f"R{n}": {} for n in range(501)}}), "declares 501 resources"),
        "a core range 300 million long": (
            json.dumps(
                with_resources(
                    ecs_template(),
                    T=manual_task(
                        containers=[
                            container(
                                devices=[0],
                                Environment=[{"Name": "NEURON_RT_VISIBLE_CORES", "Value": "0-300000000"}],
                            )
                        ]
                    ),
                    S=service("T"),
                )
            ),
            "",
        ),
        "a device a million chips up": (
            json.dumps(
                with_resources(ecs_template(), T=manual_task(containers=[container(devices=[999999])]), S=service("T"))
            ),
            "",
        ),
        "digits of other scripts where numbers go": (
            json.dumps(
                with_resources(
                    ecs_template(),
                    T=manual_task(
                        containers=[
                            container(devices=[0], Environment=[{"Name": "NEURON_RT_NUM_CORES", "Value": "\u00b2"}])
                        ]
                    ),
                    S=service("T", DesiredCount="\u00b2", capacity="Asg"),
                )
            ).replace('"Cpu": "1024"', '"Cpu": "\u0663"'),
            "",
        ),
    }


_RUN_AND_REPORT_PEAK = """
import io, json, resource, sys
from neuron_constructs.tools.cli import main

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

path, results = sys.argv[1], {}
for command in ("lint", "plan"):
    sys.stdout, sys.stderr, started = io.StringIO(), io.StringIO(), cpu()
    status = main([command, path])
    results[command] = [status, sys.stderr.getvalue(), cpu() - started]
with open("/proc/self/status") as own:
    peak = next(line for line in own if line.startswith("VmHWM:"))
sys.__stdout__.write(json.dumps({"peak_kb": int(peak.split()[1]), "commands": results}))
"""


def _measured(path: Path) -> tuple[dict[str, tuple[int, str, float]], int]:
    """``neuron-ecs lint PATH`` then ``neuron-ecs plan PATH`` in one process limited to 256 MB of address space:
    each command's exit status, stderr and CPU seconds, and the process's peak resident MB (its own ``VmHWM``, which
    covers both commands: ``ru_maxrss`` would count the pytest process it forked from)."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (256 * 1024 * 1024, 256 * 1024 * 1024))

    result = subprocess.run(
        [sys.executable, "-c", _RUN_AND_REPORT_PEAK, str(path)],
        capture_output=True,
        preexec_fn=limit,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    commands = {command: (status, err, cpu_s) for command, (status, err, cpu_s) in report["commands"].items()}
    return commands, report["peak_kb"] // 1024


_MEASURED = (
    "alias bomb, 10 wide, 10 deep",
    "JSON nested 100,000 deep",
    "5 MiB of numbers",
    "500 services on one chip",
    "a core range 300 million long",
    "a device a million chips up",
)
"""The inputs measured in a process of their own (the others are checked in this one, for time)."""


def _check_hostile(name: str, command: str, status: int, err: str, path: Path) -> None:
    sentence = _hostile_inputs()[name][1]
    assert status in (EXIT_OK, EXIT_USAGE, EXIT_CONFLICT), err
    assert "Traceback" not in err and "Error:" not in err
    if sentence:
        assert status == EXIT_USAGE
        assert err.startswith(f"neuron-ecs {command}: {path}: ") and err.count("\n") == 1 and sentence in err, err
    else:
        assert err == ""


@MEASURED_IN_CI
@pytest.mark.parametrize("name", _MEASURED)
def test_the_worst_files_are_checked_within_2_s_and_256_mb(name: str, tmp_path: Path) -> None:
    """``lint`` and ``plan`` of each in a process of its own, its address space limited to 256 MB; CPU time measured
    per command (the machine may be busy)."""
    path = tmp_path / "hostile.template"
    path.write_text(_hostile_inputs()[name][0])
    commands, peak_mb = _measured(path)
    assert peak_mb < 256, peak_mb
    for command, (status, err, cpu_s) in commands.items():
        assert cpu_s < 2, (command, cpu_s)
        _check_hostile(name, command, status, err, path)


@pytest.mark.parametrize("name", [name for name in _hostile_inputs() if name not in _MEASURED])
def test_any_file_is_an_exit_status_and_a_sentence(name: str, tmp_path: Path) -> None:
    path = tmp_path / "hostile.template"
    path.write_text(_hostile_inputs()[name][0])
    for command in ("lint", "plan"):
        started = time.process_time()
        status, err = _in_process(command, path)
        assert time.process_time() - started < 2
        _check_hostile(name, command, status, err, path)


# --- hypothesis: random bytes, random JSON and YAML shapes, hostile cdk.out folders --------------------------------

_WORDS = (
    "Resources",
    "Type",
    "Properties",
    "Metadata",
    "Parameters",
    "Outputs",
    "Export",
    "Name",
    "Value",
    "Ref",
    "Fn::GetAtt",
    "Fn::ImportValue",
    "Fn::Join",
    "ContainerDefinitions",
    "LinuxParameters",
    "Devices",
    "HostPath",
    "Environment",
    "ResourceRequirements",
    "PlacementConstraints",
    "Expression",
    "Cluster",
    "TaskDefinition",
    "DesiredCount",
    "CapacityProviderStrategy",
    "CapacityProvider",
    "AutoScalingGroupProvider",
    "AutoScalingGroupArn",
    "LaunchTemplate",
    "LaunchTemplateId",
    "LaunchTemplateData",
    "InstanceType",
    "MixedInstancesPolicy",
    "Overrides",
    "ManagedInstancesProvider",
    "InstanceLaunchTemplate",
    "InstanceRequirements",
    "AcceleratorNames",
    "AllowedInstanceTypes",
    "DeploymentConfiguration",
    "MaximumPercent",
    "ScalableDimension",
    "ResourceId",
    "MaxCapacity",
    "NeuronConstructs",
    "aws:cdk:path",
    "cfn-lint",
    "AWS::ECS::TaskDefinition",
    "AWS::ECS::Service",
    "AWS::ECS::CapacityProvider",
    "AWS::AutoScaling::AutoScalingGroup",
    "AWS::EC2::LaunchTemplate",
    "AWS::ApplicationAutoScaling::ScalableTarget",
    "AWS::ECS::ClusterCapacityProviderAssociations",
    "/dev/neuron0",
    "/dev/neuron99",
    "inf2.xlarge",
    "trn2.48xlarge",
    "NeuronDevice",
    "memberOf",
    "distinctInstance",
    "attribute:ecs.instance-type == inf2.xlarge",
    "ecs:service:DesiredCount",
    "NEURON_RT_VISIBLE_CORES",
    "NEURON_LOGICAL_NC_CONFIG",
    "0-1",
    "MANAGED_INSTANCES",
    "EC2",
)


def _shapes() -> Any:
    from hypothesis import strategies as st

    words = st.sampled_from(_WORDS)
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-3, 70)
        | st.floats(allow_nan=True)
        | words
        | st.text(max_size=8)
        | st.dates()  # YAML reads 2020-01-01 unquoted as a date
        | st.binary(max_size=4)  # and !!binary as bytes
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(words | st.text(max_size=6), inner, max_size=5),
        max_leaves=40,
    )


def _templates() -> Any:
    """Random values, some shaped as a template: resources of the ECS types with random properties."""
    from hypothesis import strategies as st

    resource = st.fixed_dictionaries(
        {"Type": st.sampled_from([w for w in _WORDS if w.startswith("AWS::")])},
        optional={"Properties": _shapes(), "Metadata": _shapes()},
    )
    template = st.fixed_dictionaries(
        {"Resources": st.dictionaries(st.sampled_from(["A", "B", "C", "D"]), resource | _shapes(), max_size=4)},
        optional={"Parameters": _shapes(), "Outputs": _shapes()},
    )
    return template | _shapes()


def _in_process(command: str, *paths: Path, options: tuple[str, ...] = ()) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([command, *options, *map(str, paths)], stdout=out, stderr=err)
    return status, err.getvalue()


def _survives(*paths: Path) -> None:
    """``lint``, ``plan`` and ``plan --rollout`` of ``paths``: exit 0, 2 or 3, every stderr line a sentence naming
    the command; an exception fails the test (the CLI does not catch them for these commands)."""
    for command, options in (("lint", ()), ("plan", ()), ("plan", ("--rollout",))):
        status, err = _in_process(command, *paths, options=options)
        assert status in (EXIT_OK, EXIT_USAGE, EXIT_CONFLICT)
        assert all(line.startswith(f"neuron-ecs {command}: ") for line in err.splitlines()), err
        assert (status == EXIT_USAGE) == bool(err), err


def _fuzz_settings() -> Any:
    from datetime import timedelta

    from hypothesis import HealthCheck, settings

    return settings(max_examples=40, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])


def test_random_bytes_never_break_lint_or_plan() -> None:
    import tempfile

    from hypothesis import given
    from hypothesis import strategies as st

    @_fuzz_settings()
    @given(data=st.binary(max_size=400) | st.text(max_size=200).map(str.encode))
    def check(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "random.template.json"
            path.write_bytes(data)
            _survives(path)

    check()


def test_random_json_and_yaml_shapes_never_break_lint_or_plan() -> None:
    import tempfile

    import yaml
    from hypothesis import given
    from hypothesis import strategies as st

    @_fuzz_settings()
    @given(document=_templates(), as_yaml=st.booleans())
    def check(document: Any, as_yaml: bool) -> None:
        text = yaml.safe_dump(document) if as_yaml else json.dumps(document, default=str)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / ("t.yaml" if as_yaml else "t.template.json")
            path.write_text(text)
            _survives(path)

    check()


def test_hostile_cdk_out_folders_never_break_lint_or_plan() -> None:
    """A cloud assembly's manifest of any shape (artifacts a list, metadata a string, properties missing, a metadata
    file outside the folder, a directory or pipe where a file should be, a symlink loop) beside a template."""
    import os
    import tempfile

    from hypothesis import given
    from hypothesis import strategies as st

    name = "App.template.json"
    files = st.sampled_from(["App.metadata.json", "../outside.json", "/dev/zero", "loop", "dir", "pipe", "", name])
    artifact = st.fixed_dictionaries(
        {},
        optional={
            "type": st.just("aws:cloudformation:stack") | _shapes(),
            "properties": st.fixed_dictionaries({}, optional={"templateFile": st.just(name) | _shapes()}) | _shapes(),
            "metadata": st.dictionaries(st.text(max_size=6), _shapes(), max_size=3) | _shapes(),
            "additionalMetadataFile": files | _shapes(),
        },
    )
    manifest = st.fixed_dictionaries({}, optional={"artifacts": st.dictionaries(st.text(max_size=4), artifact)}) | (
        _shapes()
    )
    template = with_resources(ecs_template(), T=manual_task(containers=[container(devices=[0])]), S=service("T"))

    @_fuzz_settings()
    @given(
        manifest=manifest,
        metadata=_shapes(),
        extra=st.sets(
            st.sampled_from(["dir", "pipe", "loop", "dir.template.json", "pipe.template.json", "loop.template.json"])
        ),
    )
    def check(manifest: Any, metadata: Any, extra: set[str]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder) / "cdk.out"
            root.mkdir()
            (root / name).write_text(json.dumps(template))
            (root / "manifest.json").write_text(json.dumps(manifest, default=str))
            (root / "App.metadata.json").write_text(json.dumps(metadata, default=str))
            for entry in extra:
                if entry.startswith("dir"):
                    (root / entry).mkdir()
                elif entry.startswith("pipe"):
                    os.mkfifo(root / entry)
                else:
                    (root / entry).symlink_to(entry)
            _survives(root)

    check()


def test_a_yaml_alias_is_refused_with_where_it_is(tmp_path: Path) -> None:
    """CloudFormation does not take aliases (AWS CloudFormation User Guide, "Template format": YAML): neither does
    lint, rather than expand them."""
    path = tmp_path / "aliases.yaml"
    path.write_text("Resources:\n  A: &a {Type: AWS::S3::Bucket}\n  B: *a\n")
    status, _, err = run("lint", str(path))
    assert status == EXIT_USAGE
    assert err == (
        f"neuron-ecs lint: {path}: line 3: *a is a YAML alias, which CloudFormation does not accept in a template: "
        "write the value out\n"
    )


def test_many_services_on_one_device_get_a_finding_per_other_service_up_to_three_then_one(tmp_path: Path) -> None:
    """NEURON023 per pair would be quadratic: a service names three others, then one finding names the rest."""
    template = with_resources(ecs_template(), T=manual_task(containers=[container(devices=[0])]))
    template = with_resources(template, **{f"S{n}": service("T") for n in range(7)})
    path = tmp_path / "crowd.template.json"
    path.write_text(json.dumps(template))
    status, out, _ = run("lint", "--json", str(path))
    assert status == EXIT_CONFLICT
    shared = [f for f in json.loads(out) if f["rule"] == "NEURON023"]
    last = [f["message"] for f in shared if f["resource"] == "S6"]
    assert len(last) == 4  # S0, S1, S2 named one by one; S3, S4, S5 in one
    assert "S6: it and 3 more services (S3, S4, S5) also hold its devices or NeuronCores" in last[-1]
    assert len(shared) == sum(min(n, 3) + (n > 3) for n in range(7))
