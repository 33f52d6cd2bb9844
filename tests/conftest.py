"""Shared fixtures: the example app is synthesized once per session, with cdk-nag on, and shared by every worker."""

from __future__ import annotations

import atexit
import gc
import importlib.resources
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Each test process compiles the library and rewrites every test module as it imports them; with
# PYTHONDONTWRITEBYTECODE set (as container images often set it) it wrote none of that down and did it all again in
# every worker of every run, about a second and a half of the loop. The checkout's own modules keep their bytecode,
# in the __pycache__ folders git ignores; nothing else changes.
sys.dont_write_bytecode = False
# Collection imports the CDK's bindings and every test module: objects that live as long as the process, which the
# collector would scan again and again; it scans rarely until collection ends (pytest_collection_finish).
gc.set_threshold(200_000, 50, 50)

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from neuron_constructs.knowledge.catalog import NeuronInstanceType  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_PINNED_NODE = ROOT / "node_modules" / ".bin" / "node"
if _PINNED_NODE.exists():
    # The pinned Node.js 22 runs jsii: no end-of-life banner, same runtime as the cdk CLI.
    os.environ.setdefault("JSII_NODE", str(_PINNED_NODE))
# aws-cdk-lib's built-in CloudFormation validation (a WebAssembly engine, ~2 s to load in each process) runs on
# the example stacks only, registered explicitly there in make test-e2e, rather than in each of the suite's many
# small synths (tests/example_assembly.py).
os.environ.setdefault("CDK_VALIDATION", "false")
# Property tests judge what a function returns, not how fast a shared 2-core machine runs it: no per-example deadline
# (hypothesis's default of 200 ms fails an example that a busy machine delays, and says nothing of the code).
# The everyday loop draws half of hypothesis's default 100 examples where a test names no count of its own; make
# test-all (NEURON_HYPOTHESIS_BUDGET=full, which CI runs) draws the 100. Each loop run draws new examples.
settings.register_profile(
    "neuron_constructs",
    deadline=None,
    max_examples=100 if os.environ.get("NEURON_HYPOTHESIS_BUDGET") == "full" else 50,
)
settings.load_profile("neuron_constructs")
sys.path.insert(0, str(ROOT / "examples"))
# Bytecode is cached (``__pycache__``, ignored by git) even where PYTHONDONTWRITEBYTECODE is set: otherwise every
# worker, and every command a test starts, compiles the package and the rewritten tests again.
sys.dont_write_bytecode = False

import example_assembly  # noqa: E402

if TYPE_CHECKING:
    from aws_cdk import App
    from aws_cdk.aws_ec2 import IVpc
    from constructs import IConstruct

_JSII_KERNEL = "NEURON_CONSTRUCTS_TEST_JSII_KERNEL"
"""The directory of ``tests/jsii_kernel.js`` and the kernel it runs: made by the session's first process, inherited
by the workers, removed at the end of the session."""

_TEMPORARY_FILES = "NEURON_CONSTRUCTS_TEST_TEMPORARY_FILES"
"""``disk`` keeps the kernels' temporary files in the system's temporary directory even where memory has room
(``benchmarks/harness_benchmark.py`` compares the two)."""


def _in_memory() -> str | None:
    """``/dev/shm`` when it is a writable directory with 2 GiB free, else ``None`` (the system's temporary
    directory). Every app a test builds without an ``outdir`` is synthesized into a temporary directory of the
    kernel; in memory, the construct tests take less CPU than on disk (``benchmarks/harness_benchmark.py``)."""
    if os.environ.get(_TEMPORARY_FILES) == "disk":
        return None
    shm = Path("/dev/shm")
    try:
        room = shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= 2 << 30
    except OSError:
        room = False
    return str(shm) if room else None


def _jsii_kernel_directory() -> Path:
    """A directory with ``tests/jsii_kernel.js``, in ``lib/`` the kernel of the installed jsii, and ``tmp/``, the
    kernels' temporary directory."""
    from jsii._embedded.jsii import EMBEDDED_FILES

    directory = Path(tempfile.mkdtemp(prefix="neuron-jsii-kernel-", dir=_in_memory()))
    (directory / "lib").mkdir()
    (directory / "tmp").mkdir()
    embedded = importlib.resources.files("jsii._embedded.jsii")
    for resource, path in EMBEDDED_FILES.items():  # as jsii unpacks them, less its entry point (bin/)
        if path.startswith("lib/"):
            (directory / path).write_bytes(embedded.joinpath(resource).read_bytes())
    shutil.copyfile(ROOT / "tests" / "jsii_kernel.js", directory / "jsii_kernel.js")
    return directory


