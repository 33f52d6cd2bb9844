"""Which compile cache each Neuron serving or training engine reads: the engine of an image decides what a
:class:`~neuron_constructs.compute.model_sources.CompileCache` sets in its container.

Plain Python, no AWS CDK. Each engine of :data:`ENGINES` names its source:

* torch-neuronx (PyTorch/XLA; ``torch_neuronx.trace``, NxD) and training on it: ``NEURON_COMPILE_CACHE_URL``, which
  "will use the AWS S3 URL as the cache location" when it starts with ``s3://`` (aws-neuron-sdk, "Neuron Persistent
  Cache", about-neuron/arch/neuron-features/neuron-caching.rst before v2.34.0: the legacy PyTorch/XLA cache).
* vLLM on NxD Inference (the vLLM 0.16 image): NxD Inference's persistent cache, "enabled by default", on the same
  ``NEURON_COMPILE_CACHE_URL`` (aws-neuron-sdk, NxD Inference feature guide). NxD Inference also documents
  ``NEURON_COMPILED_ARTIFACTS``, a directory holding a model compiled ahead of time (its vLLM user guide): that is a
  model's artifacts, which :class:`~neuron_constructs.compute.model_sources.ModelArtifacts` copies, not a cache.
* optimum-neuron (the Hugging Face Neuron containers, TGI): its compile cache from ``NEURON_COMPILE_CACHE_URL``
  (``optimum/neuron/cache/hub_cache.py``: ``CacheUrl.get_cache_url()``, ``CompileCacheS3`` for ``s3://``).
* vLLM Neuron (the vLLM Neuron plugin, generally available in Neuron 2.34.0): a two-tier cache and no
  ``NEURON_COMPILE_CACHE_URL``. "Local cache: ``$VLLM_CACHE_ROOT/neuron/compile_cache/<hash>/``; Remote cache:
  ``$NEURON_LIBTORCH_REMOTE_CACHE/<hash>/`` (optional)", the remote tier "an NFS or FSx mount that shares compiled
  artifacts across nodes and survives restarts" (vLLM Neuron documentation, "Compilation Cache",
  vllm-neuron/docs/design/compilation/compilation_cache.md, date-modified 2026-06-22). On the native route the
  Precompile Cache is on "only when ``VLLM_NEURON_BACKEND`` is ``neuron_native`` or ``neuron``. When the variable
  is not set, the server uses the native route, but the cache is off", and it needs "a persistent
  ``VLLM_CACHE_ROOT``" ("How to use the Precompile Cache", vllm-neuron/docs/guides/how-to-precompile-cache.md,
  date_updated 2026-10-13). The XLA route does not use it. The same guide as published with Neuron 2.34.0
  (date-modified 2026-10-01) calls the cache on by default on the native route (``VLLM_NEURON_BACKEND=neuron_native``
  "which is the default"); the later text turns it on only with the variable set: setting it is right under both.
  The native route is vLLM Neuron's default from Neuron 2.33.0 (v2.33.0 guide "Compilation route": "Keep the default
  native route, go back to the XLA route").
* torch-neuron (Inf1): ahead-of-time ``torch.neuron.trace``; no source found names a persistent compile cache it
  reads, so a cache given to it sets nothing and warns (NEURON151).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ENGINES",
    "OPTIMUM_NEURON",
    "TORCH_NEURON",
    "TORCH_NEURONX",
    "TRAINING",
    "VLLM_NEURON_NATIVE",
    "VLLM_NXDI",
    "Engine",
]

S3_URL = "s3-url"
"""The cache is ``NEURON_COMPILE_CACHE_URL=s3://...``."""
FILE_TIERS = "file-tiers"
"""The cache is a local directory (``VLLM_CACHE_ROOT``) and a shared POSIX mount (``NEURON_LIBTORCH_REMOTE_CACHE``)."""


@dataclass(frozen=True)
class Engine:
    """What compiles and serves (or trains) a model in an image, and the compile cache it reads.

    ``cache``: ``S3_URL``, ``FILE_TIERS``, or ``None`` where no source names a cache the engine reads.
    ``precompile_backend``: the ``VLLM_NEURON_BACKEND`` that switches the Precompile Cache on, ``None`` where the
    engine has none. ``source``: where what it reads is documented.
    """

    name: str
    cache: str | None
    source: str
    precompile_backend: str | None = None


_PERSISTENT_CACHE = 'aws-neuron-sdk, "Neuron Persistent Cache" (NEURON_COMPILE_CACHE_URL, s3:// URLs)'
TORCH_NEURONX = Engine("torch-neuronx/NxD", S3_URL, _PERSISTENT_CACHE)
TRAINING = Engine("training (torch-neuronx, NxD Training)", S3_URL, _PERSISTENT_CACHE)
VLLM_NXDI = Engine(
    "vLLM on NxD Inference",
    S3_URL,
    f"{_PERSISTENT_CACHE}; NxD Inference feature guide (the persistent cache is enabled by default)",
)
OPTIMUM_NEURON = Engine(
    "optimum-neuron/TGI", S3_URL, "huggingface/optimum-neuron optimum/neuron/cache/hub_cache.py (CompileCacheS3)"
)
VLLM_NEURON_NATIVE = Engine(
    "vLLM Neuron (native route)",
    FILE_TIERS,
    'vLLM Neuron "Compilation Cache" (2026-06-22); "How to use the Precompile Cache" (2026-10-13)',
    precompile_backend="neuron_native",
)
TORCH_NEURON = Engine("torch-neuron (Inf1)", None, "no source names a persistent compile cache torch-neuron reads")

ENGINES: dict[str, Engine] = {
    "TORCH_NEURONX": TORCH_NEURONX,
    "TRAINING": TRAINING,
    "VLLM_NXDI": VLLM_NXDI,
    "OPTIMUM_NEURON": OPTIMUM_NEURON,
    "VLLM_NEURON_NATIVE": VLLM_NEURON_NATIVE,
    "TORCH_NEURON": TORCH_NEURON,
}
"""Every engine, by the name of its constant."""
