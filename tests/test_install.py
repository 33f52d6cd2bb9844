"""End to end: the README's install lines, run verbatim where only Python, pip and npm are installed.

A copy of the repository's tracked files stands in for the clone in ``./neuron_constructs``; the lines run in a
directory next to it with nothing of the test environment on ``PATH``. Then the README's complete app synthesizes
through the CDK CLI they installed, and the wheel ``make dist`` builds installs in its place.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from test_readme import README, readme_app

pytestmark = pytest.mark.e2e


def install_lines() -> str:
    """The bash block of the README's "Installing it in your project"."""
    section = README.read_text().split("## Installing it in your project", 1)[1]
    return section.split("```bash\n", 1)[1].split("```", 1)[0]


def _machine_environment() -> dict[str, str]:
    """This machine's environment without the test run's virtualenv, Node.js pin or anything of the repository."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH", "JSII_NODE", "PYTHONHOME") and not key.startswith("PYTEST")
    }
    path = [entry for entry in os.environ["PATH"].split(os.pathsep) if not Path(entry).is_relative_to(ROOT)]
    environment["PATH"] = os.pathsep.join(path)
    environment["PIP_CONSTRAINT"] = str(ROOT / "constraints.txt")  # the versions the suite tests, from pip's cache
    return environment


def _activated(project: str) -> str:
    """The lines that put what the install lines installed in ``project`` to use, in a new shell."""
    return (
        f". {project}/.venv/bin/activate\n"
        f"export JSII_NODE={project}/node_modules/.bin/node PATH={project}/node_modules/.bin:$PATH\n"
    )


def _bash(script: str, *, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{script}"],
        cwd=cwd,
        env=_machine_environment(),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project directory where the README's install lines ran, next to the clone ``./neuron_constructs``."""
    project = tmp_path_factory.mktemp("project")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, tracked.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = project / "neuron_constructs" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    result = _bash(install_lines(), cwd=project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return project


def test_the_install_lines_give_the_package_node_22_and_the_cdk_cli(project: Path) -> None:
    result = _bash(
        _activated("$PWD")
        + "python -c 'import neuron_constructs; print(neuron_constructs.__file__)'\nnode --version\ncdk --version",
        cwd=project,
    )
    assert result.returncode == 0, result.stderr
    module, node, _cdk = result.stdout.split("\n")[:3]
    assert Path(module).is_relative_to(project / ".venv")  # installed, not imported from the clone
    assert node.startswith("v22.")
    assert "end-of-life" not in result.stderr


def test_the_readme_app_synthesizes_with_what_they_installed(project: Path) -> None:
    app_dir = project / "app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(readme_app())
    (app_dir / "cdk.json").write_text(json.dumps({"app": "python app.py"}))
    result = _bash(_activated("$PWD/..") + "cdk synth --quiet --no-notices", cwd=app_dir)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    template = json.loads((app_dir / "cdk.out" / "LlmService.template.json").read_text())
    assert "AWS::ECS::Service" in {r["Type"] for r in template["Resources"].values()}


def test_the_wheel_make_dist_builds_installs_in_its_place(project: Path) -> None:
    result = _bash(
        ". .venv/bin/activate\nmake -C neuron_constructs dist\npip install --quiet neuron_constructs/dist/*.whl\n"
        "pip show --files neuron-constructs",
        cwd=project,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "neuron_constructs/py.typed" in result.stdout
    assert "Editable project location" not in result.stdout
