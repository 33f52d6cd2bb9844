"""Rules on the model server a Neuron container runs (``VllmServer``): its options, its tensor-parallel degree against
the NeuronCores the task holds, and what the image's engine release serves.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "TENSOR_PARALLEL_CORES",
    "TENSOR_PARALLEL_IDLE_CORES",
    "VLLM_LORA",
    "VLLM_SERVER_ENGINE",
    "VLLM_SERVER_INPUT",
]

_NXDI_FEATURE_GUIDE = (
    'aws-neuron-sdk, NxD Inference feature guide, "Tensor parallelism" (supported degrees per instance family)'
)
_DATA_PARALLEL = (
    'aws-neuron-sdk, "Llama 3.3 70B data parallel" tutorial (trn2-llama3.3-70b-dp-tutorial: "DP x TP degree does not '
    'exceed the number of model cores"); vllm-neuron, "Data parallelism" design (world size is the NeuronCores '
    "exposed at the LNC configuration)"
)
_VLLM_OPTIONS = (
    "vLLM, vllm/entrypoints/openai/cli_args.py and vllm/config/lora.py; vllm-neuron, docs/guides/reference-"
    "configuration.md (2026-08-13)"
)

# ---------------------------------------------------------------- errors ---

VLLM_SERVER_INPUT = Rule(
    "NEURON173",
    "vLLM server option the library writes, or no engine route takes",
    "VllmServer writes the serving command, the port mapping and the container health check from its fields; an "
    "option given twice is the last one vLLM reads, and --override-neuron-config (the retired vLLM fork's), "
    "--quantization (vLLM Neuron: do not set it, the checkpoint carries the format) and --disable-log-requests "
    "(removed from vLLM) are not options of the engines the image table holds",
    "{fix}",
    _VLLM_OPTIONS,
)

TENSOR_PARALLEL_CORES = Rule(
    "NEURON174",
    "Tensor-parallel degree the container's NeuronCores cannot hold",
    "vLLM shards the model over --tensor-parallel-size NeuronCores of those visible to the container: the degree "
    "cannot exceed them, and vLLM on NxD Inference supports the degrees its feature guide lists per family (Trn2 1, "
    "2, 4, 8, 16, 32, 64 at LNC 2; Trn1 1, 2, 8, 16, 32; Inf2 1, 2, 4, 8, 24)",
    "{fix}",
    f"{_NXDI_FEATURE_GUIDE}; {_DATA_PARALLEL}",
)

VLLM_LORA = Rule(
    "NEURON176",
    "LoRA serving the engine release or vLLM does not take",
    "vLLM takes --max-lora-rank of 1, 8, 16, 32, 64, 128, 256, 320 or 512 and at least one LoRA; vLLM Neuron loads "
    "each --lora-modules adapter into one of --max-loras slots at start, and serves multi-LoRA from Neuron 2.34.0",
    "{fix}",
    "vLLM, vllm/config/lora.py; aws-neuron-sdk v2.34.0 release notes (multi-LoRA, 2026-11-30); vllm-neuron "
    '"Multi-LoRA" design and tutorial (2026-11-18); NxD Inference multi-LoRA tutorial',
)

VLLM_SERVER_ENGINE = Rule(
    "NEURON177",
    "vLLM server for an image that does not serve with vLLM",
    "the image table records each image's engine: only vLLM Neuron and vLLM on NxD Inference run `vllm serve`",
    "give VllmServer to a container of a vLLM image (VLLM_TRN2 on Trn2, VLLM on Inf2 and Trn1), or write this "
    "image's own command= instead",
    "neuron_constructs.knowledge.container_images (the image table) and its sources",
)

# -------------------------------------------------------------- warnings ---

TENSOR_PARALLEL_IDLE_CORES = Rule(
    "NEURON175",
    "Tensor-parallel degree below the NeuronCores the container holds",
    "vLLM runs its model on --tensor-parallel-size NeuronCores; the other NeuronCores the task holds stay idle, "
    "and no other task can use them",
    "hold only the cores the model runs on (fewer devices, or cores= on the task definition), raise "
    "tensor_parallel_size to the cores held, or acknowledge this warning id when the idle cores are intended",
    _DATA_PARALLEL,
    severity="warning",
)
