"""The architecture as the folders state it: no import cycles, and the import-linter contracts kept.

``make lint`` runs ``lint-imports`` on the contracts in ``pyproject.toml``; these tests hold the same line
inside the suite and add what a layers contract cannot see: cycles between modules of one folder, counting
imports anywhere in a module (inside functions too), ``if TYPE_CHECKING:`` blocks aside.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parent.parent / "neuron_constructs"
SUBPACKAGES = (
    "programs",
    "knowledge",
    "checks",
    "base",
    "compute",
    "serving",
    "training",
    "monitoring",
    "tools",
    "local_endpoint",
)


def _runtime_imports(module: str) -> set[str]:
    """The package modules ``module`` imports at run time: anywhere in its file, outside ``if TYPE_CHECKING:``."""
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("neuron_constructs"):
            found.update(f"{node.module}.{a.name}" for a in node.names)
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("neuron_constructs"))
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back_through_others() -> None:
    modules = grimp.build_graph("neuron_constructs").modules
    graph = {m: {i for i in _runtime_imports(m) if i in modules and i != m} for m in modules}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_lives_in_a_folder_of_its_kind() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert loose == []
    assert sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()) == sorted(SUBPACKAGES)


MOST_LINES = 900
"""No module is longer: one that grows past it holds more than one concept, and splits along them
(docs/architecture.md)."""
LONG_LINES, MOST_LONG_MODULES = (700, 3)
"""Past 700 lines a module is long; a few may be, while they still hold one concept."""


def _module_lengths() -> dict[str, int]:
    return {str(p.relative_to(PACKAGE.parent)): len(p.read_text().splitlines()) for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_module_is_longer_than_900_lines_and_few_pass_700() -> None:
    lengths = _module_lengths()
    assert len(lengths) > 100
    assert {m: n for m, n in lengths.items() if n > MOST_LINES} == {}
    long = {m: n for m, n in lengths.items() if n > LONG_LINES}
    assert len(long) <= MOST_LONG_MODULES, long


def test_the_plain_python_folders_load_without_the_cdk() -> None:
    modules = sorted(
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for package in ("programs", "knowledge", "checks", "tools")
        for p in (PACKAGE / package).rglob("*.py")
    )
    assert len(modules) > 20
    code = f"import sys\nfor m in {modules!r}: __import__(m)\nassert not {{'aws_cdk', 'jsii'}} & set(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_import_contracts_are_kept() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
    )
    assert result.returncode == 0, result.stdout
    assert "7 kept, 0 broken" in result.stdout
