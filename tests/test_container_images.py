"""The container images are named in one place: every Neuron image the repository's code, examples and pages name
is a constant of ``neuron_constructs.knowledge.container_images``, and every constant says its release and source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from neuron_constructs.knowledge import container_images
from neuron_constructs.knowledge.container_images import (
    CURRENT_SDK_RELEASE,
    CURRENT_SDK_RELEASE_SOURCE,
    IMAGES,
    NeuronImage,
)

ROOT = Path(__file__).resolve().parent.parent
MODULE = Path(container_images.__file__).resolve()
SCANNED = ("README.md", "docs/*.md", "examples/**/*.py", "neuron_constructs/**/*.py", "benchmarks/**/*.py")
"""The repository's text that names images (the generated docs site, snapshots and installed packages are not
in these)."""

PUBLIC_NEURON = re.compile(r"public\.ecr\.aws/neuron/[\w.-]+:[\w.-]*\w")
PRIVATE_ECR = re.compile(r"\d{12}\.dkr\.ecr\.[\w.{}<>$-]+\.amazonaws\.com/([\w.-]*neuron[\w.-]*):([\w.-]*\w)")
DETECTOR = re.compile(r"registry\.k8s\.io/node-problem-detector/node-problem-detector:[\w.-]*\w")
SDK_TAG = re.compile(r"[\w.-]*\bsdk\d+\.\d+(?:\.\d+)?[\w.-]*")


def scanned_files() -> list[Path]:
    files = {path for pattern in SCANNED for path in ROOT.glob(pattern)}
    return sorted(path for path in files if path.resolve() != MODULE)


def constant_for(repository: str) -> str:
    """The constant to use in place of an image of ``repository``: the module's image of that repository, if any."""
    names = [name for name, image in IMAGES.items() if image.repository == repository]
    return " or ".join(names) if names else f"one of {', '.join(IMAGES)} (or add a constant)"


def wrong_references(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: reference -> constant`` for every image reference of ``path`` that is not one of the module's."""
    uris = {image.uri for image in IMAGES.values()}
    private = {(image.repository, image.tag) for image in IMAGES.values() if image.ecr_account}
    tags = {image.tag for image in IMAGES.values()}
    wrong = []
    relative = path.relative_to(root)
    skipping = ""  # "marked": the next block names a version to come; "inside": in it, to its closing fence
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fence = line.strip().startswith("```")
        if line.strip() == HYPOTHETICAL:
            skipping = "marked"
        elif skipping == "marked" and fence:
            skipping = "inside"
        elif skipping == "inside" and line.strip() == "```":
            skipping = ""
        if skipping or fence:
            continue
        covered: list[tuple[int, int]] = []
        for match in (*PUBLIC_NEURON.finditer(line), *DETECTOR.finditer(line)):
            covered.append(match.span())
            if match.group(0) not in uris:
                repository = match.group(0).rsplit(":", 1)[0].rsplit("/", 1)[1]
                wrong.append(f"{relative}:{number}: {match.group(0)} -> use {constant_for(repository)}.uri")
        for match in PRIVATE_ECR.finditer(line):
            covered.append(match.span())
            if (match.group(1), match.group(2)) not in private:
                wrong.append(f"{relative}:{number}: {match.group(0)} -> use {constant_for(match.group(1))}")
        for match in SDK_TAG.finditer(line):
            inside = any(start <= match.start() and match.end() <= end for start, end in covered)
            if not inside and match.group(0) not in tags:
                wrong.append(f"{relative}:{number}: {match.group(0)} -> use the .tag of one of {', '.join(IMAGES)}")
    return wrong


HYPOTHETICAL = "<!-- images: a next version, not published -->"
"""Marks the code block after it on a page as naming images of a version to come (a week's change that ``plan
--diff`` shows): the scan skips that block alone."""


def test_every_image_the_repository_names_is_one_of_the_module():
    wrong = [reference for path in scanned_files() for reference in wrong_references(path)]
    assert not wrong, "images named outside neuron_constructs/knowledge/container_images.py:\n" + "\n".join(wrong)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "public.ecr.aws/neuron/pytorch-training-neuronx:2.8.0-neuronx-py311-sdk2.26.1-ubuntu22.04\n"
        'TAG = "0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04"\n'
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-pytorch-inference-neuronx:2.8.0-sdk2.26.0\n"
        "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.19\n"
        f"{container_images.VLLM.uri} and {container_images.EMBEDDING.tag}\n",
        encoding="utf-8",
    )
    wrong = wrong_references(page, root=tmp_path)
    marked = tmp_path / "marked.md"
    next_tag = "public.ecr.aws/neuron/pytorch-training-neuronx:9.9.9-neuronx-py311-sdk9.9.9-ubuntu22.04"
    marked.write_text(f"{HYPOTHETICAL}\n```text\n{next_tag}\n```\n{next_tag}\n", encoding="utf-8")
    assert [r.split(" -> ")[0] for r in wrong_references(marked, root=tmp_path)] == [f"marked.md:5: {next_tag}"]
    assert [reference.split(" -> ")[0] for reference in wrong] == [
        "page.md:1: public.ecr.aws/neuron/pytorch-training-neuronx:2.8.0-neuronx-py311-sdk2.26.1-ubuntu22.04",
        "page.md:2: 0.11.0-optimum0.4.5-neuronx-py310-sdk2.26.1-ubuntu22.04",
        "page.md:3: 763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-pytorch-inference-neuronx:2.8.0-sdk2.26.0",
        "page.md:4: registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.19",
    ]
    assert wrong[0].endswith("use PYTORCH_TRAINING.uri") and wrong[3].endswith("use NODE_PROBLEM_DETECTOR.uri")


