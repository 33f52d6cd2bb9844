"""Warm starts: where compiled Neuron graphs and model files come from, so a new task does not redo the work.

* :class:`CompileCache`: a compile cache in the form the image's engine reads
  (:mod:`neuron_constructs.knowledge.engines`, from the image table): an S3 prefix for the engines below, or, for vLLM
  Neuron, which reads no S3 URL, an Amazon EFS access point and a directory on the instance
  (:mod:`neuron_constructs.compute.compile_cache_tiers`); a cache the engine does not read is refused (NEURON150).
  On S3, ``NEURON_COMPILE_CACHE_URL`` names it: torch-neuronx (libneuronxla) "will use the AWS S3 URL as the
  cache location" when it starts with ``s3://`` (aws-neuron-sdk, "Neuron Persistent Cache"); NxD
  Inference, which the Neuron vLLM 0.16 container serves with, has that cache "enabled by default"
  (aws-neuron-sdk, NxD Inference feature guide); optimum-neuron, which the Hugging Face Neuron containers serve
  with, takes its compile cache from the same variable (``optimum/neuron/cache/hub_cache.py``:
  ``CacheUrl.get_cache_url()``, ``CompileCacheS3`` for ``s3://``). Each model gets a prefix of its own under the
  cache's, ``<prefix>/<model's construct path>`` (the copies of one fleet model or sliced service share theirs), so
  a model can neither overwrite nor read another model's entries: its task role may read, write and list that
  prefix and nothing else in the bucket. ``CompileCache(..., shared=True)`` gives every model the one prefix.
* :class:`ModelArtifacts`: an S3 prefix holding a model (weights, or a model exported for Neuron), read
  only. Model servers read a local directory, so a non-essential ``aws s3 sync`` container copies the
  prefix into a task volume before the model container starts (``dependsOn`` ``SUCCESS``); the model
  container sees it at ``path`` (default ``/opt/ml/model``).
* ``hf_token=``: a Secrets Manager secret injected as the ECS secret ``HF_TOKEN`` (what ``huggingface_hub``
  reads), never an environment value (a token in ``environment`` warns, NEURON109); ECS fetches it with the
  execution role, which aws-cdk-lib grants read on that secret only.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence

from aws_cdk import Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_efs as efs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.images import container_name_of, image_name_of
from neuron_constructs.base.tree import construct_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute import compile_cache_checks, compile_cache_tiers
from neuron_constructs.knowledge import engines, image_support, rules
from neuron_constructs.knowledge.container_images import AWS_CLI
from neuron_constructs.knowledge.engines import Engine

__all__ = [
    "AWS_CLI_IMAGE",
    "COMPILE_CACHE_VARIABLE",
    "HF_TOKEN_VARIABLE",
    "CompileCache",
    "ModelArtifacts",
    "compile_cache_of",
]

COMPILE_CACHE_VARIABLE = "NEURON_COMPILE_CACHE_URL"
HF_TOKEN_VARIABLE = "HF_TOKEN"
"""What ``huggingface_hub`` reads (``HUGGING_FACE_HUB_TOKEN`` only for backward compatibility)."""
CACHE_EXPIRATION = Duration.days(90)
_NOT_IN_A_MODEL_KEY = re.compile(r"[^A-Za-z0-9._/-]+")
"""Characters a model's prefix does not take from its construct path: S3 keys and IAM resource ARNs read the rest
literally (``*`` and ``?`` would be wildcards in the task role's grant)."""
AWS_CLI_IMAGE = AWS_CLI.reference
"""The AWS CLI image the model-artifact sync runs (Amazon ECR Public,
:data:`~neuron_constructs.knowledge.container_images.AWS_CLI`)."""


_KEY_PREFIX = re.compile(r"[A-Za-z0-9!_.'()/-]+")
"""What a prefix may hold: the characters the Amazon S3 user guide calls safe in an object key ("Naming Amazon S3
objects": letters, digits, ``! - _ . * ' ( )``, and ``/`` to delimit), without ``*``, which an IAM resource ARN reads
as a wildcard. No newline, control character, ``$``, double quote, backquote or space; the single quote, ``!`` and the
parentheses S3 calls safe are taken, and every script the library writes quotes a prefix for the shell."""
_KEY_BYTES = 1024
"""The longest object key S3 takes, in UTF-8 bytes ("Naming Amazon S3 objects")."""


def _prefix(bucket: s3.IBucket, prefix: str) -> str:
    """NEURON047: ``prefix`` without its leading and trailing slashes: S3's safe key characters other than ``*``
    (:data:`_KEY_PREFIX`), at most 1,024 bytes, with no empty, ``.`` or ``..`` segment: the prefix names a directory
    on the instance too (a warm pool's copy of model artifacts, ``<MODELS_DIRECTORY>/<bucket>/<prefix>``, the task's
    host volume), where ``..`` would climb out of it. Refused, never rewritten."""
    where = construct_path(bucket)
    stripped = prefix.strip("/")
    if not stripped or not _KEY_PREFIX.fullmatch(stripped):
        bad = next((c for c in stripped if not _KEY_PREFIX.fullmatch(c)), None)
        problem = "is empty" if not stripped else f"holds {bad!r}, which is not one of S3's safe key characters"
        raise rules.S3_LOCATION.error(where, f"prefix={prefix[:200]!r} {problem}")
    if len(stripped) > _KEY_BYTES:
        raise rules.S3_LOCATION.error(where, f"prefix of {len(stripped)} characters is longer than an S3 key")
    if any(segment in ("", ".", "..") for segment in stripped.split("/")):
        raise rules.S3_LOCATION.error(where, f"prefix={prefix[:200]!r} has an empty, '.' or '..' segment")
    return stripped


def _grant(role: iam.IGrantable, bucket: s3.IBucket, prefix: str, actions: list[str], *, key: kms.IKey | None) -> None:
    """``actions`` on the objects under ``prefix``, and listing that prefix only."""
    iam.Grant.add_to_principal(grantee=role, actions=actions, resource_arns=[bucket.arn_for_objects(f"{prefix}/*")])
    iam.Grant.add_to_principal(
        grantee=role,
        actions=["s3:ListBucket"],
        resource_arns=[bucket.bucket_arn],
        conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
    )
    if key is not None:
        if "s3:PutObject" in actions:
            key.grant_encrypt_decrypt(role)
        else:
            key.grant_decrypt(role)


def _objects_resource(bucket: s3.IBucket, prefix: str) -> str:
    """The object ARN as cdk-nag names it in a finding: ``<Logical.Arn>/prefix/*`` or the literal ARN."""
    declared = bucket.node.default_child
    if isinstance(declared, s3.CfnBucket):
        stack = Stack.of(declared)
        return f"<{stack.resolve(stack.get_logical_id(declared))}.Arn>/{prefix}/*"
    if not is_token(bucket.bucket_name):
        return f"arn:<AWS::Partition>:s3:::{bucket.bucket_name}/{prefix}/*"
    return ""


class CompileCache:
    """A compile cache that each model's container gets in the form its image's engine reads.

    Two kinds, each "bring your own or we create it":

    * on S3 (``NEURON_COMPILE_CACHE_URL=s3://<bucket>/<prefix>/<model>/``): ``CompileCache(bucket, prefix)`` uses a
      bucket you have, :meth:`in_new_bucket` makes one. For torch-neuronx and training on it, vLLM on NxD Inference
      and optimum-neuron, which read that variable;
    * on Amazon EFS, for vLLM Neuron, which does not read it (:mod:`~neuron_constructs.compute.compile_cache_tiers`):
      :meth:`on_file_system` uses a file system you have, :meth:`in_new_file_system` makes one. Each model's container
      gets its own access point (``NEURON_LIBTORCH_REMOTE_CACHE``), a local tier on the instance (``VLLM_CACHE_ROOT``)
      and, on the native route, the Precompile Cache (``VLLM_NEURON_BACKEND=neuron_native``).

    Give it to ``add_neuron_container(..., compile_cache=)``, ``SlicedNeuronService(compile_cache=)`` or
    ``NeuronFleet.add_model(compile_cache=)``. The image's engine comes from the image table
    (:attr:`~neuron_constructs.knowledge.container_images.NeuronImage.engine`); an image the table does not hold takes
    the cache as given. Refused at that call (NEURON150): an S3 cache for a vLLM Neuron image, a file-system cache for
    an engine that reads ``NEURON_COMPILE_CACHE_URL``; the error names the other kind as the fix. An engine whose cache
    no source names (torch-neuron on Inf1) gets no variable and a warning (NEURON151).

    One cache may serve several models: each gets ``<prefix>/<model>`` (:meth:`model_prefix`) as its S3 prefix or its
    directory (an access point's root directory takes the model as one segment), ``<model>`` the construct path of its
    task definition, or of its fleet model or sliced service for their copies, which share it. A task that can write
    a prefix can also overwrite or delete every entry under it, and a model would load graphs another model's task put
    there: a model's task role may use its own prefix or access point and nothing else. ``shared=True`` opts into one
    prefix for every model, when the models trust each other's tasks; used by models of different stacks whose tasks
    run as different roles, it warns (NEURON157, :mod:`~neuron_constructs.compute.compile_cache_checks`).

    An Amazon EFS cache serves tasks of its own VPC only (mount targets are in one VPC at a time): a service placed on
    a cluster of another VPC is refused where both VPCs are known at synth (NEURON156).
    """

    def __init__(
        self,
        bucket: s3.IBucket | None = None,
        prefix: str = "neuron-compile-cache",
        *,
        shared: bool = False,
        file_system: efs.IFileSystem | None = None,
        mount_path: str | None = None,
    ) -> None:
        if sum(given is not None for given in (bucket, file_system, mount_path)) != 1:
            raise rules.WRONG_TYPE.error(
                "CompileCache",
                "give one of bucket (S3), file_system (Amazon EFS) and mount_path (a file system the instances mount)",
                expected="one of bucket=, file_system= and mount_path=",
            )
        self.bucket = bucket
        self.file_system = file_system
        self.mount_path = None if mount_path is None else _mount_path(mount_path)
        """Where the instances mount the file system of the remote tier (FSx for Lustre), ``None`` for other kinds."""
        self.prefix = _prefix(bucket, prefix) if bucket is not None else _directory(file_system, prefix)
        if file_system is not None:
            _access_point_prefix(file_system, self.prefix)
        self.shared = shared
        self.url = f"s3://{bucket.bucket_name}/{self.prefix}/" if bucket is not None else None
        """The whole cache on S3 (``None`` on a file system); a model's own is :meth:`url_for`."""
        self.vpc_id: str | None = None if file_system is None else compile_cache_checks.file_system_vpc(file_system)
        """The VPC of the Amazon EFS file system's mount targets, where known at synth (a file system this app
        creates); a service on a cluster of another VPC is refused (NEURON156)."""

    def model_prefix(self, model: str) -> str:
        """The prefix of ``model`` (a construct path or a name): ``<prefix>/<model>``, characters other than letters,
        digits, ``.``, ``_``, ``-`` and ``/`` replaced by ``-``; the cache's prefix when ``shared``. On a file
        system the instances mount, ``model``'s directory under it; an access point's root directory is
        :func:`~neuron_constructs.compute.compile_cache_tiers.access_point_directory`."""
        key = _model_key(model)
        if self.shared or not key:
            return self.prefix
        return f"{self.prefix}/{key}"

    def model_directory(self, model: str) -> str:
        """On a file system, ``model``'s directory: its access point's root directory on Amazon EFS
        (:func:`~neuron_constructs.compute.compile_cache_tiers.access_point_directory`), ``/<model prefix>`` under the
        mount of an instance mount."""
        if self.file_system is not None:
            return compile_cache_tiers.access_point_directory(self.prefix, "" if self.shared else _model_key(model))
        return f"/{self.model_prefix(model)}"

    def url_for(self, model: str) -> str:
        """``NEURON_COMPILE_CACHE_URL`` for ``model``: ``s3://<bucket>/<model prefix>/``."""
        if self.bucket is None:
            raise rules.WRONG_TYPE.error(
                "CompileCache", "a cache on a file system has no S3 URL", expected="a cache on S3"
            )
        return f"s3://{self.bucket.bucket_name}/{self.model_prefix(model)}/"

    @classmethod
    def in_new_bucket(
        cls,
        scope: Construct,
        id: str,
        *,
        prefix: str = "neuron-compile-cache",
        expiration: Duration = CACHE_EXPIRATION,
        encryption_key: kms.IKey | None = None,
    ) -> CompileCache:
        """A bucket for the cache: encrypted (S3 managed keys, or ``encryption_key``), TLS only, public access
        blocked, owner-enforced objects, entries expiring ``expiration`` after they were written (default 90
        days: a graph compiled again is a slower start, nothing lost); kept when the stack is deleted."""
        bucket = s3.Bucket(
            scope,
            id,
            encryption=s3.BucketEncryption.KMS if encryption_key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=encryption_key,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=expiration)],
            removal_policy=RemovalPolicy.RETAIN,
        )
        compliance.acknowledge_cache_bucket(bucket)
        return cls(bucket, prefix)

    @classmethod
    def on_file_system(
        cls, file_system: efs.IFileSystem, prefix: str = "neuron-compile-cache", *, shared: bool = False
    ) -> CompileCache:
        """vLLM Neuron's remote tier on an Amazon EFS file system you have (Amazon FSx for Lustre: mount it on the
        instances and give the path to ``NEURON_LIBTORCH_REMOTE_CACHE`` yourself; the library does not mount it for
        services). Its mount targets must admit NFS from the tasks (``file_system.connections``), and its policy should
        deny requests without TLS (:func:`~neuron_constructs.compute.compile_cache_tiers.file_system_policy`)."""
        return cls(prefix=prefix, shared=shared, file_system=file_system)

    @classmethod
    def on_instance_mount(
        cls, mount_path: str = "/fsx", prefix: str = "neuron-compile-cache", *, shared: bool = False
    ) -> CompileCache:
        """vLLM Neuron's remote tier on a file system the instances mount at ``mount_path``: FSx for Lustre, when you
        have one (vLLM Neuron's remote tier is "an NFS or FSx mount"; S3 "indirectly by mounting an FSx for Lustre
        volume backed by S3"). ECS mounts no FSx for Lustre file system as a task volume, so your instances mount it
        (their user data or AMI) and each model's container gets ``<mount_path>/<prefix>/<model>`` as a bind mount, a
        directory it sees alone, as ``NEURON_LIBTORCH_REMOTE_CACHE``. EC2 tasks only: a task definition compatible with
        Managed Instances takes no host ``sourcePath`` and is refused (NEURON154). ``mount_path``: absolute, letters,
        digits, ``.``, ``_``, ``-`` and ``/`` (NEURON047)."""
        return cls(prefix=prefix, shared=shared, mount_path=mount_path)

    @classmethod
    def in_new_file_system(
        cls,
        scope: Construct,
        id: str,
        *,
        vpc: ec2.IVpc,
        clients: Sequence[ec2.IConnectable],
        vpc_subnets: ec2.SubnetSelection | None = None,
        prefix: str = "neuron-compile-cache",
        encryption_key: kms.IKey | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
    ) -> CompileCache:
        """An Amazon EFS file system for vLLM Neuron's remote tier (the default: an ECS-native volume, where FSx for
        Lustre needs a mount on the instance).

        Encrypted at rest (the AWS managed key, or ``encryption_key``); its policy denies every request without TLS
        and every request not made through an access point (``compile_cache_tiers.file_system_policy``), and allows
        none: each model's task role may mount and write its own access point only. Mount targets in ``vpc_subnets``
        (default the VPC's private subnets: give the capacity's subnets), behind a security group of its own with no
        egress that admits NFS (TCP 2049) from ``clients`` only: the capacity's Auto Scaling group for bridge and host
        tasks (ECS mounts from the container instance), the services' security groups for awsvpc tasks (from the
        task's interface); :meth:`allow_from` adds more. No ``clients`` is refused (NEURON153). Elastic throughput;
        no backups, and deleted with the stack (``removal_policy``, default ``DESTROY``): it holds graphs the
        compiler makes again."""
        if not clients:
            raise rules.CACHE_WITHOUT_CLIENTS.error(f"{construct_path(scope)}/{id}", "clients=[] admits no task")
        security_group = ec2.SecurityGroup(
            scope,
            f"{id}SecurityGroup",
            vpc=vpc,
            allow_all_outbound=False,
            description="Neuron compile cache: NFS from the tasks that use it",
        )
        file_system = efs.FileSystem(
            scope,
            id,
            vpc=vpc,
            vpc_subnets=vpc_subnets,
            security_group=security_group,
            encrypted=True,
            kms_key=encryption_key,
            file_system_policy=compile_cache_tiers.file_system_policy(),
            # False would make aws-cdk-lib add a statement allowing ClientMount, ClientWrite and ClientRootAccess to
            # any principal through a mount target. True adds nothing: the policy above, in effect, replaces the
            # default one that grants anonymous clients full access, and allows nothing, so an anonymous client gets
            # nothing and a task what its role allows ("an allow in either an IAM identity policy or a file system
            # resource policy allows access": Amazon EFS user guide, "Using IAM to control access to file systems").
            allow_anonymous_access=True,
            throughput_mode=efs.ThroughputMode.ELASTIC,
            enable_automatic_backups=False,
            removal_policy=removal_policy,
        )
        compliance.acknowledge_compile_cache_file_system(file_system)
        cache = cls.on_file_system(file_system, prefix)
        cache.allow_from(*clients)
        return cache

    def allow_from(self, *clients: ec2.IConnectable) -> None:
        """Admit NFS (TCP 2049) to the file system's mount targets from ``clients``."""
        if self.file_system is None:
            raise rules.WRONG_TYPE.error(
                "CompileCache", "only a cache on Amazon EFS has mount targets", expected="a cache on Amazon EFS"
            )
        for client in clients:
            self.file_system.connections.allow_default_port_from(client, "NFS from a task of the compile cache")

    def grant(self, role: iam.IRole, model: str | None = None) -> None:
        """Read, write and delete objects under ``model``'s prefix (the whole cache's without ``model``), and list
        it; nothing else in the bucket. A cache on a file system grants through :meth:`apply`, per access point."""
        if self.bucket is None:
            raise rules.WRONG_TYPE.error(
                "CompileCache", "a cache on a file system grants per access point", expected="a cache on S3"
            )
        prefix = self.prefix if model is None else self.model_prefix(model)
        _grant(
            role,
            self.bucket,
            prefix,
            ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
            key=self.bucket.encryption_key,
        )
        compliance.acknowledge_prefix_grant(role, _objects_resource(self.bucket, prefix), "compile cache")

    def apply(self, container: ecs.ContainerDefinition, role: iam.IRole, model: str) -> None:
        """Point ``container`` at ``model``'s part of the cache in the form its image's engine reads, and let ``role``
        use that part: refused when the engine cannot read this kind (NEURON150), a warning and nothing set when no
        source names the engine's cache (NEURON151)."""
        engine = _engine(container)
        _APPLIED[container] = (self, model)
        owner = container.task_definition.node.scope or container.task_definition  # the Neuron task definition
        where = f"{construct_path(owner)}/{container_name_of(container)}"
        if engine is not None and engine.cache is None:
            Validations.of(container.task_definition).add_warning(
                rules.ENGINE_CACHE_UNNAMED.warning_id,
                rules.ENGINE_CACHE_UNNAMED.message(
                    where, f"compile_cache= is given to an image of {engine.name} ({engine.source}): nothing is set"
                ),
            )
            return
        compile_cache_checks.record_use(self, container, role, where)
        remote_tier = self.file_system if self.file_system is not None else self.mount_path
        if remote_tier is not None:
            if engine is not None and engine.cache != engines.FILE_TIERS:
                raise rules.CACHE_ENGINE_MISMATCH.error(
                    where,
                    f"a compile cache on a file system is given to an image of {engine.name}, which reads "
                    f"{COMPILE_CACHE_VARIABLE} ({engine.source})",
                    fix="give it CompileCache.in_new_bucket(...) or CompileCache(bucket, prefix)",
                )
            directory = self.model_directory(model)
            compile_cache_tiers.apply_file_tiers(container, role, remote_tier, directory, _model_key(model), engine)
            return
        if engine is not None and engine.cache == engines.FILE_TIERS:
            raise rules.CACHE_ENGINE_MISMATCH.error(
                where,
                f"a compile cache on S3 is given to an image of {engine.name}, which does not read "
                f"{COMPILE_CACHE_VARIABLE} ({engine.source})",
                fix="give it CompileCache.in_new_file_system(scope, id, vpc=..., clients=[...]) (Amazon EFS) or "
                "CompileCache.on_file_system(file_system)",
            )
        container.add_environment(COMPILE_CACHE_VARIABLE, self.url_for(model))
        self.grant(role, model)


