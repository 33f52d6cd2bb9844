"""Rules on compiling a model's graphs on CPU before its Neuron tasks start (``Precompile``) and on serving it
cache-hit-only: the target, the modes vLLM Neuron refuses together, where the job writes, and how long each step may
wait for the job.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "CACHE_HIT_ONLY_WITHOUT_PRECOMPILE",
    "PRECOMPILE_BEYOND_CUSTOM_RESOURCE",
    "PRECOMPILE_FIRST_DEPLOYMENT",
    "PRECOMPILE_HOOK_TIMEOUT",
    "PRECOMPILE_INPUT",
    "PRECOMPILE_MODE",
    "PRECOMPILE_TARGET",
    "PRECOMPILE_WITHOUT_CACHE",
]

_CPU_COMPILATION = 'vLLM Neuron "CPU Compilation" (vllm-neuron docs/design/compilation/cpu_compilation.md, 2026-06-22)'

# ---------------------------------------------------------------- errors ---

PRECOMPILE_TARGET = Rule(
    "NEURON160",
    "Precompile target that is not the capacity's instance family",
    "NEURON_PLATFORM_TARGET_OVERRIDE names the neuronx-cc --target the graphs are compiled for, since no hardware is "
    "present to detect it; a graph compiled for another target is a cache miss on the capacity's instances",
    "pass target={target!r} (the capacity's family), or leave target= out: the library takes it from the capacity",
    _CPU_COMPILATION,
)

PRECOMPILE_MODE = Rule(
    "NEURON161",
    "Precompile of a model CPU compile mode cannot compile",
    "speculative decoding is not supported with VLLM_NEURON_CPU_COMPILE, and VLLM_NEURON_CPU_COMPILE and "
    "VLLM_NEURON_CPU_MODE cannot be enabled together; a service that already sets CPU compile mode would compile "
    "instead of serving",
    "serve this model without precompile= (it compiles at its first start), or drop the speculative decoding "
    "arguments or the CPU-mode variables from the container",
    _CPU_COMPILATION,
)

PRECOMPILE_HOOK_TIMEOUT = Rule(
    "NEURON163",
    "Precompile hook that gives up before the job may end",
    "ECS takes the lifecycle hook's timeout action (ROLLBACK) once timeoutInMinutes passed; AWS Batch terminates "
    "an attempt once attemptDurationSeconds passed since it started, so a hook shorter than the job rolls back "
    "deployments whose compile would have succeeded",
    "raise hook_timeout= to at least timeout= (the job's) and the time the job may wait in its queue, or lower "
    "timeout=",
    "ECS API reference: DeploymentLifecycleHookTimeoutConfiguration; AWS Batch API reference: JobTimeout",
)

PRECOMPILE_WITHOUT_CACHE = Rule(
    "NEURON164",
    "Precompile of a model without a compile cache",
    "CPU compilation saves the NEFFs to the remote cache (NEURON_LIBTORCH_REMOTE_CACHE) that the Neuron copies "
    "then read; without one the job's graphs are lost with its container",
    "give the model's Neuron container compile_cache=CompileCache.in_new_file_system(...) (or "
    "CompileCache.on_file_system(...)), then precompile=",
    _CPU_COMPILATION,
)

PRECOMPILE_BEYOND_CUSTOM_RESOURCE = Rule(
    "NEURON165",
    "Precompile job longer than CloudFormation waits for it",
    "on a rolling deployment or a fleet the job runs as a custom resource CloudFormation waits for before it updates "
    "the services, and a custom resource's ServiceTimeout is at most 3,600 seconds (1 hour)",
    "pass timeout= of at most {limit} (the job's time in its queue counts too), or roll the model out with "
    "Rollout.blue_green() (the job then runs in a PRE_SCALE_UP lifecycle hook, which may wait up to 14 days)",
    "CloudFormation template reference: AWS::CloudFormation::CustomResource ServiceTimeout",
)

PRECOMPILE_INPUT = Rule(
    "NEURON166",
    "Precompile of a container the job cannot run as the service does",
    "the job runs the service's own image, command and environment on CPU capacity (AWS Batch): a Batch job "
    "definition takes a command but no entry point, mounts an Amazon EFS access point but no instance directory, "
    "and runs on Fargate with 0.25 to 16 vCPUs and the memory each allows",
    "{fix}",
    f"{_CPU_COMPILATION}; AWS Batch user guide: job definition parameters, Fargate resource requirements",
)

# -------------------------------------------------------------- warnings ---

CACHE_HIT_ONLY_WITHOUT_PRECOMPILE = Rule(
    "NEURON162",
    "Cache-hit-only model with nothing that fills its cache",
    "with NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND=1 and VLLM_NEURON_DISABLE_WARMUP_COMPILE=1 a cache miss is a "
    "RuntimeError at startup: the first start fails unless the cache already holds every graph",
    "give the service precompile=Precompile(...), or acknowledge this warning id when the cache is filled another "
    "way (neuron-ecs precompile in your pipeline)",
    _CPU_COMPILATION,
    severity="warning",
)


PRECOMPILE_FIRST_DEPLOYMENT = Rule(
    "NEURON158",
    "Precompile job too long to run before the service is created",
    "on a native rollout the job runs at each deployment's PRE_SCALE_UP, and once before CloudFormation creates the "
    "service (a custom resource the service depends on, which waits at most an hour); a job timeout beyond that "
    "leaves the first deployment to the hook alone, and a first copy that starts cache-hit-only before its graphs "
    "are in the cache fails",
    "hold timeout= to 55 minutes, or fill the cache before the first deployment (neuron-ecs precompile), or "
    "acknowledge this warning id when the cache is filled",
    _CPU_COMPILATION,
    severity="warning",
)