def _kernel_environment(directory: Path) -> dict[str, str]:
    """What a process needs to run its jsii kernel from ``directory``'s ``jsii_kernel.js``: the entry point, and
    ``--preserve-symlinks`` as jsii's own entry point starts the kernel (from ``NODE_OPTIONS``: Node.js reads the option
    only at start). With it the kernel links each package from jsii's package cache as one symbolic link; without it,
    it rebuilds every package's tree file by file (7,600 files for aws-cdk-lib, copied where the cache is on another
    file system) in every process."""
    options = " ".join(filter(None, (os.environ.get("NODE_OPTIONS"), "--preserve-symlinks")))
    return {"JSII_RUNTIME": str(directory / "jsii_kernel.js"), "NODE_OPTIONS": options}


_NO_STACK_TRACES = {"aws:cdk:disable-creation-stack-traces": True, "aws:cdk:disable-stack-trace": True}
"""The context every app of a test process gets (``CDK_CONTEXT_JSON``, which aws-cdk-lib's ``App`` reads): no
JavaScript stack trace captured for each CloudFormation element and stack made (``aws:cdk:creationStack``) and each
annotation. They are debugging metadata of the cloud assembly, which no test and nothing in the library reads (the
templates are the same); capturing and rendering them took about a tenth of the runtime's CPU time in the construct
tests."""