def test_the_scan_covers_the_readme_the_docs_the_examples_and_the_library():
    files = {str(path.relative_to(ROOT)) for path in scanned_files()}
    assert {"README.md", "docs/monitoring.md", "examples/app.py", "examples/team_app/app.py"} <= files
    assert "neuron_constructs/monitoring/daemons.py" in files
    assert "neuron_constructs/knowledge/container_images.py" not in files


def test_images_is_every_constant_of_the_module_by_its_name():
    constants = {name: value for name, value in vars(container_images).items() if isinstance(value, NeuronImage)}
    assert constants == IMAGES


@pytest.mark.parametrize("name", IMAGES)
def test_every_image_has_a_source(name):
    image = IMAGES[name]
    assert image.source.startswith("https://") and image.instance_families


@pytest.mark.parametrize("name", IMAGES)
def test_every_neuron_image_has_an_sdk_release_that_its_tag_repeats(name):
    image = IMAGES[name]
    if image.tag_sdk is None:  # an image with a version of its own, not a Neuron DLC
        assert image.neuron_sdk is None and "neuron" not in image.tag
    else:
        assert image.neuron_sdk == image.tag_sdk


@pytest.mark.parametrize("name", IMAGES)
def test_no_image_is_newer_than_the_current_sdk_release(name):
    release = IMAGES[name].neuron_sdk
    if release is not None:
        assert tuple(map(int, release.split("."))) <= tuple(map(int, CURRENT_SDK_RELEASE.split(".")))


def test_the_current_sdk_release_has_its_source():
    assert CURRENT_SDK_RELEASE == "2.34.0"
    assert CURRENT_SDK_RELEASE_SOURCE.startswith("https://") and CURRENT_SDK_RELEASE in CURRENT_SDK_RELEASE_SOURCE


