"""Shared storage for training nodes: FSx for Lustre in the queue's subnet, optionally linked to an S3 bucket."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_s3 as s3
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.checks.inputs import check_removal_policy
from neuron_constructs.knowledge import rules

__all__ = ["LustreStorage", "check_storage", "lustre_file_system", "mount_commands", "storage_environment"]


@dataclass(frozen=True)
class LustreStorage:
    """Shared storage every node of a :class:`NeuronTrainingQueue` mounts at ``mount_path``: an FSx for Lustre file
    system (PERSISTENT_2, encrypted at rest as every FSx file system is, in the queue's subnet).

    ``capacity_gib``: 1,200, 2,400 or a multiple of 2,400 (FSx for PERSISTENT_2); ``throughput_per_tib``: 125, 250,
    500 or 1,000 MB/s per TiB. ``bucket``: an S3 bucket linked at ``<mount_path>/data`` through a data repository
    association (objects imported and exported as they change), for datasets and checkpoints. Neuron's compile
    cache goes to ``<mount_path>/neuron-compile-cache``, so nodes and later jobs reuse compiled graphs.

    ``removal_policy``: what ``cdk destroy`` does with the file system; default ``RemovalPolicy.RETAIN``, as it may
    hold the only copy of checkpoints (anything outside ``<mount_path>/data``, and what the bucket has not received
    yet). A kept file system holds its subnet and security group, so a queue that makes its own VPC warns
    (NEURON120); ``RemovalPolicy.DESTROY`` deletes it with the stack (FSx takes no Snapshot policy, NEURON071).
    """

    capacity_gib: int = 1200
    throughput_per_tib: int = 125
    mount_path: str = "/fsx"
    bucket: s3.IBucket | None = None
    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN

    @classmethod
    def in_new_bucket(
        cls,
        scope: Construct,
        id: str,
        *,
        capacity_gib: int = 1200,
        throughput_per_tib: int = 125,
        mount_path: str = "/fsx",
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> LustreStorage:
        """Storage linked to a new bucket for datasets and checkpoints: encrypted (S3 managed keys), TLS only, public
        access blocked, owner-enforced objects, versioned (an overwritten checkpoint can be restored), kept when the
        stack is deleted; ``removal_policy`` is the file system's."""
        bucket = s3.Bucket(
            scope,
            id,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        compliance.acknowledge_dataset_bucket(bucket)
        return cls(
            capacity_gib=capacity_gib,
            throughput_per_tib=throughput_per_tib,
            mount_path=mount_path,
            bucket=bucket,
            removal_policy=removal_policy,
        )


def check_storage(path: str, storage: LustreStorage) -> None:
    """NEURON027: the sizes FSx for Lustre PERSISTENT_2 accepts, and an absolute mount path (NEURON047)."""
    if not (storage.capacity_gib in (1200, 2400) or (storage.capacity_gib > 0 and storage.capacity_gib % 2400 == 0)):
        raise rules.OUT_OF_RANGE.error(
            path,
            f"capacity_gib={storage.capacity_gib}",
            name="capacity_gib",
            minimum="1200",
            maximum="any multiple of 2400 (FSx for Lustre PERSISTENT_2: 1,200, 2,400, then steps of 2,400)",
        )
    if storage.throughput_per_tib not in (125, 250, 500, 1000):
        raise rules.OUT_OF_RANGE.error(
            path,
            f"throughput_per_tib={storage.throughput_per_tib}",
            name="throughput_per_tib",
            minimum="125",
            maximum="1000 (one of 125, 250, 500, 1000 MB/s per TiB)",
        )
    mount = storage.mount_path
    if not _MOUNT_PATH.fullmatch(mount) or posixpath.normpath(mount) != mount or "/../" in f"{mount}/":
        raise rules.S3_LOCATION.error(
            path,
            f"mount_path={mount!r} is not an absolute path in normal form of letters, digits, '.', '_', '-' and '/' "
            "below the root (it is written into the nodes' boot script, which runs as root)",
        )
    check_removal_policy(path, "removal_policy", storage.removal_policy.value, "the FSx for Lustre file system")


def lustre_file_system(
    scope: Construct, storage: LustreStorage, *, vpc: ec2.IVpc, subnet: ec2.ISubnet, nodes: ec2.ISecurityGroup
) -> fsx.LustreFileSystem:
    """The Lustre file system in ``subnet``; the nodes (``nodes``) reach it on Lustre's ports (988, 1018-1023)."""
    group = ec2.SecurityGroup(
        scope,
        "StorageSecurityGroup",
        vpc=vpc,
        description="FSx for Lustre of the training nodes - Lustre ports from the nodes only",
        allow_all_outbound=True,
    )
    file_system = fsx.LustreFileSystem(
        scope,
        "FileSystem",
        vpc=vpc,
        vpc_subnet=subnet,
        storage_capacity_gib=storage.capacity_gib,
        security_group=group,
        removal_policy=storage.removal_policy,
        lustre_configuration=fsx.LustreConfiguration(
            deployment_type=fsx.LustreDeploymentType.PERSISTENT_2,
            per_unit_storage_throughput=storage.throughput_per_tib,
            data_compression_type=fsx.LustreDataCompressionType.LZ4,
        ),
    )
    # FSx for Lustre: TCP 988 and 1018-1023 (aws-cdk-lib's default port opens 988-1023).
    for port in (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023)):
        file_system.connections.allow_from(nodes, port, "Training nodes to Lustre")
    if storage.bucket is not None:
        fsx.CfnDataRepositoryAssociation(
            scope,
            "Datasets",
            file_system_id=file_system.file_system_id,
            file_system_path="/data",
            data_repository_path=f"s3://{storage.bucket.bucket_name}/",
            batch_import_meta_data_on_create=True,
            s3=fsx.CfnDataRepositoryAssociation.S3Property(
                auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(
                    events=["NEW", "CHANGED", "DELETED"]
                ),
                auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                    events=["NEW", "CHANGED", "DELETED"]
                ),
            ),
        )
    return file_system