def _start_the_jsii_kernel(directory: Path | None) -> None:
    """Start this process's jsii kernel (importing aws-cdk-lib does) from ``directory``'s ``jsii_kernel.js``: one
    Node.js process instead of jsii's relay in front of a second one, about a tenth less CPU for the construct tests
    (``benchmarks/harness_benchmark.py``). The setting is the kernel's alone: the apps tests run through the cdk
    CLI use jsii's own entry point. The kernel's temporary directory is ``directory/tmp``; jsii unpacks its own
    entry point anyway, into ``directory``: the session removes both (a worker ends without cleaning up). Without a
    ``directory`` (``JSII_RUNTIME`` names the kernel), the kernel ``JSII_RUNTIME`` names. Either way the kernel's apps
    get :data:`_NO_STACK_TRACES` in their context, beside any ``CDK_CONTEXT_JSON`` of the environment; the apps the
    tests run in processes of their own (the cdk CLI's) do not."""
    context = {**_NO_STACK_TRACES, **json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")}
    settings = {"CDK_CONTEXT_JSON": json.dumps(context)}
    if directory is not None:
        settings.update(_kernel_environment(directory), TMPDIR=str(directory / "tmp"))
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    if directory is not None:
        tempfile.tempdir = str(directory)
    try:
        import aws_cdk  # noqa: F401
    finally:
        tempfile.tempdir = None
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


JSII_TYPE_CHECKS = "NEURON_JSII_TYPE_CHECKS"
"""Set to ``on`` (``make test-all``, which CI runs) to keep the jsii bindings' own runtime type checks in the test
processes; the everyday loop leaves them out (:func:`_leave_type_checks_to_ci`)."""


def _leave_type_checks_to_ci() -> None:
    """Leave out, in this test process, the runtime check (typeguard) that aws-cdk-lib's Python bindings make of every
    argument and struct field before each call reaches the CDK's JavaScript runtime, unless ``NEURON_JSII_TYPE_CHECKS``
    is ``on``. It judges the types of the library's own calls into aws-cdk-lib, which ``mypy --strict`` checks before
    the loop runs and the jsii kernel checks again as it receives each call; no test reads it, and it took about a
    sixth of the CPU time of the tests that build stacks. CI runs every test with it (``make test-all``)."""
    if os.environ.get(JSII_TYPE_CHECKS) == "on":
        return
    import jsii._type_checking

    jsii._type_checking._resolved_check = lambda **_: None  # type: ignore[attr-defined]


EXAMPLE_STACKS = (
    "NeuronInferenceManaged",
    "NeuronInferenceEc2",
    "NeuronMixedCluster",
    "NeuronSlicedInf2",
    "NeuronSlicedTrn1",
    "NeuronRagFleet",
    "NeuronInferenceTrn2",
    "NeuronTrainingTrn1",
)
ECS_STACKS = EXAMPLE_STACKS[:-1]
"""The examples with an ECS cluster of their own (AWS Batch makes and manages the training stack's)."""
_SHARED_ASSEMBLY = "NEURON_CONSTRUCTS_TEST_EXAMPLES"
"""Where the session's one synthesis of the examples goes (set by the first process, inherited by workers)."""
_SYNTHESIZING_WORKER = "gw0"
"""The worker that synthesizes the examples as its first test starts (``example_assembly.provide``)."""
_EXAMPLE_FIXTURES = {"templates", "validation_report", "example_assembly_dir"} | example_assembly.VALIDATION_FIXTURES


def pytest_configure(config: pytest.Config) -> None:
    """The session's jsii kernel entry point (unless ``JSII_RUNTIME`` names one), each test process's kernel started
    from it, and, with workers (``-n``), the directory the examples are synthesized into once, by one worker."""
    worker = hasattr(config, "workerinput")
    workers = not worker and bool(config.getoption("numprocesses", None))
    kernel = os.environ.get(_JSII_KERNEL)
    if kernel is None and "JSII_RUNTIME" not in os.environ:
        kernel = str(_jsii_kernel_directory())
        os.environ[_JSII_KERNEL] = kernel
        config.stash[_KERNEL_MADE_HERE] = Path(kernel)
    if not workers:
        _start_the_jsii_kernel(Path(kernel) if kernel is not None else None)
        _leave_type_checks_to_ci()
    if worker or _SHARED_ASSEMBLY in os.environ or not workers:
        return
    directory = Path(tempfile.mkdtemp(prefix="neuron-examples-", dir=_in_memory()))
    os.environ[_SHARED_ASSEMBLY] = str(directory)
    config.stash[_SHARED_DIRECTORY] = directory


_SHARED_DIRECTORY = pytest.StashKey[Path]()
_KERNEL_MADE_HERE = pytest.StashKey[Path]()


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        # A worker has reported every result by now: it ends without waiting for the CDK's JavaScript runtime and
        # the interpreter to tear down (about 2 s a worker); the runtime stops on its own when its input closes.
        atexit.register(os._exit, 0)
    shared = config.stash.get(_SHARED_DIRECTORY, None)
    if shared is not None:
        shutil.rmtree(shared, ignore_errors=True)
        os.environ.pop(_SHARED_ASSEMBLY, None)
    kernel = config.stash.get(_KERNEL_MADE_HERE, None)
    if kernel is not None:
        shutil.rmtree(kernel, ignore_errors=True)
        os.environ.pop(_JSII_KERNEL, None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (the CDK's and the library's modules, every test module) lives as long as the process:
    the garbage collector stops scanning it (it scans rarely, as set at the top of this file). Each test builds
    constructs whose jsii references are many small objects; with the defaults a worker spent several seconds in
    collections."""
    gc.freeze()


def _uses_examples(item: pytest.Item) -> bool:
    """Whether ``item`` reads the examples' synthesis."""
    return bool(_EXAMPLE_FIXTURES & set(getattr(item, "fixturenames", ())))


def _validates(items: list[pytest.Item]) -> bool:
    """Whether the session's examples are synthesized under aws-cdk-lib's CloudFormation validation: only when one
    of ``items`` reads that validation's reports (``make test-e2e``; not the everyday loop, see
    ``tests/example_assembly.py``). Every process of a session collects the same items, so each answers alike."""
    return any(example_assembly.VALIDATION_FIXTURES & set(getattr(item, "fixturenames", ())) for item in items)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The order the workers take tests in (``--no-loadscope-reorder`` keeps it): the groups that build stacks of
    their own first (each runs as one unit on one worker), then single tests, and last the tests of the synthesized
    examples, with every test of their group, so no worker waits for the first worker's synthesis of them."""

    def group(item: pytest.Item) -> str | None:
        mark = item.get_closest_marker("xdist_group")
        return str(mark.args[0]) if mark and mark.args else None

    late_groups = {group(item) for item in items if _uses_examples(item)} - {None}
    items.sort(key=lambda item: (_uses_examples(item) or group(item) in late_groups, group(item) is None))


class _SearchPaths(list[str]):
    """A loader's search paths that keep one copy of each: boto3 appends its data path for every session it makes."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


@pytest.fixture(scope="session", autouse=True)
def one_botocore_loader() -> Any:
    """Every botocore session of the test process reads its service models and endpoint data through one loader.

    Each ``neuron-ecs`` call makes a session, and each session would read the same JSON files from disk again (a
    tenth of a second per client); the data never changes within a process, so the tests share what was read. A
    session given its own ``AWS_DATA_PATH`` still gets a loader of its own."""
    import botocore.loaders
    import botocore.session

    original = botocore.session.create_loader
    shared = original()
    shared._search_paths = _SearchPaths(shared.search_paths)

    def create_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
        return shared if search_path_string is None else original(search_path_string)

    botocore.session.create_loader = create_loader  # type: ignore[assignment]
    yield shared
    botocore.session.create_loader = original


@pytest.fixture
def jsii_requests(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The kinds of the requests the test sends to the CDK's JavaScript runtime, as it sends them."""
    import jsii._runtime

    process = jsii._runtime.kernel.provider._process  # type: ignore[attr-defined]
    sent: list[str] = []
    send = type(process).send

    def counted(self: object, request: object, response_type: object) -> object:
        sent.append(type(request).__name__)
        return send(self, request, response_type)

    monkeypatch.setattr(type(process), "send", counted)
    yield sent


MOTO_REGION = "us-east-1"
"""The Region of :func:`aws`'s account."""


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A boto3 session on moto's in-process account in :data:`MOTO_REGION`, with test credentials and no endpoint or
    profile of the environment; moto is imported here, so only a worker that runs such a test loads it."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": MOTO_REGION,
        "AWS_REGION": MOTO_REGION,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")  # moto_fleet.IMAGE_ID needs none of them
    import boto3
    from moto import mock_aws

    with mock_aws():
        yield boto3.Session(region_name=MOTO_REGION)


@pytest.fixture(scope="session", autouse=True)
def _examples_from_the_first_worker(request: pytest.FixtureRequest) -> None:
    """The first worker synthesizes the examples as its first test starts, when the session has tests of them: in
    a process that is running already, while the other worker tests, and done long before the tests of the examples,
    which run last (:func:`pytest_collection_modifyitems`)."""
    shared = os.environ.get(_SHARED_ASSEMBLY)
    if shared is None or os.environ.get("PYTEST_XDIST_WORKER") != _SYNTHESIZING_WORKER:
        return
    items = request.session.items
    if any(_uses_examples(item) for item in items):
        example_assembly.provide(Path(shared), cloudformation_validation=_validates(items))


@pytest.fixture(scope="session")
def example_assembly_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of the session's one synthesis of the examples (``examples/``) and, in a session with tests of
    aws-cdk-lib's CloudFormation validation, the broken probe (``broken/``): the first worker's (this process makes
    it if no process claimed it yet), or one made here when the session has no workers."""
    validation = _validates(request.session.items)
    shared = os.environ.get(_SHARED_ASSEMBLY)
    if shared is not None:
        return example_assembly.provide(Path(shared), cloudformation_validation=validation)
    directory = tmp_path_factory.mktemp("example-assembly")
    example_assembly.synthesize(directory, cloudformation_validation=validation)
    return directory


@pytest.fixture(scope="session")
def validation_report(example_assembly_dir: Path) -> dict[str, Any]:
    """``validation-report.json`` of that synthesis: cdk-nag's packs and the Neuron template checks (and aws-cdk-lib's
    CloudFormation validation in a session with its tests)."""
    return json.loads((example_assembly_dir / "examples" / "validation-report.json").read_text())  # type: ignore[no-any-return]


def _validated(example_assembly_dir: Path) -> Path:
    """``example_assembly_dir``, after checking that its synthesis ran aws-cdk-lib's CloudFormation validation."""
    if not (example_assembly_dir / example_assembly.BROKEN).is_dir():
        raise RuntimeError(f"the examples in {example_assembly_dir} were synthesized without CloudFormation validation")
    return example_assembly_dir


@pytest.fixture(scope="session")
def cloudformation_validation_report(example_assembly_dir: Path) -> dict[str, Any]:
    """``validation-report.json`` of the examples synthesized under aws-cdk-lib's CloudFormation validation (with
    cdk-nag's packs and the Neuron template checks): only in a session with tests of that validation."""
    report = _validated(example_assembly_dir) / "examples" / "validation-report.json"
    return json.loads(report.read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def broken_validation_report(example_assembly_dir: Path) -> dict[str, Any]:
    """The validation report of one stack with an unknown property, under the same CloudFormation validation."""
    report = _validated(example_assembly_dir) / example_assembly.BROKEN / "validation-report.json"
    return json.loads(report.read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def templates(example_assembly_dir: Path) -> dict[str, dict[str, Any]]:
    """Synthesized CloudFormation templates by stack name."""
    return {
        name: json.loads((example_assembly_dir / "examples" / f"{name}.template.json").read_text())
        for name in EXAMPLE_STACKS
    }


MEASURED_IN_CI = pytest.mark.e2e
"""A test that waits out a real deadline, or measures the time and memory of a worst input in a process of its own:
``make test-e2e`` runs it (in ``make test-all``, which CI runs); the everyday loop leaves the waiting and the
measuring out."""

HYPOTHESIS_BUDGET = "NEURON_HYPOTHESIS_BUDGET"
"""Set to ``full`` (``make test-all``, which CI runs) for the full number of examples of the slowest property tests;
the everyday loop runs fewer of them."""


def examples(full: int, *, loop: int) -> int:
    """How many examples a slow property test draws: ``loop`` in the everyday loop, ``full`` under
    ``NEURON_HYPOTHESIS_BUDGET=full`` (``make test-all``). Each run draws new examples, so the loop still covers the
    space over its runs; CI covers it at the full count every time."""
    return full if os.environ.get(HYPOTHESIS_BUDGET) == "full" else loop


def resources(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """The template's resources of one CloudFormation type, by logical id."""
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


MONITORING_PREFIX = "NeuronMonitoring"
"""Logical ids of what ``NeuronMonitoring`` adds to the examples (``Neuron/Monitoring``)."""


def workloads(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """The example's own resources of one type: without the monitoring daemons' task definitions and services."""
    return {k: v for k, v in resources(template, resource_type).items() if not k.startswith(MONITORING_PREFIX)}


def synth_warnings(app: App) -> list[str]:
    """The Neuron template checks' warnings in the app's validation report (what the CLI prints at synth)."""
    import json

    report = json.loads((Path(app.synth().directory) / "validation-report.json").read_text())
    plugin = next((p for p in report["pluginReports"] if p["pluginName"] == "NeuronConstructs"), None)
    assert plugin is None or plugin["conclusion"] == "success"
    return [v["description"] for v in (plugin["violations"] if plugin else []) if v["severity"] == "warning"]


IMPORTED_VPC_ID = "ImportedVpc"
"""The id of :func:`imported_vpc`'s VPC in its stack."""


def imported_vpc(scope: IConstruct) -> IVpc:
    """A VPC for a cluster whose own VPC the test does not look at: imported from plain attributes (two zones, a
    public and a private subnet in each), one per stack. A cluster that makes its own VPC (a NAT gateway, flow logs, a
    custom resource that removes the default security group's rules) took about four times as long to build (16 ms
    against 4 ms in a test process) and three times as long to synthesize (32 ms against 9 ms); the tests of that VPC
    and of what depends on it, and the examples, make it."""
    from aws_cdk import Stack
    from aws_cdk import aws_ec2 as ec2

    stack = Stack.of(scope)
    found = stack.node.try_find_child(IMPORTED_VPC_ID)
    if found is not None:
        return found  # type: ignore[return-value]
    return ec2.Vpc.from_vpc_attributes(
        stack,
        IMPORTED_VPC_ID,
        vpc_id="vpc-0a1b2c3d4e5f60718",
        vpc_cidr_block="10.0.0.0/16",
        availability_zones=["us-east-1a", "us-east-1b"],
        public_subnet_ids=["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"],
        private_subnet_ids=["subnet-0a1b2c3d4e5f60003", "subnet-0a1b2c3d4e5f60004"],
    )


def distinct_layouts() -> list[NeuronInstanceType]:
    """One catalog type per layout: types with the same vCPUs, memory, chips, NeuronCores per chip and topology are
    planned alike by every slice and fleet (trn1n.32xlarge as trn1.32xlarge, trn2u.48xlarge as trn2.48xlarge), and
    every single-chip type has one slice, its chip; so the synthesizing tests build the first of each."""
    seen: dict[tuple[object, ...], NeuronInstanceType] = {}
    for entry in NeuronInstanceType.all():
        # One chip slices one way (one task holding it) whatever the type's size: one single-chip type stands for all.
        key: tuple[object, ...] = (
            ("one chip",)
            if entry.chips == 1
            else (entry.vcpus, entry.memory_gib, entry.chips, entry.neuron_cores_per_chip, entry.topology)
        )
        seen.setdefault(key, entry)
    return list(seen.values())


@pytest.fixture
def fake_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials botocore signs with for a local endpoint or stand-in, and no profile of the user's."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
