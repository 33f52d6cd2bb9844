"""Every Python block of the docs site and the README runs in the tests, so the pages cannot drift from the code.

Each fenced ``python`` block of ``docs/*.md`` and ``README.md`` is one of these (docs/architecture.md, "Code on the
pages"); the HTML comment on the line before the block says which, except for a complete app:

- a complete app (it makes an ``App`` and synthesizes it): run as ``python app.py`` runs it, once for every page
  that carries the same text;
- ``<!-- example: fragment in CONTEXT -->``: a fragment of a page's app, run in a stack of its own (``self`` and
  ``stack``) with the names ``CONTEXT`` gives it (``CONTEXTS`` below, each made only if the fragment uses it) and
  ``ecs``, ``ec2``, ``elbv2`` and the package's public names imported; a ``Stack`` class it defines is built in the
  app too. Every fragment shares one app, synthesized once, so the synth's checks judge them all;
- ``<!-- example: copy of PATH -->``: the text of ``PATH``, word for word (the tests of that example run it);
- ``<!-- example: excerpt of PATH -->``: every line is a line of ``PATH``;
- ``<!-- example: in tests/FILE.py::FUNCTION -->``: the same statements as that test function runs, or a block that
  test reads from the page and runs.

A block none of these describes fails, so a new block cannot go unchecked. The files a page includes whole
(``{literalinclude}``) are examples the tests build.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from docs_apps import GROUP, run_app

PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
_MARKER = re.compile(r"<!-- example: (.+?) -->\s*\Z")
_INCLUDE = re.compile(r"^```\{literalinclude\} (\S+)", re.M)


@dataclass(frozen=True)
class Block:
    """One ``python`` block of a page: where it is, its code, and the marker before it (``""`` for none)."""

    page: Path
    line: int
    code: str
    marker: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def kind(self) -> str:
        """``app``, ``fragment``, ``copy``, ``excerpt`` or ``test``; ``""`` for a block nothing describes."""
        if not self.marker:
            tree = ast.parse(self.code)
            makes_app = any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "App" for n in ast.walk(tree))
            synthesizes = any(
                isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "synth" for n in ast.walk(tree)
            )
            return "app" if makes_app and synthesizes else ""
        for kind, prefix in (("fragment", "fragment in "), ("copy", "copy of "), ("excerpt", "excerpt of ")):
            if self.marker.startswith(prefix):
                return kind
        return "test" if self.marker.startswith("in tests/") else ""

    @property
    def argument(self) -> str:
        """What the marker names: the context, the file or the test."""
        return self.marker.split(" of ", 1)[-1] if self.kind in ("copy", "excerpt") else self.marker.split(" ", 2)[-1]


def blocks_of(page: Path, text: str) -> list[Block]:
    """The ``python`` blocks of a page's text."""
    found = []
    for match in _BLOCK.finditer(text):
        before = text[: match.start()]
        marker = _MARKER.search(before)
        found.append(Block(page, before.count("\n") + 1, match.group(1), marker.group(1) if marker else ""))
    return found


BLOCKS = [block for page in PAGES for block in blocks_of(page, page.read_text())]


def _of(kind: str) -> list[Any]:
    return [pytest.param(b, id=b.where) for b in BLOCKS if b.kind == kind]


# --- the contexts fragments run in ----------------------------------------------------------------------------------

Given = Callable[[Any, dict[str, Any]], Any]


def _images() -> dict[str, Given]:
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs.knowledge.container_images import EMBEDDING, VLLM

    def image(uri: str) -> Given:
        return lambda stack, names: ecs.ContainerImage.from_registry(uri)

    return {
        "image": image(VLLM.uri),
        "vllm": image(VLLM.uri),
        "llm_image": image(VLLM.uri),
        "tei": image(EMBEDDING.uri),
        "embedding_image": image(EMBEDDING.uri),
        "reranker_image": image(EMBEDDING.uri),
        "port": lambda stack, names: [ecs.PortMapping(container_port=8080)],
    }


