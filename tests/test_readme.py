"""The README's front door: its tables match the code, its commands exist."""

from __future__ import annotations

import re

from conftest import ROOT

from neuron_constructs.tables import rewrite


def test_readme_tables_are_generated_from_the_code() -> None:
    text = (ROOT / "README.md").read_text()
    assert rewrite(text) == text, "run `make readme-tables`"


def test_readme_commands_are_make_targets() -> None:
    readme = (ROOT / "README.md").read_text()
    top = readme.split("```bash", 1)[1].split("```", 1)[0]
    targets = re.findall(r"^make (\S+)", top, re.M)
    assert targets == ["deploy-local", "test"]
    makefile = (ROOT / "Makefile").read_text()
    for target in targets:
        assert re.search(rf"^{target}:", makefile, re.M)
