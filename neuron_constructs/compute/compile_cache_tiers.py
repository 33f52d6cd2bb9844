"""vLLM Neuron's compile cache on ECS: a shared POSIX remote tier on Amazon EFS and a local tier on the instance.

vLLM Neuron does not read ``NEURON_COMPILE_CACHE_URL``. Its cache has two tiers: "Local cache:
``$VLLM_CACHE_ROOT/neuron/compile_cache/<hash>/``" and "Remote cache: ``$NEURON_LIBTORCH_REMOTE_CACHE/<hash>/``
(optional)", the remote one "an NFS or FSx mount that shares compiled artifacts across nodes and survives restarts"
(vLLM Neuron documentation, "Compilation Cache", date-modified 2026-06-22; "S3 is supported indirectly by mounting an
FSx for Lustre volume backed by S3"). On the native route its Precompile Cache is on "only when
``VLLM_NEURON_BACKEND`` is ``neuron_native`` or ``neuron``" and needs "a persistent ``VLLM_CACHE_ROOT``" ("How to use
the Precompile Cache", date_updated 2026-10-13).

What :func:`apply_file_tiers` gives a container, per model (``model``: the construct path
:class:`~neuron_constructs.compute.model_sources.CompileCache` keys a model by):

* the remote tier: an ECS Amazon EFS volume through the model's own access point (its root directory
  ``/<prefix>/<model>``, :func:`access_point_directory`, created owned by :data:`CACHE_UID`, every request made as
  that user), with transit encryption and IAM authorization, mounted at :data:`REMOTE_CACHE_PATH`;
  ``NEURON_LIBTORCH_REMOTE_CACHE`` names it. The task role may mount and write through that access point only
  (``elasticfilesystem:ClientMount`` and ``ClientWrite`` on the file system, conditioned on
  ``elasticfilesystem:AccessPointArn``), never as root. Amazon EFS volumes are supported on Amazon EC2 and on Amazon
  ECS Managed Instances ("Storage options for Amazon ECS tasks", Amazon ECS developer guide: Amazon EFS, "Fargate,
  Amazon EC2, Amazon ECS Managed Instances"). Or a file system the instances mount (FSx for Lustre): the model's
  directory under it as a bind mount, EC2 tasks only;
* the local tier: ``VLLM_CACHE_ROOT=`` :data:`LOCAL_CACHE_PATH`, a bind mount of
  ``<LOCAL_CACHE_HOST_DIRECTORY>/<model>`` on the instance, which "persists at the specified location on the host
  container instance until you delete it manually" (ECS API reference, ``HostVolumeProperties.sourcePath``): a
  restarted task, and a warm-pool instance that comes back, find it. ``sourcePath`` "is only supported when using
  tasks that are hosted on Amazon EC2 instances" (ECS guide, "Specify a bind mount in an Amazon ECS task definition")
  and no source says Managed Instances take it: a task definition compatible with Managed Instances gets a task
  volume instead, which goes with the task, and warns (NEURON152);
* ``VLLM_NEURON_BACKEND=neuron_native`` where the image's engine is on the native route (the Precompile Cache).
"""

from __future__ import annotations

import hashlib

from aws_cdk import Stack, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_efs as efs
from aws_cdk import aws_iam as iam
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.engines import Engine

__all__ = [
    "ACCESS_POINT_PATH_CHARACTERS",
    "ACCESS_POINT_PREFIX_CHARACTERS",
    "CACHE_UID",
    "LOCAL_CACHE_HOST_DIRECTORY",
    "LOCAL_CACHE_PATH",
    "LOCAL_CACHE_VARIABLE",
    "PRECOMPILE_BACKEND_VARIABLE",
    "REMOTE_CACHE_PATH",
    "REMOTE_CACHE_VARIABLE",
    "access_point_directory",
    "apply_file_tiers",
    "file_system_policy",
    "model_access_point",
    "mount_through_access_point",
]