def _inf2_48_cluster() -> dict[str, Given]:
    """An inf2.48xlarge Auto Scaling capacity of up to four instances in ``neuron`` (also ``cluster``); ``task``, two
    chips of it behind port 8080; ``service``, a model on Managed Instances of the same cluster; ``alb``."""

    from neuron_constructs import (
        ManagedNeuronTaskDefinition,
        ManualNeuronTaskDefinition,
        NeuronCluster,
        NeuronLoadBalancer,
        NeuronService,
    )

    def neuron(stack: Any, names: dict[str, Any]) -> Any:
        cluster = NeuronCluster(stack, "GivenCluster")
        cluster.add_ec2_capacity("GivenInf2", instance_type="inf2.48xlarge", max_capacity=4)
        return cluster

    def task(stack: Any, names: dict[str, Any]) -> Any:
        definition = ManualNeuronTaskDefinition(
            stack, "GivenTask", instance_type="inf2.48xlarge", devices=[0, 1], cpu=8192, memory_mib=16384
        )
        definition.add_neuron_container(
            "model", image=given(stack, names, "image"), port_mappings=given(stack, names, "port")
        )
        return definition

    def service(stack: Any, names: dict[str, Any]) -> Any:
        cluster = given(stack, names, "neuron")
        capacity = cluster.add_managed_instances_capacity("GivenManaged", instance_types=["inf2.*"])
        definition = ManagedNeuronTaskDefinition(stack, "GivenManagedTask", cpu=8192, memory_mib=16384)
        definition.add_neuron_container(
            "model", image=given(stack, names, "image"), port_mappings=given(stack, names, "port")
        )
        return NeuronService(stack, "GivenService", cluster=cluster, task_definition=definition, capacity=capacity)

    return {
        **_images(),
        "neuron": neuron,
        "cluster": lambda stack, names: given(stack, names, "neuron"),
        "task": task,
        "service": service,
        "alb": lambda stack, names: NeuronLoadBalancer(stack, "GivenAlb", cluster=given(stack, names, "neuron")),
    }


def _inf2_cluster_and_a_model(*, with_container: bool) -> Callable[[], dict[str, Given]]:
    """``cluster`` with no capacity (``with_container``) or an inf2.xlarge one, and ``model``, one chip of an
    inf2.xlarge, with its model container on port 8080 or still without one."""

    def context() -> dict[str, Given]:
        from neuron_constructs import ManualNeuronTaskDefinition, NeuronCluster

        def cluster(stack: Any, names: dict[str, Any]) -> Any:
            made = NeuronCluster(stack, "GivenCluster")
            if not with_container:
                made.add_ec2_capacity("GivenInf2", instance_type="inf2.xlarge", max_capacity=2)
            return made

        def model(stack: Any, names: dict[str, Any]) -> Any:
            definition = ManualNeuronTaskDefinition(
                stack, "GivenModel", instance_type="inf2.xlarge", devices=[0], cpu=2048, memory_mib=8192
            )
            if with_container:
                definition.add_neuron_container(
                    "model", image=given(stack, names, "image"), port_mappings=given(stack, names, "port")
                )
            return definition

        return {**_images(), "cluster": cluster, "model": model}

    return context


CONTEXTS: dict[str, Callable[[], dict[str, Given]]] = {
    "a stack": lambda: {},
    "a stack with an image and a port": _images,
    "an inf2.48xlarge cluster": _inf2_48_cluster,
    "a cluster and a model": _inf2_cluster_and_a_model(with_container=True),
    "an inf2.xlarge cluster and a model without a container": _inf2_cluster_and_a_model(with_container=False),
}
"""What each context gives a fragment, by name: ``(stack, names so far) -> value``."""


def given(stack: Any, names: dict[str, Any], name: str) -> Any:
    """The context's ``name`` in this fragment's stack, made once."""
    if name not in names:
        names[name] = names["__givens__"][name](stack, names)
    return names[name]


def _free_names(code: str) -> set[str]:
    """Names the code reads that it never assigns."""
    tree = ast.parse(code)
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return loaded - stored


@dataclass
class FragmentRun:
    errors: dict[str, str]
    """Where -> the error the fragment raised."""
    synth_error: str | None
    stacks: dict[str, Any]


