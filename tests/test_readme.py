"""The README's front door: its tables match the code, its commands exist."""

from __future__ import annotations

import re
from typing import Any

from conftest import ROOT

from neuron_constructs.tools.tables import rewrite


def test_readme_tables_are_generated_from_the_code() -> None:
    text = (ROOT / "README.md").read_text()
    assert rewrite(text) == text, "run `make readme-tables`"


def test_readme_commands_are_make_targets() -> None:
    readme = (ROOT / "README.md").read_text()
    top = readme.split("```bash", 1)[1].split("```", 1)[0]
    targets = re.findall(r"^make (\S+)", top, re.M)
    assert targets == ["deploy-local", "test-all"]
    assert "make test-all" in (ROOT / ".ci" / "run").read_text()  # CI runs the README's test command
    makefile = (ROOT / "Makefile").read_text()
    for target in targets:
        assert re.search(rf"^{target}:", makefile, re.M)


def test_readme_compliance_table_is_what_cdk_nag_reports(validation_report: dict[str, Any]) -> None:
    from compliance_report import rewrite as rewrite_compliance

    text = (ROOT / "README.md").read_text()
    assert rewrite_compliance(text, validation_report) == text, "run `make compliance-report`"


def test_readme_security_claims_name_tests_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Secure by default", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`((?:tests/\w+\.py::)?test_\w+)`", section)
    assert len(named) >= 10
    for name in named:
        module, _, test = name.rpartition("::") if "::" in name else ("tests/test_examples.py", "", name)
        assert re.search(rf"^def {test}\(", (ROOT / module).read_text(), re.M), name