MOUNT_ATTEMPTS = 3
"""How often a node tries to mount the file system at boot, 10 seconds apart, before its user data fails."""


_MOUNT_PATH = re.compile(r"/[A-Za-z0-9._-][A-Za-z0-9._/-]{0,254}")
"""A mount path the boot script can name unquoted: absolute, below ``/``, no character the shell reads."""


def mount_commands(dns_name: str, mount_name: str, mount_path: str) -> list[str]:
    """User data that mounts the file system ``<dns_name>@tcp:/<mount_name>`` at ``mount_path`` (FSx for Lustre
    guide: mounting from an Amazon EC2 instance) and makes Neuron's compile cache directory there. A mount that has not
    succeeded after ``MOUNT_ATTEMPTS`` tries fails the user data (exit 1, with a line saying so) before anything
    is written to ``mount_path``: on the root volume, checkpoints would die with the node. The job's preflight
    checks the mount again from inside the container (``NEURON_PREFLIGHT_LUSTRE``)."""
    source = f"{dns_name}@tcp:/{mount_name}"
    mount_path = shlex.quote(mount_path)  # checked already (NEURON047): quoted anyway, as everything the shell reads
    return [
        "dnf install -y lustre-client",
        f"mkdir -p {mount_path}",
        f"for attempt in $(seq {MOUNT_ATTEMPTS}); do",
        f"  mountpoint -q {mount_path} || mount -t lustre -o relatime,flock {source} {mount_path} && break",
        "  sleep 10",
        "done",
        f"if ! mountpoint -q {mount_path}; then",
        f"  echo 'FSx for Lustre {source} did not mount at {mount_path}; this node fails its preflight' >&2",
        "  exit 1",
        "fi",
        f"mkdir -p {mount_path}/neuron-compile-cache",
    ]


def storage_environment(storage: LustreStorage) -> dict[str, str]:
    """Neuron's persistent compile cache on the shared file system (``NEURON_COMPILE_CACHE_URL``)."""
    return {"NEURON_COMPILE_CACHE_URL": f"{storage.mount_path}/neuron-compile-cache"}