@pytest.fixture(scope="module")
def fragments(tmp_path_factory: pytest.TempPathFactory) -> FragmentRun:
    """Every fragment of the pages, each in a stack of its own of one app, then that app synthesized once."""
    return run_fragments([b for b in BLOCKS if b.kind == "fragment"], tmp_path_factory.mktemp("docs-fragments"))


def run_fragments(fragments: list[Block], outdir: Path) -> FragmentRun:
    """Each fragment in a stack of its own of one app, in its context; then that app synthesized."""
    import traceback

    import aws_cdk
    from aws_cdk import App, Stack
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs
    from aws_cdk import aws_elasticloadbalancingv2 as elbv2

    import neuron_constructs

    app = App(analytics_reporting=False, outdir=str(outdir))
    public = {name: getattr(neuron_constructs, name) for name in neuron_constructs.__all__}
    errors: dict[str, str] = {}
    stacks: dict[str, Any] = {}
    for index, block in enumerate(fragments):
        stack = Stack(app, f"Fragment{index}")
        stacks[block.where] = stack
        names: dict[str, Any] = {
            **public,
            "ecs": ecs,
            "ec2": ec2,
            "elbv2": elbv2,
            "app": app,
            "self": stack,
            "stack": stack,
            "__givens__": CONTEXTS[block.argument](),
        }
        try:
            for name in sorted(_free_names(block.code) & names["__givens__"].keys()):
                given(stack, names, name)
            before = set(names)
            exec(compile(block.code, block.where, "exec"), names)
            for name in set(names) - before:
                made = names[name]
                if isinstance(made, type) and issubclass(made, aws_cdk.Stack):
                    made(app, f"{stack.node.id}{made.__name__}")
        except Exception:
            errors[block.where] = traceback.format_exc()
    try:
        app.synth()
    except Exception:
        return FragmentRun(errors, traceback.format_exc(), stacks)
    return FragmentRun(errors, None, stacks)


# --- the tests ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", [pytest.param(b, id=b.where) for b in BLOCKS])
def test_every_python_block_on_the_pages_says_how_it_runs(block: Block) -> None:
    assert block.kind, (
        f"{block.where}: a python block the tests do not run. Make it a complete app, or put one of "
        "`<!-- example: fragment in CONTEXT -->`, `<!-- example: copy of PATH -->`, `<!-- example: excerpt of PATH -->`"
        " or `<!-- example: in tests/FILE.py::FUNCTION -->` on the line before it (tests/test_docs_examples.py)"
    )
    if block.kind == "fragment":
        assert block.argument in CONTEXTS, f"{block.where}: no context {block.argument!r}; one of {sorted(CONTEXTS)}"


def test_a_block_without_a_marker_that_is_no_complete_app_is_one_the_tests_cannot_run() -> None:
    page = ROOT / "docs" / "new.md"
    text = (
        "Text.\n\n```python\nNeuronCluster(self, 'Neuron')\n```\n\n"
        "<!-- example: fragment in a stack -->\n```python\nNeuronCluster(self, 'Neuron')\n```\n\n"
        "<!-- example: fragment in a stack -->\n\nMore text.\n\n```python\nx = 1\n```\n\n"
        "```python\napp = App()\nStack(app, 'S')\napp.synth()\n```\n"
    )
    found = blocks_of(page, text)
    assert [(b.line, b.kind) for b in found] == [
        (3, ""),
        (8, "fragment"),
        (16, ""),  # a marker counts on the line before its block only
        (20, "app"),
    ]
    assert found[1].argument == "a stack"
    with pytest.raises(AssertionError, match="a python block the tests do not run"):
        test_every_python_block_on_the_pages_says_how_it_runs(found[0])


def test_a_fragment_that_fails_in_its_context_is_reported_with_its_page_and_line(tmp_path: Path) -> None:
    page = ROOT / "docs" / "new.md"
    good, bad = blocks_of(
        page,
        "<!-- example: fragment in a stack with an image and a port -->\n```python\nassert image and port\n```\n\n"
        "<!-- example: fragment in a stack -->\n```python\nservice.scale_on_requests(requests_per_target=60)\n```\n",
    )
    run = run_fragments([good, bad], tmp_path)
    assert set(run.stacks) == {good.where, bad.where} and run.synth_error is None
    assert list(run.errors) == [bad.where]
    assert "NameError: name 'service' is not defined" in run.errors[bad.where]
    assert 'File "docs/new.md:7"' in run.errors[bad.where]


