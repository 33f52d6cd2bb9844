"""The README and the docs pages: their tables match the code, their commands exist, their app synthesizes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import ROOT, resources
from docs_apps import GROUP, run_app

from neuron_constructs import NeuronConfigurationError
from neuron_constructs.tools.tables import TABLES, rewrite, tables_in

README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_WORD_LIMIT = 3000


def docs_page(name: str) -> str:
    """The text of ``docs/<name>``."""
    return (DOCS / name).read_text()


def readme_app() -> str:
    """The complete app of the README, as written there."""
    section = README.read_text().split("## A complete app", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_docs_tables_are_generated_from_the_code_and_each_is_in_one_page() -> None:
    found: list[str] = []
    for page in [*sorted(DOCS.glob("*.md")), README]:
        text = page.read_text()
        assert rewrite(text) == text, f"run `make docs-tables` ({page.name})"
        found += tables_in(text)
    assert sorted(found) == sorted(TABLES)


def test_readme_commands_are_make_targets() -> None:
    readme = README.read_text()
    top = readme.split("```bash", 1)[1].split("```", 1)[0]
    targets = re.findall(r"^make (\S+)", top, re.M)
    assert targets == ["deploy-local", "test-all"]
    assert "make test-all" in (ROOT / ".ci" / "run").read_text()  # CI runs the README's test command
    makefile = (ROOT / "Makefile").read_text()
    for target in targets:
        assert re.search(rf"^{target}:", makefile, re.M)
    assert re.search(r"^test-all: test docs test-e2e$", makefile, re.M)  # CI builds the docs site


def test_the_readme_is_a_front_door_of_at_most_3000_words_linking_every_docs_page() -> None:
    readme = README.read_text()
    assert len(readme.split()) <= README_WORD_LIMIT
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", readme))
    assert linked == {p.name for p in DOCS.glob("*.md")} - {"index.md"}


def test_readme_compliance_table_is_what_cdk_nag_reports(validation_report: dict[str, Any]) -> None:
    from compliance_report import rewrite as rewrite_compliance

    text = docs_page("security.md")
    assert rewrite_compliance(text, validation_report) == text, "run `make compliance-report`"


def test_readme_s_nist_counts_are_what_cdk_nag_reports(validation_report: dict[str, Any]) -> None:
    """The README's count of open NIST 800-53 findings and rules is this synthesis' (checkov's count needs checkov,
    which only ``make compliance-report`` installs; that report rewrites both)."""
    from compliance_report import NIST_PACK, counts

    found, _ = counts(validation_report, NIST_PACK)
    said = re.search(r"NIST 800-53 rev 5 pack reports (\d+) findings \((\d+) rules\)", README.read_text())
    assert said, "the README states the NIST counts"
    assert (int(said.group(1)), int(said.group(2))) == (found.total(), len(found)), "run `make compliance-report`"


def test_security_claims_name_tests_that_exist() -> None:
    """Every test the page names, in the claims table and in the prose after it."""
    page = docs_page("security.md")
    section = page.split("## The claims", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"`((?:tests/\w+\.py::)?test_\w+)`", section)) >= 10
    named = re.findall(r"`((?:tests/\w+\.py::)?test_\w+)`", page)
    for name in named:
        module, _, test = name.rpartition("::") if "::" in name else ("tests/test_examples.py", "", name)
        assert re.search(rf"^def {test}\(", (ROOT / module).read_text(), re.M), name


def test_every_module_has_its_place_in_the_api_reference() -> None:
    documented = set(
        re.findall(r"^\.\. automodule:: (\S+)", "".join(p.read_text() for p in DOCS.glob("reference/*.rst")), re.M)
    )
    package = ROOT / "neuron_constructs"
    modules = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in package.rglob("*.py")
        if p.name != "__main__.py"
    }
    assert modules == documented


@pytest.fixture(scope="module")
def readme_template() -> dict[str, Any]:
    """The README's app, run as ``python app.py`` runs it: its one stack's template."""
    directory = run_app(readme_app())
    return json.loads((directory / "LlmService.template.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.xdist_group(GROUP)
def test_the_readme_app_serves_an_llm_behind_an_internal_load_balancer(readme_template: dict[str, Any]) -> None:
    (balancer,) = resources(readme_template, "AWS::ElasticLoadBalancingV2::LoadBalancer").values()
    assert balancer["Properties"]["Scheme"] == "internal"
    (target_group,) = resources(readme_template, "AWS::ElasticLoadBalancingV2::TargetGroup").values()
    assert target_group["Properties"]["HealthCheckPath"] == "/health"
    services = [s for k, s in resources(readme_template, "AWS::ECS::Service").items() if k.startswith("Llm")]
    assert len(services) == 6  # six 2-chip replicas fill an inf2.48xlarge
    assert all(s["Properties"]["LoadBalancers"] for s in services)
    assert "LoadBalancerUrl" in "".join(readme_template["Outputs"])


@pytest.mark.xdist_group(GROUP)
def test_the_readme_app_scales_on_requests_and_neuron_utilization_and_is_monitored(
    readme_template: dict[str, Any],
) -> None:
    targets = resources(readme_template, "AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert {(t["Properties"]["MinCapacity"], t["Properties"]["MaxCapacity"]) for t in targets} == {(1, 2)}
    policies = resources(readme_template, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
    metrics = set()
    for policy in policies:
        tracking = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]
        predefined = tracking.get("PredefinedMetricSpecification", {}).get("PredefinedMetricType")
        metrics.add(predefined or tracking["CustomizedMetricSpecification"]["MetricName"])
    assert metrics == {"ALBRequestCountPerTarget", "NeuronCoreUtilization"}
    assert resources(readme_template, "AWS::CloudWatch::Dashboard")
    assert len(resources(readme_template, "AWS::CloudWatch::Alarm")) == 3


def test_the_readme_app_s_mistake_is_refused_with_the_message_the_readme_quotes() -> None:
    code = readme_app()
    assert "devices_per_task=2," in code
    quoted = " ".join(README.read_text().split("the synth\nstops with `", 1)[1].split("`.", 1)[0].split())
    before, _, fix = quoted.partition(" [NEURON016: ...] ")
    with pytest.raises(NeuronConfigurationError) as refused:
        exec(compile(code.replace("devices_per_task=2,", "devices_per_task=5,"), "app.py", "exec"), {})
    message = " ".join(str(refused.value).split())
    assert message.startswith(before) and message.endswith(fix)


@pytest.mark.e2e  # collects the whole suite again, in a process of its own
def test_the_readme_s_test_count_is_the_loop_s() -> None:
    import subprocess
    import sys

    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not e2e", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    count = int(re.search(r"^(\d+)(?:/\d+)? tests? collected", collected, re.M).group(1))  # type: ignore[union-attr]
    loop = README.read_text().split("<!-- test-loop:start -->", 1)[1].split("<!-- test-loop:end -->", 1)[0]
    assert f"({count} tests)" in loop
    assert f"{count} tests on this 2-core" in docs_page("performance.md")
