"""A vLLM server as typed options: the ``vllm serve`` command written from them, checked against the NeuronCores the
container holds and the engine release of its image.

Plain Python, no AWS CDK. What each check rests on:

* vLLM's OpenAI server listens on port 8000 by default (``FrontendArgs.port``, vllm/entrypoints/openai/cli_args.py),
  answers ``GET /health`` with an empty 200 once the engine is up and serves Prometheus text at ``/metrics`` on the
  same port (vLLM, docs/design/metrics.md; vLLM Neuron quickstart, 2026-05-28).
* ``--tensor-parallel-size`` shards the model over that many NeuronCores of those visible to the container
  (``NEURON_RT_VISIBLE_CORES``, the plugin's device control variable); "DP x TP degree does not exceed the number of
  model cores", counted at the LNC configuration (NxD Inference data-parallel tutorial; vllm-neuron "Data
  parallelism"). vLLM on NxD Inference supports the degrees its feature guide lists per family: Trn2 1, 2, 4, 8, 16,
  32, 64 (LNC 2), Trn1 1, 2, 8, 16, 32, Inf2 1, 2, 4, 8, 24. No source says the degree must equal the cores held;
  fewer leaves the others idle, which warns (NEURON175).
* LoRA: vLLM takes ``--max-lora-rank`` of 1, 8, 16, 32, 64, 128, 256, 320 or 512 (default 16) and ``--max-loras`` of
  at least 1 (vllm/config/lora.py); adapters as ``--lora-modules name=path``. vLLM Neuron serves multi-LoRA from
  Neuron 2.34.0 (release notes, 2026-11-30) and loads each listed adapter into one of ``--max-loras`` slots at start
  ("Multi-LoRA" design, 2026-11-18); vLLM on NxD Inference serves it with the same options (its multi-LoRA
  tutorial).
* Options no engine of the image table takes: ``--override-neuron-config`` (the retired vLLM fork's; vLLM on NxD
  Inference reads ``--additional-config '{"override_neuron_config": ...}'``, vLLM Neuron ``'{"neuron_config":
  ...}'``), ``--quantization`` (vLLM Neuron's reference configuration: do not set it) and ``--disable-log-requests``
  (removed from vLLM; ``--no-enable-log-requests`` is its successor).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from neuron_constructs.knowledge import engines, rules
from neuron_constructs.knowledge.engines import Engine

__all__ = [
    "DEFAULT_PORT",
    "HEALTH_PATH",
    "LORA_RANKS",
    "METRICS_PATH",
    "ServerPlan",
    "VllmLora",
    "VllmServer",
    "check_server_engine",
    "plan_server",
]

DEFAULT_PORT = 8000
"""vLLM's OpenAI server port unless ``--port`` says otherwise."""
HEALTH_PATH = "/health"
"""Answers 200 once the engine is up."""
METRICS_PATH = "/metrics"
"""Prometheus text, on the server's port."""
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The ``--max-lora-rank`` values vLLM takes."""
NXDI_TENSOR_PARALLEL_DEGREES: Mapping[str, tuple[int, ...]] = {
    "trn2": (1, 2, 4, 8, 16, 32, 64),
    "trn1": (1, 2, 8, 16, 32),
    "trn1n": (1, 2, 8, 16, 32),
    "inf2": (1, 2, 4, 8, 24),
}
"""The degrees vLLM on NxD Inference supports per family (its feature guide; Trn2 at LNC 2)."""
NATIVE_LORA_SDK = (2, 34, 0)
"""The Neuron release from which vLLM Neuron serves multi-LoRA."""

WRITTEN_OPTIONS = (
    "--tensor-parallel-size",
    "-tp",
    "--port",
    "--max-model-len",
    "--max-num-seqs",
    "--served-model-name",
    "--enable-lora",
    "--max-loras",
    "--max-lora-rank",
    "--lora-modules",
)
"""Options :class:`VllmServer` writes from its fields: not taken again in ``extra_args``."""
NO_ROUTE_OPTIONS: Mapping[str, str] = {
    "--override-neuron-config": "put the settings in extra_args as --additional-config with a JSON object: "
    "'{\"override_neuron_config\": {...}}' for vLLM on NxD Inference, '{\"neuron_config\": {...}}' for vLLM Neuron",
    "--quantization": "drop it: the checkpoint carries FP8 weights, and vLLM Neuron takes MXFP4 in "
    "--additional-config's neuron_config.quantization",
    "--disable-log-requests": "drop it (requests are not logged by default), or pass --no-enable-log-requests",
}
"""Options no engine route of the image table takes, with what to do instead."""

_ADAPTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_WHERE = "VllmServer"


def _whole(value: object, name: str, *, where: str = _WHERE, low: int = 1, high: int = 1 << 20) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise rules.VLLM_SERVER_INPUT.error(
            where,
            f"{name}={value!r} is not a whole number from {low} to {high}",
            fix=f"pass {name} from {low} to {high}",
        )
    return value


@dataclass(frozen=True)
class VllmLora:
    """LoRA adapters a :class:`VllmServer` serves beside its base model.

    ``adapters``: adapter name to its path in the container (for example under ``MODEL_DIR``, where
    ``ModelArtifacts`` copies a prefix), each served as the model ``name``. ``max_loras``: the adapter slots (default:
    one per adapter). ``max_lora_rank``: the largest rank of an adapter (default 16, vLLM's).
    """

    adapters: Mapping[str, str]
    max_loras: int | None = None
    max_lora_rank: int = 16

    def __post_init__(self) -> None:
        where = "VllmLora"
        if not isinstance(self.adapters, Mapping) or not self.adapters:
            raise rules.VLLM_LORA.error(
                where,
                f"adapters={self.adapters!r} names no adapter",
                fix="pass adapters={'name': '/path/in/container'}",
            )
        for name, path in self.adapters.items():
            if not isinstance(name, str) or not _ADAPTER_NAME.fullmatch(name):
                raise rules.VLLM_LORA.error(
                    where,
                    f"adapter name {name!r} is not 1 to 128 letters, digits, '.', '_' or '-' starting with a letter "
                    "or digit",
                    fix="name each adapter as clients will ask for it, in those characters",
                )
            if not isinstance(path, str) or not path.startswith("/") or any(c.isspace() for c in path) or "=" in path:
                raise rules.VLLM_LORA.error(
                    where,
                    f"adapter {name!r} is at {path!r}, not an absolute path in the container without spaces or '='",
                    fix="give the adapter's directory in the container (for example under MODEL_DIR)",
                )
        rank = self.max_lora_rank
        if isinstance(rank, bool) or not isinstance(rank, int) or rank not in LORA_RANKS:
            raise rules.VLLM_LORA.error(
                where,
                f"max_lora_rank={self.max_lora_rank!r} is not one vLLM takes",
                fix=f"pass max_lora_rank as one of {', '.join(map(str, LORA_RANKS))} (at least each adapter's rank)",
            )
        if self.max_loras is not None:
            _whole(self.max_loras, "max_loras", where=where, high=1024)
            if self.max_loras < len(self.adapters):
                raise rules.VLLM_LORA.error(
                    where,
                    f"max_loras={self.max_loras} slots for {len(self.adapters)} adapters, each loaded into a slot at "
                    "start",
                    fix=f"pass max_loras={len(self.adapters)} or more, or list fewer adapters",
                )

    @property
    def slots(self) -> int:
        """``--max-loras``."""
        return self.max_loras if self.max_loras is not None else len(self.adapters)


@dataclass(frozen=True)
class VllmServer:
    """vLLM's OpenAI server for a model, as typed options: the library writes its command, port and health check.

    ``model``: the Hugging Face id or the path in the container. ``tensor_parallel_size``: the NeuronCores it shards
    over (default: every NeuronCore the container holds, logical cores at the task's ``lnc``). ``max_model_len``,
    ``max_num_seqs``: vLLM's (default: vLLM's; on Neuron the largest decode batch bucket is ``max_num_seqs``).
    ``served_model_name``: the name clients ask for and the metrics carry, also the model's name in the library's
    metrics (default: the model name the task reports, else ``model``). ``port``: default 8000. ``lora``: adapters
    (:class:`VllmLora`). ``extra_args``: further ``vllm serve`` arguments, written last.
    """

    model: str
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    served_model_name: str | None = None
    port: int = DEFAULT_PORT
    lora: VllmLora | None = None
    extra_args: Sequence[str] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip() or self.model != self.model.strip():
            raise rules.VLLM_SERVER_INPUT.error(
                _WHERE, f"model={self.model!r} is not a model id or path", fix="pass model='org/name' or a path"
            )
        if self.tensor_parallel_size is not None:
            _whole(self.tensor_parallel_size, "tensor_parallel_size", high=512)
        if self.max_model_len is not None:
            _whole(self.max_model_len, "max_model_len", low=16, high=1 << 24)
        if self.max_num_seqs is not None:
            _whole(self.max_num_seqs, "max_num_seqs", high=4096)
        _whole(self.port, "port", high=65535)
        if self.lora is not None and not isinstance(self.lora, VllmLora):
            raise rules.VLLM_LORA.error(_WHERE, f"lora={self.lora!r}", fix="pass lora=VllmLora(adapters={...})")
        if isinstance(self.extra_args, str) or not all(isinstance(a, str) for a in self.extra_args):
            raise rules.VLLM_SERVER_INPUT.error(
                _WHERE,
                f"extra_args={self.extra_args!r} is not a sequence of strings",
                fix="pass extra_args as a list, one argument per item: ['--block-size', '32']",
            )
        for argument in self.extra_args:
            option = argument.split("=", 1)[0]
            if option in WRITTEN_OPTIONS:
                raise rules.VLLM_SERVER_INPUT.error(
                    _WHERE,
                    f"extra_args gives {option}, which VllmServer writes from its fields",
                    fix="set the VllmServer field of that option instead of extra_args",
                )
            if option in NO_ROUTE_OPTIONS:
                raise rules.VLLM_SERVER_INPUT.error(
                    _WHERE,
                    f"extra_args gives {option}, which no engine of the image table takes",
                    fix=NO_ROUTE_OPTIONS[option],
                )


@dataclass(frozen=True)
class ServerPlan:
    """What a :class:`VllmServer` writes into its container: the command, the port, and how many NeuronCores it leaves
    idle of those held."""

    command: tuple[str, ...]
    port: int
    served_model_name: str
    tensor_parallel_size: int
    idle_cores: int
    health_path: str = HEALTH_PATH
    metrics_path: str = METRICS_PATH


def _release(sdk: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", sdk)[:3])


def plan_server(server: VllmServer, *, where: str, cores: int | None, served_model_name: str) -> ServerPlan:
    """The command ``server`` runs in a container at ``where`` holding ``cores`` NeuronCores (logical, at the task's
    LNC; ``None``: unknown at the call, every core of the instance it lands on), served as ``served_model_name``.
    NEURON174 at the call; the image's engine is checked once the container names it (:func:`check_server_engine`)."""
    degree = server.tensor_parallel_size if server.tensor_parallel_size is not None else cores
    if degree is None:
        raise rules.TENSOR_PARALLEL_CORES.error(
            where,
            "the NeuronCores the container holds are known only on the instance it lands on",
            fix="pass tensor_parallel_size= (every NeuronCore of the instance type the capacity runs, at its LNC)",
        )
    if cores is not None and degree > cores:
        raise rules.TENSOR_PARALLEL_CORES.error(
            where,
            f"tensor_parallel_size={degree} is more than the {cores} NeuronCores the container holds",
            fix=f"pass tensor_parallel_size={cores} or less, or give the container more devices",
        )
    command = [
        "vllm",
        "serve",
        server.model,
        "--tensor-parallel-size",
        str(degree),
        "--port",
        str(server.port),
        "--served-model-name",
        served_model_name,
    ]
    if server.max_model_len is not None:
        command += ["--max-model-len", str(server.max_model_len)]
    if server.max_num_seqs is not None:
        command += ["--max-num-seqs", str(server.max_num_seqs)]
    if server.lora is not None:
        command += ["--enable-lora", "--max-loras", str(server.lora.slots)]
        command += ["--max-lora-rank", str(server.lora.max_lora_rank), "--lora-modules"]
        command += [f"{name}={path}" for name, path in server.lora.adapters.items()]
    command += list(server.extra_args)
    idle = 0 if cores is None else cores - degree
    return ServerPlan(tuple(command), server.port, served_model_name, degree, idle)


def check_server_engine(
    server: VllmServer, *, where: str, engine: Engine | None, sdk: str | None, family: str | None, degree: int
) -> None:
    """``server`` against its image's ``engine`` (``None``: an image the table does not hold, not checked) of Neuron
    release ``sdk``, on instance ``family`` (``None``: not known at the call), at tensor-parallel ``degree``:
    NEURON177 for an engine that does not run ``vllm serve``, NEURON174 for a degree vLLM on NxD Inference does not
    support on the family, NEURON176 for LoRA on a vLLM Neuron release before 2.34.0."""
    if engine is None:
        return
    if engine not in (engines.VLLM_NEURON_NATIVE, engines.VLLM_NXDI):
        raise rules.VLLM_SERVER_ENGINE.error(where, f"the image's engine is {engine.name}")
    supported = NXDI_TENSOR_PARALLEL_DEGREES.get(family or "") if engine is engines.VLLM_NXDI else None
    if supported is not None and degree not in supported:
        fitting = [d for d in supported if d <= degree] or list(supported)
        raise rules.TENSOR_PARALLEL_CORES.error(
            where,
            f"tensor_parallel_size={degree} is not a degree vLLM on NxD Inference supports on {family}",
            fix=f"pass tensor_parallel_size as one of {', '.join(map(str, fitting))}",
        )
    native = engine is engines.VLLM_NEURON_NATIVE
    if server.lora is not None and native and sdk is not None and _release(sdk) < NATIVE_LORA_SDK:
        raise rules.VLLM_LORA.error(
            where,
            f"the image's vLLM Neuron is Neuron {sdk}'s; it serves LoRA adapters from Neuron 2.34.0",
            fix="run a vLLM Neuron image of Neuron 2.34.0 or later, or serve without lora=",
        )