_APPLIED: weakref.WeakKeyDictionary[ecs.ContainerDefinition, tuple[CompileCache, str]] = weakref.WeakKeyDictionary()
"""Container -> the cache :meth:`CompileCache.apply` gave it and the model it keys it by."""


def compile_cache_of(container: ecs.ContainerDefinition) -> tuple[CompileCache, str] | None:
    """The compile cache ``container`` was given (``add_neuron_container(compile_cache=)``, a fleet model's or a
    sliced service's) and the model it is keyed by, or ``None``: what a precompile job of that model writes to."""
    return _APPLIED.get(container)


def _model_key(model: str) -> str:
    """``model`` as a key: characters other than letters, digits, ``.``, ``_``, ``-`` and ``/`` replaced by ``-``,
    empty segments dropped."""
    return "/".join(part for part in _NOT_IN_A_MODEL_KEY.sub("-", model).split("/") if part)


def _directory(file_system: efs.IFileSystem | None, prefix: str) -> str:
    """NEURON047 for a directory on a file system: the rules of :func:`_prefix` (no ``..``, no empty segment)."""
    where = construct_path(file_system) if file_system is not None else "CompileCache"
    stripped = prefix.strip("/")
    if not stripped or not _KEY_PREFIX.fullmatch(stripped) or len(stripped) > _KEY_BYTES:
        raise rules.S3_LOCATION.error(where, f"prefix={prefix[:200]!r} is not a directory name of safe characters")
    if any(segment in ("", ".", "..") for segment in stripped.split("/")):
        raise rules.S3_LOCATION.error(where, f"prefix={prefix[:200]!r} has an empty, '.' or '..' segment")
    return stripped


