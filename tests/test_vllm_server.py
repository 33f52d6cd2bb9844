"""``VllmServer``: the ``vllm serve`` command written from typed options and checked, at the call, against the
NeuronCores the container holds and the engine release of its image (``knowledge/vllm_server.py``)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match
from conftest import imported_vpc
from hypothesis import given
from hypothesis import strategies as st

from neuron_constructs import (
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronConfigurationError,
    VllmLora,
    VllmServer,
)
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.container_images import PYTORCH_INFERENCE, VLLM, VLLM_TRN2
from neuron_constructs.knowledge.vllm_server import LORA_RANKS, plan_server

MODEL = "meta-llama/Llama-3.1-8B-Instruct"

DOCUMENTED_OPTIONS = frozenset(
    {
        # vLLM's engine and server arguments the vLLM Neuron reference configuration (vllm-neuron
        # docs/guides/reference-configuration.md, 2026-08-13) and the NxD Inference vLLM user guide (plugin 0.5.0,
        # vLLM 0.16.0) document, and vllm/entrypoints/openai/cli_args.py (--port, --served-model-name)
        "--tensor-parallel-size",
        "--max-model-len",
        "--max-num-seqs",
        "--port",
        "--served-model-name",
        # LoRA: vllm/config/lora.py; vLLM Neuron multi-LoRA tutorial (Neuron 2.34.0); NxD Inference multi-LoRA tutorial
        "--enable-lora",
        "--max-loras",
        "--max-lora-rank",
        "--lora-modules",
    }
)
"""The options a ``VllmServer`` may write: each one documented for both engine routes of the image table."""


def _stack() -> Stack:
    return Stack(App(analytics_reporting=False), "Serve")


def _manual(
    stack: Stack, *, instance_type: str = "inf2.48xlarge", devices: list[int] | None = None, **task: Any
) -> ManualNeuronTaskDefinition:
    return ManualNeuronTaskDefinition(
        stack, "Task", instance_type=instance_type, devices=devices or [0, 1], memory_mib=65536, **task
    )


def _serve(task: Any, server: VllmServer, image: Any = VLLM, **options: Any) -> ecs.ContainerDefinition:
    return task.add_neuron_container(  # type: ignore[no-any-return]
        "vllm", image=ecs.ContainerImage.from_registry(image.reference), server=server, **options
    )


def _rendered(stack: Stack, container: ecs.ContainerDefinition) -> dict[str, Any]:
    return stack.resolve(container.render_container_definition())  # type: ignore[no-any-return]


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_the_server_runs_on_every_core_the_container_holds_on_its_port_with_vllm_s_health_check() -> None:
    """GIVEN two Inferentia2 chips (four NeuronCores) WHEN a server is given THEN vLLM shards over the four, listens
    on 8000, the container maps that port and checks /health, and the model reports under the served name."""
    stack = _stack()
    task = _manual(stack)
    rendered = _rendered(stack, _serve(task, VllmServer(model=MODEL, max_model_len=4096, max_num_seqs=8)))
    command = rendered["command"]
    assert command[:3] == ["vllm", "serve", MODEL]
    assert _option(command, "--tensor-parallel-size") == "4"
    assert _option(command, "--port") == "8000"
    assert (_option(command, "--max-model-len"), _option(command, "--max-num-seqs")) == ("4096", "8")
    assert _option(command, "--served-model-name") == MODEL == task.model_name
    assert rendered["portMappings"][0]["containerPort"] == 8000
    assert "http://localhost:8000/health" in rendered["healthCheck"]["command"][-1]
    assert task.servers["vllm"].metrics_path == "/metrics" and task.servers["vllm"].idle_cores == 0


def test_logical_cores_count_under_lnc() -> None:
    """A Trainium2 chip is eight physical NeuronCores, four logical at LNC 2 and eight at LNC 1."""
    degrees = []
    for lnc in (2, 1):
        stack = _stack()
        task = _manual(stack, instance_type="trn2.48xlarge", devices=[0], lnc=lnc)
        degrees.append(
            _option(
                _rendered(stack, _serve(task, VllmServer(model=MODEL), VLLM_TRN2))["command"], "--tensor-parallel-size"
            )
        )
    assert degrees == ["4", "8"]


def test_a_degree_above_the_cores_held_is_refused_and_one_below_them_warns() -> None:
    with pytest.raises(
        NeuronConfigurationError,
        match=r"Serve/Task/vllm: tensor_parallel_size=8 is more than the 4 .*"
        r"NEURON174.*Fix: pass tensor_parallel_size=4 or less",
    ):
        _serve(_manual(_stack()), VllmServer(model=MODEL, tensor_parallel_size=8))
    stack = _stack()
    _serve(_manual(stack), VllmServer(model=MODEL, tensor_parallel_size=2))
    (warning,) = Annotations.from_stack(stack).find_warning("/Serve/Task", Match.string_like_regexp("NEURON175"))
    assert "tensor_parallel_size=2 runs on 2 of the 4 NeuronCores the container holds" in str(warning.entry.data)


def test_vllm_on_nxd_inference_takes_only_the_degrees_its_guide_lists_for_the_family() -> None:
    stack = _stack()
    task = _manual(stack, devices=list(range(6)))  # 12 NeuronCores
    with pytest.raises(
        NeuronConfigurationError,
        match=r"tensor_parallel_size=12 is not a degree vLLM on NxD "
        r"Inference supports on inf2.*NEURON174.*one of 1, 2, 4, 8",
    ):
        _serve(task, VllmServer(model=MODEL))


def test_an_image_that_does_not_run_vllm_is_refused() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"engine is torch-neuronx/NxD.*NEURON177"):
        _serve(_manual(_stack()), VllmServer(model=MODEL), PYTORCH_INFERENCE)


def test_lora_is_written_for_vllm_on_nxd_inference_and_refused_before_vllm_neuron_2_34() -> None:
    lora = VllmLora(adapters={"support": "/models/support", "sql": "/models/sql"}, max_lora_rank=32)
    stack = _stack()
    command = _rendered(stack, _serve(_manual(stack), VllmServer(model=MODEL, lora=lora)))["command"]
    assert command[command.index("--enable-lora") :] == [
        "--enable-lora", "--max-loras", "2", "--max-lora-rank", "32",
        "--lora-modules", "support=/models/support", "sql=/models/sql",
    ]  # fmt: skip
    task = _manual(_stack(), instance_type="trn2.48xlarge", devices=[0])
    with pytest.raises(NeuronConfigurationError, match=r"Neuron 2.33.0's; it serves LoRA adapters from Neuron 2.34.0"):
        _serve(task, VllmServer(model=MODEL, lora=lora), VLLM_TRN2)


@pytest.mark.parametrize(
    ("make", "text"),
    [
        (lambda: VllmLora(adapters={}), r"names no adapter"),
        (lambda: VllmLora(adapters={"a": "relative/path"}), r"not an absolute path"),
        (lambda: VllmLora(adapters={"a b": "/x"}), r"adapter name 'a b'"),
        (lambda: VllmLora(adapters={"a": "/x"}, max_lora_rank=12), r"max_lora_rank=12 is not one vLLM takes"),
        (lambda: VllmLora(adapters={"a": "/x"}, max_lora_rank=16.0), r"max_lora_rank=16.0 is not one vLLM takes"),
        (lambda: VllmLora(adapters={"a": "/x", "b": "/y"}, max_loras=1), r"max_loras=1 slots for 2 adapters"),
        (lambda: VllmServer(model=" x"), r"model=' x' is not a model id"),
        (lambda: VllmServer(model=MODEL, tensor_parallel_size=0), r"tensor_parallel_size=0 is not a whole number"),
        (lambda: VllmServer(model=MODEL, port=True), r"port=True is not a whole number"),
        (lambda: VllmServer(model=MODEL, extra_args="--block-size 32"), r"not a sequence of strings"),
        (lambda: VllmServer(model=MODEL, extra_args=["--port=9000"]), r"--port, which VllmServer writes"),
        (lambda: VllmServer(model=MODEL, extra_args=["-tp", "2"]), r"-tp, which VllmServer writes"),
        (
            lambda: VllmServer(model=MODEL, extra_args=["--override-neuron-config", "{}"]),
            r"--override-neuron-config, which no engine.*Fix: .*--additional-config",
        ),
        (lambda: VllmServer(model=MODEL, extra_args=["--quantization", "fp8"]), r"--quantization, which no engine"),
    ],
)
def test_options_out_of_vllm_s_range_are_refused_where_they_are_given(make: Any, text: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=text):
        make()


def test_a_command_or_an_unmapped_port_beside_the_server_is_refused() -> None:
    with pytest.raises(NeuronConfigurationError, match=r"command= is given beside server=.*NEURON173"):
        _serve(_manual(_stack()), VllmServer(model=MODEL), command=["vllm", "serve", MODEL])
    with pytest.raises(NeuronConfigurationError, match=r"port_mappings map no container port 9000"):
        _serve(
            _manual(_stack()), VllmServer(model=MODEL, port=9000), port_mappings=[ecs.PortMapping(container_port=80)]
        )


def test_a_served_name_other_than_the_task_s_model_is_refused() -> None:
    task = _manual(_stack())
    task.add_neuron_container(
        "first",
        image=ecs.ContainerImage.from_registry(VLLM.reference),
        devices=[0],
        environment={"NEURON_PROCESS_TAG": "chat"},
    )
    with pytest.raises(NeuronConfigurationError, match=r"already reports as model 'chat'.*NEURON067"):
        task.add_neuron_container(
            "second",
            image=ecs.ContainerImage.from_registry(VLLM.reference),
            devices=[1],
            server=VllmServer(model=MODEL, served_model_name="other"),
        )


def test_on_managed_instances_the_degree_is_stated_since_the_cores_are_known_only_on_the_instance() -> None:
    stack = _stack()
    task = ManagedNeuronTaskDefinition(stack, "Managed", cpu=4096, memory_mib=16384)
    with pytest.raises(NeuronConfigurationError, match=r"known only on the instance it lands on.*NEURON174"):
        _serve(task, VllmServer(model=MODEL))
    command = _rendered(stack, _serve(task, VllmServer(model=MODEL, tensor_parallel_size=2)))["command"]
    assert _option(command, "--tensor-parallel-size") == "2"


def test_on_managed_instances_a_degree_above_the_cores_of_a_type_the_capacity_may_pick_is_refused() -> None:
    from neuron_constructs import NeuronCluster, NeuronService

    stack = _stack()
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
    task = ManagedNeuronTaskDefinition(stack, "Task", cpu=8192, memory_mib=16384)
    _serve(task, VllmServer(model=MODEL, tensor_parallel_size=8))
    # inf2.xlarge (4 vCPUs) cannot hold the task; inf2.8xlarge (32 vCPUs, 2 NeuronCores) can, and ECS may pick it
    with pytest.raises(NeuronConfigurationError, match=r"NEURON174") as raised:
        NeuronService(stack, "Llm", cluster=cluster, task_definition=task)
    assert "Serve/Cluster/Managed may place the task on inf2.8xlarge (2): fewer NeuronCores than that" in str(
        raised.value
    )
    roomy = ManagedNeuronTaskDefinition(stack, "Roomy", cpu=98304, memory_mib=200000)
    _serve(roomy, VllmServer(model=MODEL, tensor_parallel_size=8))
    NeuronService(stack, "Big", cluster=cluster, task_definition=roomy)  # only inf2.24xlarge (12) and .48xlarge (24)


@given(
    cores=st.integers(1, 128),
    degree=st.none() | st.integers(1, 128),
    length=st.none() | st.integers(16, 1 << 20),
    sequences=st.none() | st.integers(1, 4096),
    adapters=st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), st.just("/models/a"), max_size=3),
    rank=st.sampled_from(LORA_RANKS),
)
def test_every_command_writes_documented_options_only_and_never_more_cores_than_held(
    cores: int, degree: int | None, length: int | None, sequences: int | None, adapters: dict[str, str], rank: int
) -> None:
    lora = VllmLora(adapters=adapters, max_lora_rank=rank) if adapters else None
    server = VllmServer(
        model=MODEL, tensor_parallel_size=degree, max_model_len=length, max_num_seqs=sequences, lora=lora
    )
    try:
        plan = plan_server(server, where="W", cores=cores, served_model_name=MODEL)
    except NeuronConfigurationError as refused:
        assert degree is not None and degree > cores and rules.TENSOR_PARALLEL_CORES.id in str(refused)
        return
    options = {word for word in plan.command if word.startswith("-")}
    assert options <= DOCUMENTED_OPTIONS, options - DOCUMENTED_OPTIONS
    assert plan.tensor_parallel_size + plan.idle_cores == cores and plan.idle_cores >= 0
    assert re.fullmatch(r"\d+", _option(list(plan.command), "--tensor-parallel-size"))


def test_every_copy_of_a_fleet_model_serves_on_the_cores_one_copy_holds_under_the_model_s_name() -> None:
    from neuron_constructs import NeuronCluster, NeuronFleet

    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.48xlarge", max_capacity=2)
    fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge", instances=2)
    model = fleet.add_model(
        "Chat",
        devices_per_task=2,
        copies=2,
        image=ecs.ContainerImage.from_registry(VLLM.reference),
        server=VllmServer(model=MODEL),
    )
    commands = [_rendered(stack, t.neuron_containers[0])["command"] for t in model.task_definitions]
    assert len(commands) == 2
    assert {_option(c, "--tensor-parallel-size") for c in commands} == {"4"}
    assert {_option(c, "--served-model-name") for c in commands} == {MODEL} == {model.model_name}


def test_each_slice_serves_on_its_cores_and_a_model_name_given_is_the_served_name() -> None:
    from neuron_constructs import NeuronCluster, SlicedNeuronService

    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1)
    sliced = SlicedNeuronService(
        stack,
        "Chat",
        cluster=cluster,
        instance_type="trn2.48xlarge",
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        devices_per_task=4,
        model_name="chat",
        server=VllmServer(model=MODEL),
    )
    commands = [_rendered(stack, t.neuron_containers[0])["command"] for t in sliced.task_definitions]
    assert len(commands) == 4  # 16 chips, four a slice: 16 logical NeuronCores at LNC 2 each
    assert {(_option(c, "--tensor-parallel-size"), _option(c, "--served-model-name")) for c in commands} == {
        ("16", "chat")
    }


def test_a_port_mapping_given_as_the_cdk_s_dict_maps_the_server_s_port() -> None:
    stack = _stack()
    container = _serve(_manual(stack), VllmServer(model=MODEL), port_mappings=[{"containerPort": 8000}])
    assert [m["containerPort"] for m in _rendered(stack, container)["portMappings"]] == [8000]


def test_the_engine_metrics_sidecar_reads_the_port_the_server_listens_on() -> None:
    from neuron_constructs import NeuronCluster, NeuronService

    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1)
    task = _manual(stack, instance_type="trn2.48xlarge", devices=[0])
    ports = [ecs.PortMapping(container_port=9000), ecs.PortMapping(container_port=8000)]
    _serve(task, VllmServer(model=MODEL), VLLM_TRN2, port_mappings=ports, environment={"VLLM_CACHE_ROOT": "/v"})
    service = NeuronService(stack, "Llm", cluster=cluster, task_definition=task)
    assert service.engine_metrics_container is not None
    environment = {e["name"]: e["value"] for e in _rendered(stack, service.engine_metrics_container)["environment"]}
    assert str(environment["ENGINE_METRICS_URL"]).endswith(":8000")
