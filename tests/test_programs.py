"""The programs the library ships to run elsewhere (:mod:`neuron_constructs.programs`): each loads on the standard
library alone, as a node, a container or Lambda runs it, and each has its row in the package's table and its place in
the import contracts."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import neuron_constructs.programs
from neuron_constructs.programs.carrying import program_source

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "neuron_constructs" / "programs"
PROGRAMS = sorted(p.name for p in FOLDER.glob("*.py") if p.name not in {"__init__.py", "carrying.py"})

# Runs the program's source from stdin under a name other than __main__ (its definitions and imports, not its main),
# then names every module loaded that is not the standard library's.
_LOADER = """import sys
namespace = {"__name__": "carried"}
exec(compile(sys.stdin.read(), "<carried program>", "exec"), namespace)
others = sorted(m for m in sys.modules if m.split(".")[0] not in sys.stdlib_module_names | {"__main__"})
print(" ".join(others) or "standard library only")
"""


def _load_alone(source: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``python3 -I -S``: no PYTHON* variables, no user or site packages, no working directory on the path, so neither
    this package nor anything installed beside it can be imported."""
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", _LOADER],
        input=source,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


def test_the_folder_holds_the_five_programs() -> None:
    assert PROGRAMS == [
        "engine_metrics.py",
        "metric_publisher.py",
        "precompile_hook.py",
        "preflight.py",
        "smoke_test.py",
    ]


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_program_as_carried_loads_with_the_standard_library_alone(program: str, tmp_path: Path) -> None:
    # GIVEN the program's source as a template carries it
    source = program_source("neuron_constructs.programs", program)
    # WHEN an interpreter without this package or any installed package loads it
    result = _load_alone(source, tmp_path)
    # THEN it loads, and nothing but the standard library came with it
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "standard library only"


@pytest.mark.parametrize(
    "source",
    ["from neuron_constructs.knowledge import rules\n", "import aws_cdk\n", "import boto3\n"],
)
def test_a_program_that_needs_the_library_or_a_package_does_not_load_alone(source: str, tmp_path: Path) -> None:
    result = _load_alone(source, tmp_path)
    assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_program_has_its_row_in_the_package_table(program: str) -> None:
    table = neuron_constructs.programs.__doc__ or ""
    assert f"* - :mod:`~neuron_constructs.programs.{program.removesuffix('.py')}`" in table


def test_the_independence_contract_names_every_program() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    independent = [c["modules"] for c in contracts if c["type"] == "independence"]
    modules = [f"neuron_constructs.programs.{p.removesuffix('.py')}" for p in [*PROGRAMS, "carrying.py"]]
    assert sorted(independent[0]) == sorted(modules)
