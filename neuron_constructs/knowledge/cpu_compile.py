"""What compiling a vLLM Neuron model on CPU takes, and what serving it cache-hit-only sets: plain data, no AWS CDK.

From vLLM Neuron's "CPU Compilation" (vllm-neuron ``docs/design/compilation/cpu_compilation.md``, date_updated
2026-06-22, published with Neuron 2.34.0):

* ``VLLM_NEURON_CPU_COMPILE=1`` "compiles model graphs on a CPU instance ... but does not execute them", and the
  NEFFs can be saved "to a remote cache" (``NEURON_LIBTORCH_REMOTE_CACHE``, an NFS or FSx mount) "and reuse[d] ... for
  later execution on Neuron devices";
* ``NEURON_PLATFORM_TARGET_OVERRIDE`` "is required to specify the target platform for compilation, since no hardware
  is present to auto-detect it": a ``neuronx-cc compile --target`` value (:data:`TARGETS`: ``trn2``, ``trn1``,
  ``inf2``; aws-neuron-sdk#1303 shows ``--target=inf2`` for a CPU cross-compile);
* ``VLLM_NEURON_CPU_COMPILE`` and ``VLLM_NEURON_CPU_MODE`` "cannot be enabled together";
* ``NEURON_LIBTORCH_PARALLEL_COMPILE_WORKERS``: the parallel compilation workers, "defaults to 8";
* "Speculative decoding is not supported with ``VLLM_NEURON_CPU_COMPILE`` mode". vLLM turns speculative decoding on
  with the engine argument ``--speculative-config`` (JSON; EAGLE3 and DFlash drafters on Neuron, vLLM Neuron "Concepts
  & architecture": Speculation) and formerly ``--speculative-model`` / ``--num-speculative-tokens``
  (:func:`speculative_decoding` looks for each);
* production "strictly cache-hit-only": ``NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND=1`` and
  ``VLLM_NEURON_DISABLE_WARMUP_COMPILE=1``, the latter treating "any cache miss ... as a fatal error, raising
  ``RuntimeError`` instead of silently compiling" (:data:`CACHE_HIT_ONLY`). These are vLLM Neuron's; torch-neuronx and
  NxD Inference document no equivalent (their persistent cache compiles on a miss), so an image of those engines gets
  neither.

The command that compiles is the serving command itself: the page's example runs ``python3 -m
vllm.entrypoints.openai.api_server --model ... --tensor-parallel-size 32`` with the variables above; the worker skips
the prefill, decode and vision warm-ups under ``VLLM_NEURON_CPU_COMPILE`` after the graphs are compiled
(``vllm_neuron/vllm/worker/neuron_worker.py``, ``compile_or_warm_up_model``), logs "Model warmup completed" and
returns, and the server goes on to listen as it would on a Neuron device: nothing in that path exits. So the job runs
the serving command under :data:`COMPILE_THEN_STOP` (:func:`job_command`): the server in the background, its
``/health`` asked every :data:`HEALTH_POLL_SECONDS` seconds; the first ``200`` means the engine is up, every graph
compiled and written, and the script stops the server and exits 0. A server that exits before it answers ends the job
with the server's status (a failed compile fails the job). vLLM's server answers ``GET /health`` with 200 once its
engine runs (vLLM's OpenAI-compatible server, ``/health``). The job's image runs the command through its own entry
point, which the Neuron vLLM images' runs as a command (``ENTRYPOINT ["python", "/usr/local/bin/vllm_entrypoint.py"]``,
the image table's ``NeuronImage.entry_point``).

Time limits: an ECS lifecycle hook's ``timeoutInMinutes`` is 1 to 20,160, default 1,440, with ``ROLLBACK`` the
default action (ECS API reference, ``DeploymentLifecycleHookTimeoutConfiguration``); a CloudFormation custom resource's
``ServiceTimeout`` "must be an integer from 1 to 3600" seconds, default 3,600 (CloudFormation template reference,
``AWS::CloudFormation::CustomResource``); AWS Batch on Fargate takes 0.25 to 16 vCPUs with the memory of
:data:`FARGATE_MEMORY_MIB` (AWS Batch API reference, ``ResourceRequirement``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

__all__ = [
    "CACHE_HIT_ONLY",
    "COMPILE_THEN_STOP",
    "CPU_COMPILE_VARIABLE",
    "CPU_MODE_VARIABLE",
    "CUSTOM_RESOURCE_LIMIT_SECONDS",
    "DEFAULT_PARALLEL_WORKERS",
    "DEFAULT_SERVER_PORT",
    "FARGATE_MEMORY_MIB",
    "HEALTH_POLL_SECONDS",
    "HOOK_TIMEOUT_MINUTES",
    "PARALLEL_WORKERS_VARIABLE",
    "TARGETS",
    "TARGET_VARIABLE",
    "fargate_memory_problem",
    "job_command",
    "server_port",
    "speculative_decoding",
    "target_of_family",
]

CPU_COMPILE_VARIABLE = "VLLM_NEURON_CPU_COMPILE"
CPU_MODE_VARIABLE = "VLLM_NEURON_CPU_MODE"
TARGET_VARIABLE = "NEURON_PLATFORM_TARGET_OVERRIDE"
PARALLEL_WORKERS_VARIABLE = "NEURON_LIBTORCH_PARALLEL_COMPILE_WORKERS"
DEFAULT_PARALLEL_WORKERS = 8
CACHE_HIT_ONLY: dict[str, str] = {
    "NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND": "1",
    "VLLM_NEURON_DISABLE_WARMUP_COMPILE": "1",
}
"""What a production copy of a precompiled vLLM Neuron model runs with: a cache miss fails the start."""

TARGETS: dict[str, str] = {"trn2": "trn2", "trn2u": "trn2", "trn1": "trn1", "trn1n": "trn1", "inf2": "inf2"}
"""The ``neuronx-cc --target`` of each instance family a precompile serves (Trn1n carries the Trn1 chip)."""

CUSTOM_RESOURCE_LIMIT_SECONDS = 3600
HOOK_TIMEOUT_MINUTES = (1, 20_160)

FARGATE_MEMORY_MIB: dict[float, tuple[int, int, int]] = {
    0.25: (512, 2048, 512),
    0.5: (1024, 4096, 1024),
    1: (2048, 8192, 1024),
    2: (4096, 16384, 1024),
    4: (8192, 30720, 1024),
    8: (16384, 61440, 4096),
    16: (32768, 122880, 8192),
}
"""vCPUs -> (least, most, step) MiB of memory a Fargate job takes (0.25 vCPU: 512, 1,024 or 2,048 MiB)."""

_SPECULATIVE_FLAGS = ("--speculative-config", "--speculative_config", "--speculative-model", "--num-speculative-tokens")


def target_of_family(family: str) -> str | None:
    """The ``neuronx-cc --target`` for instance ``family``, ``None`` for a family CPU compilation does not serve."""
    return TARGETS.get(family)


def fargate_memory_problem(vcpus: float, memory_mib: int) -> str | None:
    """Why Fargate refuses ``vcpus`` with ``memory_mib``, or ``None``."""
    if vcpus not in FARGATE_MEMORY_MIB:
        return f"vcpus={vcpus:g} is not one of Fargate's {', '.join(f'{v:g}' for v in FARGATE_MEMORY_MIB)}"
    least, most, step = FARGATE_MEMORY_MIB[vcpus]
    if not least <= memory_mib <= most or (memory_mib - least) % step:
        if vcpus == 0.25:
            return f"memory_mib={memory_mib} with 0.25 vCPU: Fargate takes 512, 1024 or 2048"
        return f"memory_mib={memory_mib} with {vcpus:g} vCPUs: Fargate takes {least} to {most} in steps of {step}"
    return None


def speculative_decoding(command: Sequence[str], environment: Mapping[str, str]) -> str | None:
    """The argument that turns speculative decoding on in ``command`` (a list, or one shell string in it), or
    ``None``. ``environment`` is read for a ``VLLM_*`` variable naming a speculative configuration."""
    words: list[str] = []
    for part in command:
        try:
            words.extend(shlex.split(part) if " " in part else [part])
        except ValueError:
            words.append(part)
    for word in words:
        flag = word.split("=", 1)[0]
        if flag in _SPECULATIVE_FLAGS:
            return flag
    for name in environment:
        if name.startswith("VLLM_") and "SPECULATIVE" in name.upper():
            return name
    return None


HEALTH_POLL_SECONDS = 15
"""How often the compile job asks the server's ``/health`` (seconds)."""
DEFAULT_SERVER_PORT = 8000
"""vLLM's port when neither ``--port`` nor a port mapping names one."""
COMPILE_THEN_STOP = """\
port=$1; every=$2; shift 2
"$@" &
server=$!
trap 'kill "$server" 2>/dev/null' TERM INT
while kill -0 "$server" 2>/dev/null; do
  if python3 -c 'import sys, urllib.request as u
u.build_opener(u.ProxyHandler({})).open("http://127.0.0.1:%s/health" % sys.argv[1], timeout=5)' "$port" 2>/dev/null
  then
    echo "neuron-precompile: the server answers /health on port $port: every graph is compiled; stopping it"
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    exit 0
  fi
  sleep "$every"
done
wait "$server"
status=$?
echo "neuron-precompile: the server exited with status $status before it answered /health"
exit "$status"
"""
"""The compile job's command (POSIX ``sh -c``, ``$0`` ``neuron-precompile``): ``port every server-command...``; runs
the server, stops it once ``/health`` answers 200 on ``127.0.0.1:port`` (asked directly, never through a proxy), and
exits 0; exits with the server's status if it ends first."""


def server_port(command: Sequence[str], mapped: Sequence[int] = ()) -> int:
    """The port the serving command listens on: its ``--port N`` (or ``--port=N``), else the first of the container's
    ``mapped`` ports, else vLLM's default, :data:`DEFAULT_SERVER_PORT`."""
    for index, word in enumerate(command):
        value = word.split("=", 1)[1] if word.startswith("--port=") else None
        if word == "--port" and index + 1 < len(command):
            value = command[index + 1]
        if value is not None and value.isdigit() and 0 < int(value) < 65536:
            return int(value)
    return next(iter(mapped), DEFAULT_SERVER_PORT)


def job_command(command: Sequence[str], port: int, every: float = HEALTH_POLL_SECONDS) -> list[str]:
    """The compile job's command: ``command`` (the serving command) under :data:`COMPILE_THEN_STOP`."""
    return ["/bin/sh", "-c", COMPILE_THEN_STOP, "neuron-precompile", str(port), f"{every:g}", *command]