REMOTE_CACHE_VARIABLE = "NEURON_LIBTORCH_REMOTE_CACHE"
LOCAL_CACHE_VARIABLE = "VLLM_CACHE_ROOT"
PRECOMPILE_BACKEND_VARIABLE = "VLLM_NEURON_BACKEND"
REMOTE_CACHE_PATH = "/mnt/neuron-compile-cache"
"""Where the container sees its model's access point."""
LOCAL_CACHE_PATH = "/var/cache/vllm"
"""``VLLM_CACHE_ROOT`` in the container."""
LOCAL_CACHE_HOST_DIRECTORY = "/var/lib/neuron-constructs/vllm-cache"
"""The instance directory under which each model's local tier lives (``<this>/<model>``)."""
CACHE_UID = "1000"
"""The POSIX user and group every access point creates its root directory for and makes requests as."""


ACCESS_POINT_PATH_CHARACTERS = 100
"""The longest root directory an access point takes: "Length Constraints: Minimum length of 1. Maximum length of 100",
and "A path can have up to four subdirectories" (Amazon EFS API reference, ``RootDirectory``)."""
ACCESS_POINT_PREFIX_CHARACTERS = 50
"""The longest cache prefix on Amazon EFS (at most three segments): the rest of the 100 is the model's name."""


def access_point_directory(prefix: str, model_key: str) -> str:
    """The root directory of ``model_key``'s access point: ``/<prefix>/<model>``, the model's construct path as one
    segment (``/`` read as ``-``), since a root directory has at most four subdirectories; a name that would pass 100
    characters keeps its last characters and ends with ``-`` and 8 hex digits of the SHA-256 of the whole name, so
    two models never share one. ``/<prefix>`` alone for an empty ``model_key`` (a shared cache)."""
    if not model_key:
        return f"/{prefix}"
    name = model_key.replace("/", "-")
    room = ACCESS_POINT_PATH_CHARACTERS - len(prefix) - 2
    if len(name) > room:
        digest = hashlib.sha256(model_key.encode()).hexdigest()[:8]
        name = f"{name[-(room - 9) :].lstrip('.-')}-{digest}"
    return f"/{prefix}/{name}"


def file_system_policy() -> iam.PolicyDocument:
    """The file system policy of a cache's new file system: deny every request not made over TLS
    (``aws:SecureTransport``) and every request not made through an access point (``elasticfilesystem:AccessPointArn``
    absent), so no client mounts the file system's root. It allows nothing: a task may mount only what its role's own
    policy allows (Amazon EFS user guide, "Using IAM to control access to file systems")."""
    actions = ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite", "elasticfilesystem:ClientRootAccess"]
    return iam.PolicyDocument(
        statements=[
            iam.PolicyStatement(
                sid="DenyWithoutTls",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=actions,
                conditions={"Bool": {"aws:SecureTransport": "false"}},
            ),
            iam.PolicyStatement(
                sid="DenyWithoutAccessPoint",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=actions,
                conditions={"Null": {"elasticfilesystem:AccessPointArn": "true"}},
            ),
        ]
    )


def mount_through_access_point(
    role: iam.IGrantable, file_system: efs.IFileSystem, access_point: efs.IAccessPoint
) -> None:
    """Let ``role`` mount and write ``file_system`` through ``access_point`` only (``ClientMount`` and ``ClientWrite``
    conditioned on ``elasticfilesystem:AccessPointArn``), never as root."""
    iam.Grant.add_to_principal(
        grantee=role,
        actions=["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"],
        resource_arns=[file_system.file_system_arn],
        conditions={"StringEquals": {"elasticfilesystem:AccessPointArn": access_point.access_point_arn}},
    )


def _volume_name(container: ecs.ContainerDefinition, suffix: str) -> str:
    return f"{container.container_name}-{suffix}"[:255]