def _access_point_prefix(file_system: efs.IFileSystem, prefix: str) -> str:
    """NEURON155: a prefix an access point's root directory can start with, leaving room for the model's name."""
    if len(prefix) > compile_cache_tiers.ACCESS_POINT_PREFIX_CHARACTERS or prefix.count("/") > 2:
        problem = f"prefix={prefix[:200]!r} has {prefix.count('/') + 1} segments and {len(prefix)} characters"
        raise rules.ACCESS_POINT_PREFIX.error(construct_path(file_system), problem)
    if any(segment.startswith(".") for segment in prefix.split("/")):
        raise rules.ACCESS_POINT_PREFIX.error(
            construct_path(file_system), f"prefix={prefix[:200]!r} has a segment starting with '.'"
        )
    return prefix


_MOUNT_PATH = re.compile(r"/[A-Za-z0-9._-][A-Za-z0-9._/-]{0,254}")
"""An absolute instance path that a task definition's ``sourcePath`` names literally."""


def _mount_path(mount_path: str) -> str:
    """NEURON047: ``mount_path`` absolute, in normal form (no ``.``, ``..`` or empty segment, no trailing ``/``), of
    letters, digits, ``.``, ``_``, ``-`` and ``/``."""
    segments = mount_path.split("/")[1:]
    if not _MOUNT_PATH.fullmatch(mount_path) or any(segment in ("", ".", "..") for segment in segments):
        raise rules.S3_LOCATION.error(
            "CompileCache",
            f"mount_path={mount_path[:200]!r} is not an absolute path in normal form of letters, digits, '.', '_', "
            "'-' and '/'",
        )
    return mount_path