def test_the_site_s_first_app_is_the_readme_s_word_for_word() -> None:
    """Getting started carries the README's complete app itself: the README is not on the site."""
    (readme,) = [b for b in BLOCKS if b.page.name == "README.md" and b.kind == "app"]
    (first,) = [b for b in BLOCKS if b.page.name == "getting-started.md" and b.kind == "app"]
    assert first.code == readme.code


@pytest.mark.xdist_group(GROUP)
@pytest.mark.parametrize("block", _of("app"))
def test_a_complete_app_synthesizes(block: Block) -> None:
    assembly = run_app(block.code)
    assert list(assembly.glob("*.template.json")), f"{block.where}: the app synthesized no stack"


@pytest.mark.xdist_group("docs-fragments")  # one worker builds the fragments' app
@pytest.mark.parametrize("block", _of("fragment"))
def test_a_fragment_runs_in_its_context_and_the_app_synthesizes(block: Block, fragments: FragmentRun) -> None:
    assert block.where in fragments.stacks
    assert block.where not in fragments.errors, fragments.errors[block.where]
    assert fragments.synth_error is None, fragments.synth_error


@pytest.mark.parametrize("block", _of("copy"))
def test_a_copy_is_its_file_word_for_word(block: Block) -> None:
    assert block.code == (ROOT / block.argument).read_text(), f"{block.where}: copy {block.argument} again"


@pytest.mark.parametrize("block", _of("excerpt"))
def test_an_excerpt_is_lines_of_its_file(block: Block) -> None:
    lines = {line.strip() for line in (ROOT / block.argument).read_text().splitlines()}
    for line in block.code.splitlines():
        code = line.split("  #", 1)[0].strip()
        assert not code or code in lines, f"{block.where}: {code!r} is not in {block.argument}"


def _statements(code: str) -> list[str]:
    return [ast.dump(statement) for statement in ast.parse(textwrap.dedent(code)).body]


@pytest.mark.parametrize("block", _of("test"))
def test_a_block_a_test_runs_is_the_test_s_code(block: Block) -> None:
    path, _, function = block.argument.partition("::")
    tree = ast.parse((ROOT / path).read_text())
    (definition,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
    body = [ast.dump(statement) for statement in definition.body]
    shown = _statements(block.code)
    if any(body[i : i + len(shown)] == shown for i in range(len(body))):
        return
    # Or the test runs the block itself: it reads the page and executes what it finds there.
    source = ast.get_source_segment((ROOT / path).read_text(), definition) or ""
    assert f'"{block.page.name}"' in source and "exec(" in source, (
        f"{block.where}: neither the statements {block.argument} runs nor a block it reads from the page"
    )


def test_every_file_a_page_includes_is_an_example_the_tests_build() -> None:
    tests = "".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    included = [(page, (page.parent / name).resolve()) for page in PAGES for name in _INCLUDE.findall(page.read_text())]
    assert included, "Team apps includes the team app"
    for page, path in included:
        assert path.is_file(), f"{page.name}: {path} does not exist"
        example = path.relative_to(ROOT / "examples")  # only examples, which the tests import
        assert f"{example.parent.name}" in tests or example.stem in tests, f"{page.name}: no test builds {path}"


def test_a_link_that_names_a_page_goes_to_that_page() -> None:
    """A link whose text is a file name (``[rules.md](...)``, ``[docs/checks.md](...)``) points to that file."""
    for page in PAGES:
        for text, target in re.findall(r"\[`?([\w./-]+\.md)`?\]\(([^)#]+)", page.read_text()):
            assert Path(target).name == Path(text).name, f"{page.name}: [{text}]({target})"
            assert (page.parent / target).is_file(), f"{page.name}: [{text}]({target}) goes nowhere"
