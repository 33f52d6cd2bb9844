"""Checks of a :class:`~neuron_constructs.compute.model_sources.CompileCache` against the models that use it: the
VPC of a file-system cache against the service's cluster (NEURON156) and one prefix shared by models whose tasks do
not trust each other (NEURON157).

**Which VPC a file system is in.** A file system this app creates has its security group's VPC
(``CompileCache.in_new_file_system(vpc=)``, or an ``efs.FileSystem`` given to ``on_file_system``): Amazon EFS makes
its mount targets in that VPC, and a mount target's security groups must be of the mount target's VPC (Amazon EFS
user guide, "Creating mount targets": mount targets "in one VPC at a time"). An imported file system names no VPC at
synth, and a VPC named by a deploy-time value (an import of another app's published VPC, a template parameter) cannot
be compared with another: those are not checked, and a task that cannot reach the file system fails to start, as
ECS reports it. Two VPCs are compared only when both are literal ids or both are VPCs this app creates.

**Which models trust each other.** Each model's part of a cache is its own prefix or access point
(``<prefix>/<model>``), which only its task role may use. With ``shared=True`` every model's task reads and writes
one prefix: a task of one model can replace the compiled graphs another model's Neuron runtime loads and runs. The
library takes two models' tasks to trust each other when one stack defines both (one owner writes and deploys them)
or they run with one task role; a shared cache used across stacks by different roles warns.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Reference, Stack, Token, Tokenization, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_efs as efs
from aws_cdk import aws_iam as iam

from neuron_constructs.base.tree import construct_path
from neuron_constructs.knowledge import rules

if TYPE_CHECKING:
    from neuron_constructs.compute.model_sources import CompileCache

__all__ = ["check_file_system_vpc", "file_system_vpc", "record_use", "vpc_identity"]


@dataclass(frozen=True)
class _CacheUse:
    """One container given a cache: where (its construct path), its stack, its task role, and the cache."""

    where: str
    stack: Stack
    role: iam.IRole
    cache: CompileCache


_USES: weakref.WeakKeyDictionary[ecs.TaskDefinition, list[_CacheUse]] = weakref.WeakKeyDictionary()
"""Per task definition, the caches its containers were given (for the VPC check when a service places it)."""
_BY_CACHE: weakref.WeakKeyDictionary[CompileCache, list[_CacheUse]] = weakref.WeakKeyDictionary()
"""Per cache, every container given it, in order."""


def vpc_identity(vpc_id: str | None) -> object | None:
    """What two VPC ids are compared by: a literal id itself, the construct path of the ``AWS::EC2::VPC`` resource a
    reference names (a VPC this app creates); ``None`` for an id known only at deploy time in any other way."""
    if vpc_id is None:
        return None
    if not Token.is_unresolved(vpc_id):
        return vpc_id
    tokens = Tokenization.reverse_string(vpc_id)
    token = tokens.first_token if tokens.length == 1 else None
    if isinstance(token, Reference) and isinstance(token.target, ec2.CfnVPC):
        return _MadeVpc(construct_path(token.target.node.scope or token.target))
    return None


def file_system_vpc(file_system: efs.IFileSystem) -> str | None:
    """The VPC id of a file system this app creates (its security group's), ``None`` for one it imports."""
    for group in file_system.connections.security_groups:
        made = group.node.default_child
        if isinstance(made, ec2.CfnSecurityGroup) and made.vpc_id is not None:
            return made.vpc_id
    return None


def record_use(cache: CompileCache, container: ecs.ContainerDefinition, role: iam.IRole, where: str) -> None:
    """Remember that ``container`` (at ``where``, its task running as ``role``) was given ``cache``; NEURON157 on
    its task definition when the cache is shared with a model of another stack whose task runs as another role."""
    use = _CacheUse(where, Stack.of(container), role, cache)
    _USES.setdefault(container.task_definition, []).append(use)
    earlier = _BY_CACHE.setdefault(cache, [])
    if cache.shared:
        untrusted = [u for u in earlier if u.stack is not use.stack and u.role is not role]
        if untrusted:
            others = ", ".join(dict.fromkeys(u.where for u in untrusted))
            Validations.of(container.task_definition).add_warning(
                rules.SHARED_CACHE_UNTRUSTED.warning_id,
                rules.SHARED_CACHE_UNTRUSTED.message(
                    where,
                    f"the compile cache is shared=True with {others} of another stack, whose task runs as another "
                    f"role: a task of either can overwrite or delete the graphs the other loads from "
                    f"{cache.prefix}, or put graphs there that the other runs on its Neuron devices",
                ),
            )
    earlier.append(use)


@dataclass(frozen=True)
class _MadeVpc:
    """A VPC this app creates, by its construct path."""

    path: str


def check_file_system_vpc(path: str, task_definition: ecs.TaskDefinition, vpc: ec2.IVpc) -> None:
    """NEURON156: every file-system cache the containers of ``task_definition`` were given is in ``vpc`` (the VPC of
    the cluster a service at ``path`` places it on), where both are known at synth."""
    mounted = [
        (use, use.cache.file_system, use.cache.vpc_id)
        for use in _USES.get(task_definition, [])
        if use.cache.file_system is not None and use.cache.vpc_id is not None
    ]
    here = vpc_identity(vpc.vpc_id) if mounted else None  # asked of the CDK only where a cache is mounted
    if here is None:
        return
    for use, file_system, vpc_id in mounted:
        there = vpc_identity(vpc_id)
        if there is None or type(there) is not type(here) or there == here:
            continue
        shown = f"the VPC {there.path}" if isinstance(there, _MadeVpc) else vpc_id
        service_vpc = f"the VPC {here.path}" if isinstance(here, _MadeVpc) else vpc.vpc_id
        raise rules.CACHE_FILE_SYSTEM_VPC.error(
            path,
            f"{use.where} mounts the compile cache's file system {construct_path(file_system)}, whose mount targets "
            f"are in {shown}, and this service's cluster is in {service_vpc}",
            vpc=shown,
        )