def model_access_point(file_system: efs.IFileSystem, directory: str, fallback: Construct) -> efs.AccessPoint:
    """The access point whose root directory is ``directory``: one per directory and file system, in the file
    system's scope (``fallback``'s stack for a file system that is not a construct)."""
    scope = file_system if isinstance(file_system, Construct) else Stack.of(fallback)
    digest = hashlib.sha256(f"{file_system.node.path}:{directory}".encode()).hexdigest()[:12]
    id = f"CompileCache{digest}"
    existing = scope.node.try_find_child(id)
    if isinstance(existing, efs.AccessPoint):
        return existing
    return efs.AccessPoint(
        scope,
        id,
        file_system=file_system,
        path=directory,
        create_acl=efs.Acl(owner_uid=CACHE_UID, owner_gid=CACHE_UID, permissions="750"),
        posix_user=efs.PosixUser(uid=CACHE_UID, gid=CACHE_UID),
    )


def apply_file_tiers(
    container: ecs.ContainerDefinition,
    role: iam.IRole,
    remote_tier: efs.IFileSystem | str,
    directory: str,
    model_key: str,
    engine: Engine | None,
) -> None:
    """Give ``container`` the remote tier, the local tier (``<LOCAL_CACHE_HOST_DIRECTORY>/<model_key>``) and, for an
    engine on the native route, the Precompile Cache's backend.

    ``remote_tier``: an Amazon EFS file system (``directory`` on it through the model's own access point, which
    ``role`` alone may mount and write), or the path where a file system the instances mount is (FSx for Lustre:
    ``<path>/<directory>`` as a bind mount, which the container sees alone; EC2 tasks only, NEURON154)."""
    task_definition = container.task_definition
    remote = _volume_name(container, "compile-cache")
    if isinstance(remote_tier, str):
        if task_definition.compatibility != ecs.Compatibility.EC2:
            owner = task_definition.node.scope or task_definition
            raise rules.HOST_MOUNTED_REMOTE_TIER.error(
                f"{construct_path(owner)}/{container.container_name}",
                f"a compile cache on the instances' {remote_tier} is given to a task definition compatible with "
                "Managed Instances",
            )
        task_definition.add_volume(name=remote, host=ecs.Host(source_path=f"{remote_tier}/{directory.strip('/')}"))
    else:
        access_point = model_access_point(remote_tier, directory, task_definition)
        task_definition.add_volume(
            name=remote,
            efs_volume_configuration=ecs.EfsVolumeConfiguration(
                file_system_id=remote_tier.file_system_id,
                transit_encryption="ENABLED",
                authorization_config=ecs.AuthorizationConfig(
                    access_point_id=access_point.access_point_id, iam="ENABLED"
                ),
            ),
        )
        mount_through_access_point(role, remote_tier, access_point)
    container.add_mount_points(ecs.MountPoint(container_path=REMOTE_CACHE_PATH, source_volume=remote, read_only=False))

    local = _volume_name(container, "vllm-cache")
    if task_definition.compatibility == ecs.Compatibility.EC2:
        task_definition.add_volume(name=local, host=ecs.Host(source_path=f"{LOCAL_CACHE_HOST_DIRECTORY}/{model_key}"))
    else:
        task_definition.add_volume(name=local)
        Validations.of(task_definition).add_warning(
            rules.LOCAL_TIER_PER_TASK.warning_id,
            rules.LOCAL_TIER_PER_TASK.message(
                construct_path(task_definition),
                f"{container.container_name}'s vLLM cache root ({LOCAL_CACHE_VARIABLE}) is a task volume: Managed "
                "Instances tasks take no host sourcePath, so a restarted task starts its local tier empty and "
                f"reads the remote tier ({REMOTE_CACHE_VARIABLE}) first",
            ),
        )
    container.add_mount_points(ecs.MountPoint(container_path=LOCAL_CACHE_PATH, source_volume=local, read_only=False))

    container.add_environment(REMOTE_CACHE_VARIABLE, REMOTE_CACHE_PATH)
    container.add_environment(LOCAL_CACHE_VARIABLE, LOCAL_CACHE_PATH)
    if engine is not None and engine.precompile_backend is not None:
        container.add_environment(PRECOMPILE_BACKEND_VARIABLE, engine.precompile_backend)
