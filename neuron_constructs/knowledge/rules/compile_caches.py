"""Rules on a compile cache against the engine of the image it is given to
(:mod:`neuron_constructs.knowledge.engines`): the cache a container gets is the one its engine reads.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "ACCESS_POINT_PREFIX",
    "CACHE_ENGINE_MISMATCH",
    "CACHE_FILE_SYSTEM_VPC",
    "CACHE_WITHOUT_CLIENTS",
    "ENGINE_CACHE_UNNAMED",
    "HOST_MOUNTED_REMOTE_TIER",
    "LOCAL_TIER_PER_TASK",
    "SHARED_CACHE_UNTRUSTED",
]

_COMPILATION_CACHE = (
    'vLLM Neuron "Compilation Cache" (2026-06-22); aws-neuron-sdk "Neuron Persistent Cache" (NEURON_COMPILE_CACHE_URL)'
)

# ---------------------------------------------------------------- errors ---

CACHE_ENGINE_MISMATCH = Rule(
    "NEURON150",
    "Compile cache the image's engine does not read",
    "vLLM Neuron does not read NEURON_COMPILE_CACHE_URL: its remote tier, NEURON_LIBTORCH_REMOTE_CACHE, is an NFS "
    "or FSx mount (S3 only through an FSx for Lustre volume backed by S3); torch-neuronx, NxD Inference and "
    "optimum-neuron read NEURON_COMPILE_CACHE_URL, an s3:// URL",
    "{fix}",
    _COMPILATION_CACHE,
    checked="both",
)

CACHE_WITHOUT_CLIENTS = Rule(
    "NEURON153",
    "Compile cache file system no task may reach",
    "an Amazon EFS mount target admits NFS (TCP 2049) only from what its security group names: the container "
    "instance for bridge and host tasks, the task's own interface for awsvpc tasks; a task that cannot reach it "
    "fails to start",
    "pass clients=[...]: the capacity's Auto Scaling group (bridge and host tasks) or the services' security "
    "groups (awsvpc tasks); more can be added with allow_from()",
    "ECS guide: use Amazon EFS volumes with Amazon ECS; Amazon EFS user guide: security groups for mount targets",
)

HOST_MOUNTED_REMOTE_TIER = Rule(
    "NEURON154",
    "Compile cache on an instance mount for a Managed Instances task",
    "a file system the instances mount (FSx for Lustre, which ECS does not mount as a task volume) reaches a "
    "container only as a host volume's sourcePath, which is supported only for tasks hosted on Amazon EC2 instances",
    "run the model on EC2 capacity (ManualNeuronTaskDefinition) whose instances mount the file system, or give it "
    "CompileCache.in_new_file_system(...) (Amazon EFS, a task volume on Managed Instances too)",
    'ECS guide: specify a bind mount in an Amazon ECS task definition; vLLM Neuron "Compilation Cache" (2026-06-22)',
)

ACCESS_POINT_PREFIX = Rule(
    "NEURON155",
    "Compile cache prefix an EFS access point cannot start with",
    "an access point's root directory is at most 100 characters and four subdirectories, none starting with '.'; "
    "each model's is /<prefix>/<model>",
    "pass a prefix of at most 50 characters and three segments, none starting with '.' (default "
    "'neuron-compile-cache')",
    "Amazon EFS API reference: RootDirectory",
)

CACHE_FILE_SYSTEM_VPC = Rule(
    "NEURON156",
    "Compile cache file system in another VPC than the service",
    "an Amazon EFS file system has mount targets in one VPC at a time, and a task mounts it through a mount target "
    "of its own VPC (its Availability Zone's); a task of a cluster in another VPC finds none and fails to start "
    "(checked where both VPCs are known at synth: literal ids, or VPCs this app creates)",
    "give the service a cache on a file system of its cluster's VPC: CompileCache.in_new_file_system(scope, id, "
    "vpc=cluster.vpc, clients=[...]), or place the service on a cluster in {vpc}",
    'Amazon EFS user guide: creating mount targets ("mount targets for the file system in one VPC at a time"); ECS '
    "guide: use Amazon EFS volumes with Amazon ECS",
)

# -------------------------------------------------------------- warnings ---

ENGINE_CACHE_UNNAMED = Rule(
    "NEURON151",
    "Compile cache for an engine whose cache no source names",
    "a variable the engine does not read caches nothing; the library sets a cache only where the engine's own "
    "documentation names what it reads",
    "drop compile_cache= for this container, or acknowledge this warning id if the image reads a cache you set "
    "yourself",
    _COMPILATION_CACHE,
    severity="warning",
)
LOCAL_TIER_PER_TASK = Rule(
    "NEURON152",
    "vLLM cache root that does not outlive its task",
    "a host volume's sourcePath persists on the instance until deleted, but sourcePath is supported only for tasks "
    "hosted on Amazon EC2 instances; without it the volume goes with the task, so a restarted task compiles from "
    "the remote tier again",
    "run the model on EC2 capacity (ManualNeuronTaskDefinition) to keep the local tier on the instance, or "
    "acknowledge this warning id: the remote tier still serves every restart",
    "ECS guide: specify a bind mount in an Amazon ECS task definition; ECS API reference: HostVolumeProperties",
    severity="warning",
)
SHARED_CACHE_UNTRUSTED = Rule(
    "NEURON157",
    "Shared compile cache across models that do not trust each other",
    "with shared=True every model's task reads and writes one prefix (or directory): a task of one model can "
    "overwrite or delete the compiled graphs (NEFFs) another loads, and put graphs there that the other's Neuron "
    "runtime loads and runs on its devices; tasks trust each other here when one stack defines them both (one owner "
    "deploys them) or they run with the same task role",
    "drop shared=True: each model gets its own prefix or access point, <prefix>/<model>, which only its own task role "
    "may use (the default); or define the models in one stack; acknowledge this warning id when the other stack's "
    "owner is trusted with this model's graphs",
    'aws-neuron-sdk "Neuron Persistent Cache" (a cache entry is the compiled NEFF the runtime loads); IAM policies '
    "on S3 prefixes and Amazon EFS access points",
    severity="warning",
)