def test_the_monitoring_daemons_take_their_images_from_the_module():
    daemons = ast.parse((ROOT / "neuron_constructs/monitoring/daemons.py").read_text(encoding="utf-8"))
    assigned = {
        node.targets[0].id: ast.unparse(node.value)
        for node in daemons.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert assigned["MONITOR_IMAGE"] == "NEURON_MONITOR.reference"
    assert assigned["RECOVERY_IMAGE"] == "AWS_CLI.reference"
    assert assigned["NODE_PROBLEM_DETECTOR_IMAGE"] == "NODE_PROBLEM_DETECTOR.reference"


def test_neuron_monitor_is_the_image_the_neuron_sdk_s_manifest_runs_not_a_retired_dlc():
    image = container_images.NEURON_MONITOR
    assert image.uri == "public.ecr.aws/neuron/neuron-monitor:1.10.0"
    assert "src/k8/k8s-neuron-monitor-daemonset.yml" in image.source and "privileged: true" in image.source
    assert "/opt/aws/neuron/bin/neuron-monitor" in image.source  # the binary the daemon's script runs
    assert container_images.PYTORCH_INFERENCE not in container_images.LIBRARY_IMAGES.values()
    assert container_images.NEURON_NODE_RECOVERY not in container_images.LIBRARY_IMAGES.values()


def test_the_privileged_images_are_library_images_and_only_neuron_monitor():
    assert set(container_images.PRIVILEGED_IMAGES) == {"NEURON_MONITOR"}
    assert all(container_images.LIBRARY_IMAGES[n] is i for n, i in container_images.PRIVILEGED_IMAGES.items())


AWAITING_A_DIGEST = {
    "NEURON_MONITOR": "no published source ties a digest to public.ecr.aws/neuron/neuron-monitor:1.10.0 "
    "(the monitoring warns, NEURON116, until it is pinned)",
    "NODE_PROBLEM_DETECTOR": "the image promoter's manifest found (kubernetes/k8s.io k8s-staging-npd/images.yaml) ends "
    "at v0.8.20: no published source ties a digest to v1.35.2",
    "AWS_CLI": "no published source ties a digest to public.ecr.aws/aws-cli/aws-cli:2.15.0",
}
"""The images the library runs whose digest is not known yet, each with why: a registry answers it, and none is
reachable where the library is built. Pinning one fails its case below (strict xfail) until it leaves this list."""


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=AWAITING_A_DIGEST[name]))
        if name in AWAITING_A_DIGEST
        else name
        for name in container_images.LIBRARY_IMAGES
    ],
)
def test_every_image_the_library_runs_is_pinned_by_digest(name):
    image = container_images.LIBRARY_IMAGES[name]
    assert image.digest is not None, f"{name} is a bare tag: {image.uri}"
    assert image.reference == f"{image.uri}@{image.digest}"
    assert image.digest_source and image.digest_source.startswith("https://")


def test_a_digest_is_checked_and_pinning_keeps_the_tag_beside_it():
    digest = "sha256:" + "ab" * 32
    pinned = container_images.PYTORCH_INFERENCE.pinned(digest, "my registry")
    assert pinned.reference == f"{container_images.PYTORCH_INFERENCE.uri}@{digest}"
    assert container_images.PYTORCH_INFERENCE.digest is None  # the module's constant is unchanged
    with pytest.raises(ValueError, match="is not sha256"):
        container_images.PYTORCH_INFERENCE.pinned("latest")


def test_the_library_runs_only_images_of_the_module():
    """Every image the library's own code names (not the examples') is a reference of LIBRARY_IMAGES."""
    references = {i.reference for i in container_images.LIBRARY_IMAGES.values()}
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "neuron_constructs").rglob("*.py"))
    named = set(re.findall(r"public\.ecr\.aws/[\w./-]+:[\w.-]+|registry\.k8s\.io/[\w./-]+:[\w.-]+", source))
    assert named <= {r.split("@")[0] for r in references} | {i.uri for i in container_images.IMAGES.values()}


def test_an_image_in_a_private_registry_names_its_account():
    assert container_images.EMBEDDING.ecr_account == "763104351884"
    assert container_images.EMBEDDING.uri.startswith("763104351884.dkr.ecr.{region}.amazonaws.com/")
    assert container_images.VLLM.ecr_account is None


def test_the_daemon_images_are_at_the_newest_tags_a_source_names_each_with_what_it_changes() -> None:
    """GIVEN the tags the sources name (neuron-monitor 1.10.0; the Neuron Helm chart's node recovery 1.9.0 and
    node-problem-detector v1.35.2) THEN the table runs them, cites them, and says what each changes in what the library
    reads; a tag without a sourced digest runs by its tag, listed in AWAITING_A_DIGEST."""
    monitor, recovery, detector = (
        container_images.NEURON_MONITOR,
        container_images.NEURON_NODE_RECOVERY,
        container_images.NODE_PROBLEM_DETECTOR,
    )
    assert (monitor.tag, recovery.tag, detector.tag) == ("1.10.0", "1.9.0", "v1.35.2")
    assert "dra-smoke-tests.md" in monitor.source and "neuron-monitor:1.10.0" in monitor.source
    for image in (recovery, detector):
        assert "aws-neuron/neuron-helm-charts/blob/" in image.source
        assert "charts/neuron-helm-chart/README.md" in image.source
    unpinned = {name for name, image in container_images.LIBRARY_IMAGES.items() if image.digest is None}
    assert detector.digest is None and monitor.digest is None and set(AWAITING_A_DIGEST) == unpinned
    module = MODULE.read_text(encoding="utf-8")
    for said in ("What 1.10.0 changes in what the library reads", "What 1.9.0 changes", "What v1.35.2 changes"):
        assert said in module