def _engine(container: ecs.ContainerDefinition) -> Engine | None:
    """The engine of ``container``'s image from the image table; ``None`` for an image it does not hold."""
    name = image_name_of(container)
    if is_token(name):
        return None
    found = image_support.table_image(name)
    return None if found is None else found[1].engine


class ModelArtifacts:
    """A model in S3, read only, copied into the task before the model server starts.

    ``ModelArtifacts(bucket, prefix, path="/opt/ml/model")``: the task gets a volume, a non-essential
    ``sync`` container (the AWS CLI, :data:`AWS_CLI_IMAGE`) that runs ``aws s3 sync s3://<bucket>/<prefix>
    <path>`` and exits, and the model container starts only once it succeeded, with the volume at ``path``
    read only and ``MODEL_DIR=<path>`` in its environment. The task role may read and list the prefix only.

    ``size_gib``: the size of the files under the prefix (``aws s3 ls --summarize --human-readable --recursive
    s3://<bucket>/<prefix>/``); a warm pool that copies them checks that its root volume holds them (NEURON091).
    Default unknown.
    """

    def __init__(
        self, bucket: s3.IBucket, prefix: str, *, path: str = "/opt/ml/model", size_gib: float | None = None
    ) -> None:
        self.bucket = bucket
        self.prefix = _prefix(bucket, prefix)
        if not path.startswith("/"):
            raise rules.S3_LOCATION.error(construct_path(bucket), f"path={path!r} is not absolute")
        self.path = path
        self.size_gib: float | None = (
            None if size_gib is None else inputs.check_size_gib(construct_path(bucket), "size_gib", size_gib)
        )
        self.url = f"s3://{bucket.bucket_name}/{self.prefix}"

    def grant(self, role: iam.IRole) -> None:
        """Read objects under the prefix and list it; nothing else."""
        _grant(role, self.bucket, self.prefix, ["s3:GetObject"], key=self.bucket.encryption_key)
        compliance.acknowledge_prefix_grant(role, _objects_resource(self.bucket, self.prefix), "model artifacts")

    @property
    def sync_command(self) -> list[str]:
        """The sync container's command (the AWS CLI image's entry point is ``aws``)."""
        return ["s3", "sync", "--only-show-errors", self.url, self.path]
