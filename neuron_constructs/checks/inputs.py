"""The rules checked at the call that breaks them: pure functions of the values a construct is given.

Each function raises the :class:`~neuron_constructs.knowledge.rules.rule.Rule`'s
:class:`~neuron_constructs.knowledge.errors.NeuronConfigurationError` naming the construct path it is
given, or returns the text of a warning for the caller to attach. The constructs call them before they
build anything; the template checks (:mod:`neuron_constructs.checks.template_checks`) apply the same rules
to finished templates. No AWS CDK import here.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

from neuron_constructs.knowledge import rollouts, rules
from neuron_constructs.knowledge.catalog import DeviceTopology, NeuronInstanceType
from neuron_constructs.knowledge.container_images import IMAGES, NeuronImage
from neuron_constructs.knowledge.cores import LOGICAL_CORE_VARIABLE, parse_core_list
from neuron_constructs.knowledge.numbers import parse_whole_number
from neuron_constructs.knowledge.rules import (
    BOUNDS_REVERSED,
    CAPACITY_SIZE,
    CHECKPOINT_DIR,
    DEPLOYMENT_STALLS,
    DEVICE_INDEX_RANGE,
    DEVICE_TOPOLOGY,
    DUPLICATE_DEVICE,
    IMPORTED_CLUSTER_PROVIDERS,
    INF1_ON_MANAGED_INSTANCES,
    LOGICAL_CORES,
    MEMORY_NEAR_INSTANCE_TOTAL,
    MODEL_NAME,
    NO_DEVICES,
    NON_NEURON_MANAGED_INSTANCES,
    PUBLISHED_NAME,
    SLICE_HOST_PORT,
    SLICE_RUNTIME_VARIABLE,
    SLICE_SIZE,
    SLICES_EXCEED_CAPACITY,
    SMOKE_TEST_ENVIRONMENT,
    SMOKE_TEST_TLS_NAME,
    SNAPSHOT_REMOVAL,
    TASK_EXCEEDS_INSTANCE,
)

_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+=-]{0,254}")
_MODEL_NAME_LENGTH = 255
_NOT_MODEL_NAME_CHARACTER = re.compile(r"[^A-Za-z0-9._/:@+=-]")
_NAME_HASH_LENGTH = 8

MANAGED_INSTANCES_ACCELERATORS = ("inferentia2", "trainium", "trainium2")
"""Neuron accelerator names ECS Managed Instances can select (Inf1 excluded)."""


def instance_type_patterns(instance_types: Sequence[str | NeuronInstanceType]) -> tuple[str, ...]:
    """``allowedInstanceTypes`` patterns: catalog entries by name, strings as given."""
    return tuple(t.name if isinstance(t, NeuronInstanceType) else t for t in instance_types)


def check_managed_instances_selection(
    path: str, accelerators: Sequence[str], instance_types: Sequence[str | NeuronInstanceType]
) -> tuple[NeuronInstanceType, ...]:
    """NEURON002/003: the catalog types a Managed Instances capacity may launch.

    Returns the catalog entries both selectors admit; raises when Inf1 is
    named (by accelerator or by a pattern that only Inf1 matches), when a
    selector admits no Neuron type, or when a pattern is not lowercase (EC2
    matches instance types as written, and they are lowercase).
    """
    allowed = ", ".join(MANAGED_INSTANCES_ACCELERATORS)
    if not accelerators or not instance_types:
        raise NON_NEURON_MANAGED_INSTANCES.error(path, "an empty accelerator or instance-type list", allowed=allowed)
    for name in accelerators:
        if name == "inferentia":
            raise INF1_ON_MANAGED_INSTANCES.error(path, "accelerator 'inferentia' (Inf1) was requested")
        if name not in MANAGED_INSTANCES_ACCELERATORS:
            raise NON_NEURON_MANAGED_INSTANCES.error(
                path, f"accelerator {name!r} is not a Neuron accelerator", allowed=allowed
            )
    admitted: list[NeuronInstanceType] = []
    for pattern in instance_type_patterns(instance_types):
        if pattern != pattern.strip().lower():
            raise NON_NEURON_MANAGED_INSTANCES.error(
                path,
                f"instance type pattern {pattern!r} is not lowercase and unpadded as EC2 matches it",
                allowed=allowed,
            )
        matches = NeuronInstanceType.matching(pattern)
        if matches and all(m.accelerator == "inferentia" for m in matches):
            raise INF1_ON_MANAGED_INSTANCES.error(path, f"instance type {pattern!r} selects Inf1")
        usable = [m for m in matches if m.accelerator in accelerators]
        if not usable:
            raise NON_NEURON_MANAGED_INSTANCES.error(
                path,
                f"instance type {pattern!r} matches no catalog type with accelerators {list(accelerators)}",
                allowed=allowed,
            )
        admitted.extend(u for u in usable if u not in admitted)
    return tuple(admitted)


def check_size_gib(path: str, name: str, size_gib: object) -> float:
    """NEURON027: a stated size (``image_size_gib``, ``ModelArtifacts(size_gib=)``) is a positive number of GiB."""
    if isinstance(size_gib, bool) or not isinstance(size_gib, int | float) or not 0 < size_gib <= 65_536:
        raise rules.OUT_OF_RANGE.error(
            path, f"{name}={size_gib!r}", name=name, minimum="more than 0", maximum="65,536 GiB (a gp3 volume's most)"
        )
    return float(size_gib)


def check_capacity_size(path: str, min_capacity: int, max_capacity: int) -> None:
    """NEURON004."""
    if min_capacity < 0 or max_capacity < 1 or min_capacity > max_capacity:
        raise CAPACITY_SIZE.error(path, f"min_capacity={min_capacity}, max_capacity={max_capacity}")


def check_bounds(
    path: str, lower: tuple[str, int], upper: tuple[str, int], *, strictly: bool = False, lower_default: str = ""
) -> None:
    """NEURON075: ``lower`` (name, value) is at most ``upper`` (below it when ``strictly``); ``lower_default``: where
    the lower value came from when it was not passed, for the message."""
    (low_name, low), (high_name, high) = lower, upper
    if low > high or (strictly and low == high):
        shown = f"{low_name}={low}" + (f" ({lower_default})" if lower_default else "")
        most, least = (high - 1, low + 1) if strictly else (high, low)
        raise BOUNDS_REVERSED.error(
            path,
            f"{shown} is {'not below' if strictly else 'above'} {high_name}={high}",
            lower=f"{low_name}={most}",
            upper=f"{high_name}={least}",
        )


def check_device_indices(path: str, instance: NeuronInstanceType, devices: Iterable[int]) -> tuple[int, ...]:
    """NEURON009/010/011: chip indices exist on the type and are distinct."""
    chosen = tuple(devices)
    if not chosen:
        raise NO_DEVICES.error(path, "devices is empty")
    seen: set[int] = set()
    for index in chosen:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < instance.chips:
            raise DEVICE_INDEX_RANGE.error(
                path,
                f"device {index!r} does not exist on {instance.name}",
                last=instance.chips - 1,
                instance_type=instance.name,
                chips=instance.chips,
            )
        if index in seen:
            raise DUPLICATE_DEVICE.error(path, f"device {index} is listed twice in {list(chosen)}")
        seen.add(index)
    return chosen


def check_core_indices(path: str, instance: NeuronInstanceType, lnc: int, cores: Iterable[int]) -> tuple[int, ...]:
    """NEURON019: ``cores`` are distinct NeuronCores of ``instance`` at ``lnc`` (host numbering), at least one."""
    total = instance.cores(lnc)
    chosen = tuple(cores)
    if not chosen or any(isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < total for c in chosen):
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"cores={list(chosen)!r} but {instance.name} has NeuronCores 0-{total - 1}"
            + (f" at LNC={lnc}" if len(instance.lnc_options) > 1 else ""),
            cores=total,
        )
    if len(set(chosen)) != len(chosen):
        raise SLICE_RUNTIME_VARIABLE.error(path, f"cores={list(chosen)} names a core twice", cores=total)
    if max(chosen) - min(chosen) + 1 != len(chosen):
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"cores={sorted(chosen)} is not a contiguous range, which NEURON_RT_VISIBLE_CORES must name",
            cores=total,
        )
    return chosen


def device_topology_warning(path: str, instance: NeuronInstanceType, devices: Sequence[int]) -> str | None:
    """NEURON101: the warning text for a set the topology rules never hand out, else ``None``."""
    if instance.is_valid_device_set(devices):
        return None
    count = len(devices)
    if instance.topology is DeviceTopology.TORUS_2D:
        count = min((c for c in (1, 4, 8, 16) if c >= count), default=instance.chips)
    return DEVICE_TOPOLOGY.message(
        path,
        f"devices {sorted(devices)} on {instance.name} ({instance.topology.value} topology)",
        suggestion=list(range(count)),
    )


def check_task_size(
    path: str,
    instance: NeuronInstanceType,
    cpu: int | None,
    memory_mib: int | None,
    *,
    cpu_from_containers: bool = False,
    memory_from_containers: bool = False,
) -> str | None:
    """NEURON012 (error beyond the instance) and NEURON103 (warning text near its memory total).

    ``*_from_containers``: the task sets no size, so the value is what its containers ask for."""
    cpu_text = f"its containers' cpu ({cpu} in total)" if cpu_from_containers else f"cpu={cpu}"
    memory_text = (
        f"its containers' memory_limit_mib/memory_reservation_mib ({memory_mib} MiB in total)"
        if memory_from_containers
        else f"memory_mib={memory_mib}"
    )
    if cpu is not None and cpu > instance.cpu_units:
        raise TASK_EXCEEDS_INSTANCE.error(
            path,
            f"{cpu_text} exceeds the {instance.cpu_units} CPU units of {instance.name}",
            limit=instance.cpu_units,
            unit="CPU units",
            instance_type=instance.name,
        )
    if memory_mib is not None and memory_mib > instance.memory_mib:
        raise TASK_EXCEEDS_INSTANCE.error(
            path,
            f"{memory_text} exceeds the {instance.memory_mib} MiB of {instance.name}",
            limit=instance.memory_mib,
            unit="MiB",
            instance_type=instance.name,
        )
    if memory_mib is not None and memory_mib > instance.schedulable_memory_mib:
        return MEMORY_NEAR_INSTANCE_TOTAL.message(
            path,
            f"{memory_text} is within 10 % of {instance.name}'s {instance.memory_mib} MiB",
            nominal_mib=instance.memory_mib,
        )
    return None


def check_slice_size(path: str, instance: NeuronInstanceType, devices_per_task: int) -> int:
    """NEURON016: the number of slices ``devices_per_task`` cuts ``instance`` into."""
    allowed = instance.slice_sizes()
    if devices_per_task not in allowed:
        raise SLICE_SIZE.error(
            path,
            f"devices_per_task={devices_per_task!r} does not cut the {instance.chips} chips of {instance.name} "
            "into equal slices its topology allows",
            size_name="devices_per_task",
            allowed=list(allowed),
            instance_type=instance.name,
        )
    return instance.chips // devices_per_task


def check_core_slice_size(path: str, instance: NeuronInstanceType, cores_per_task: int, lnc: int) -> int:
    """NEURON016: the number of slices ``cores_per_task`` cuts ``instance`` into at ``lnc``: it must divide a
    chip's (logical) cores, so that every slice stays on one chip and every core is used."""
    per_chip = instance.cores_per_chip(lnc)
    allowed = [k for k in range(1, per_chip + 1) if per_chip % k == 0]
    if cores_per_task not in allowed:
        raise SLICE_SIZE.error(
            path,
            f"cores_per_task={cores_per_task!r} does not cut the {per_chip} NeuronCores of a {instance.name} chip"
            + (f" at LNC={lnc}" if len(instance.lnc_options) > 1 else "")
            + " into equal slices",
            size_name="cores_per_task",
            allowed=allowed,
            instance_type=instance.name,
        )
    return instance.cores(lnc) // cores_per_task


def check_lnc(path: str, instance: NeuronInstanceType | None, lnc: int | None, *, type_name: str = "") -> int:
    """NEURON064: ``lnc`` (``None``: the type's default) is a setting ``instance``'s chips take; returns it.

    Only Trainium2 takes a logical NeuronCore setting, so any ``lnc`` - even 1, the only grouping other chips have -
    is refused for another type (``instance`` ``None``: a non-Neuron type, named ``type_name``): the library would
    otherwise write a setting no runtime reads into user data and environments."""
    if lnc is None:
        return 1 if instance is None else instance.default_lnc
    if instance is None or len(instance.lnc_options) == 1:
        name = instance.name if instance is not None else (type_name or "this type")
        raise LOGICAL_CORES.error(
            path, f"lnc={lnc!r}: only Trainium2 takes a logical NeuronCore setting, not {name}; leave lnc unset"
        )
    if isinstance(lnc, bool) or lnc not in instance.lnc_options:
        raise LOGICAL_CORES.error(
            path, f"lnc={lnc!r}: {instance.name} takes LNC {' or '.join(map(str, instance.lnc_options))}"
        )
    return lnc


def check_slice_capacity(path: str, instances: int, max_capacity: int, capacity: str) -> None:
    """NEURON017: ``instances`` tasks per slice fit the Auto Scaling group's ``max_capacity``."""
    if not 0 <= instances <= max_capacity:
        raise SLICES_EXCEED_CAPACITY.error(
            path,
            f"instances={instances} but {capacity} launches 0 to {max_capacity} instances",
            capacity=capacity,
            instances=instances,
            max_capacity=max_capacity,
        )


def check_slice_host_ports(path: str, network_mode: str, port_mappings: Iterable[tuple[int, int | None]]) -> None:
    """NEURON018: no fixed host port where slices share the network (``network_mode``: bridge, host, awsvpc)."""
    for container_port, host_port in port_mappings:
        if network_mode == "host":
            raise SLICE_HOST_PORT.error(
                path, f"container port {container_port} is a host port in the host network mode"
            )
        if network_mode == "bridge" and host_port:
            raise SLICE_HOST_PORT.error(path, f"host_port={host_port} in the bridge network mode")


def check_slice_environment(path: str, environment: Mapping[str, str], cores_per_slice: int) -> None:
    """NEURON019: no ``NEURON_RT_VISIBLE_CORES`` (it differs per slice), ``NEURON_RT_NUM_CORES`` within a slice."""
    if "NEURON_RT_VISIBLE_CORES" in environment:
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"NEURON_RT_VISIBLE_CORES={environment['NEURON_RT_VISIBLE_CORES']} is the same in every slice, "
            "but each slice holds other cores",
            cores=cores_per_slice,
        )
    requested = environment.get("NEURON_RT_NUM_CORES")
    count = parse_whole_number(requested) if requested is not None else None
    if requested is not None and (count is None or not 1 <= count <= cores_per_slice):
        raise SLICE_RUNTIME_VARIABLE.error(
            path,
            f"NEURON_RT_NUM_CORES={requested} but a slice holds {cores_per_slice} NeuronCores",
            cores=cores_per_slice,
        )


def valid_model_name(name: str) -> bool:
    """Whether neuron-monitor and CloudWatch take ``name`` as a model name (:func:`check_model_name`)."""
    return bool(_MODEL_NAME.fullmatch(name))


def check_model_name(path: str, name: str, *, given_as: str = "model_name") -> str:
    """NEURON067: a name neuron-monitor takes as ``NEURON_PROCESS_TAG`` (up to 255 characters) and CloudWatch as a
    dimension value: 1 to 255 letters, digits and ``. _ - / : @ + =``, starting with a letter or digit."""
    if not _MODEL_NAME.fullmatch(name):
        raise MODEL_NAME.error(path, f"{given_as}={name!r} is not 1 to 255 such characters")
    return name


def derived_model_name(path: str) -> str:
    """The model name the library derives from a construct path when the user gives none: the path itself when
    neuron-monitor and CloudWatch can carry it (:func:`check_model_name`), else the path with every other character
    replaced by ``-``, leading ones dropped, cut to fit 255 characters with ``-`` and the first 8 hex digits of the
    path's SHA-256 appended, so two paths that read alike once replaced (``Llama 3``, ``Llama-3``) stay two models.
    Never refused: the name is the library's, not the user's."""
    if _MODEL_NAME.fullmatch(path):
        return path
    readable = _NOT_MODEL_NAME_CHARACTER.sub("-", path).lstrip("._/:@+=-") or "model"
    digest = hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:_NAME_HASH_LENGTH]
    return f"{readable[: _MODEL_NAME_LENGTH - _NAME_HASH_LENGTH - 1]}-{digest}"


_S3_SCHEME = "s3://"
_BUCKET_CHARACTERS = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_BUCKET_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_BUCKET_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3")
_KEY_BYTES = 1024
_PATH_BYTES = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def s3_bucket_name_problem(name: str) -> str | None:
    """Why S3 would not take ``name`` as a general purpose bucket name, or ``None`` (Amazon S3 user guide, "General
    purpose bucket naming rules"): 3 to 63 lowercase letters, digits, dots and hyphens, beginning and ending with a
    letter or digit, no two adjacent periods, not an IP address, not beginning ``xn--``, ``sthree-`` or
    ``amzn-s3-demo-``, not ending ``-s3alias``, ``--ol-s3``, ``.mrap`` or ``--x-s3``."""
    if not _BUCKET_CHARACTERS.fullmatch(name):
        return "is not 3 to 63 lowercase letters, digits, dots and hyphens beginning and ending with a letter or digit"
    if ".." in name:
        return "has two adjacent periods"
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        return "is formatted as an IP address"
    for prefix in _BUCKET_RESERVED_PREFIXES:
        if name.startswith(prefix):
            return f"begins with the reserved prefix {prefix!r}"
    for suffix in _BUCKET_RESERVED_SUFFIXES:
        if name.endswith(suffix):
            return f"ends with the reserved suffix {suffix!r}"
    return None


def check_checkpoint_dir(path: str, given: str, mount_path: str | None) -> str:
    """NEURON066: ``given``, a checkpoint directory every node of a job reaches - returned as given.

    * ``s3://<bucket>/<prefix>``: a bucket name S3 allows (:func:`s3_bucket_name_problem`) and a key prefix of at most
      1,024 bytes with no empty, ``.`` or ``..`` segment (Amazon S3 user guide, "Naming Amazon S3 objects": tools
      that map keys to paths read those as directories, so one prefix would be two).
    * a local path: absolute, in normal form (``posixpath.normpath`` leaves it unchanged: no ``.``, ``..``, doubled
      or trailing ``/``) and at or under ``mount_path``, the queue's shared storage. A ``..`` is refused even where
      it would stay inside: the kernel resolves it after following symbolic links, which a lexical check cannot.
      Nothing is rewritten: a path not in normal form is refused with its normal form in the message.

    No control characters anywhere (the value reaches every node as an environment variable)."""
    where = f"a path under {mount_path} (the queue's storage)" if mount_path else "no shared storage (storage=)"

    def refuse(problem: str) -> Exception:
        return CHECKPOINT_DIR.error(path, f"checkpoint_dir={given[:200]!r} {problem}")

    if _CONTROL.search(given):
        raise refuse("holds a control character")
    if given.startswith(_S3_SCHEME):
        bucket, _, key = given[len(_S3_SCHEME) :].partition("/")
        problem = s3_bucket_name_problem(bucket)
        if problem:
            raise refuse(f"names the bucket {bucket[:80]!r}, which {problem} (S3 bucket naming rules)")
        segments = key.rstrip("/").split("/")
        if not key.strip("/"):
            raise refuse("names no key prefix under the bucket")
        if len(key.encode("utf-8", "surrogatepass")) > _KEY_BYTES:
            raise refuse(f"has a key prefix longer than {_KEY_BYTES} bytes, the most an S3 object key holds")
        if any(segment in ("", ".", "..") for segment in segments):
            raise refuse("has an empty, '.' or '..' segment in its key prefix")
        return given
    if not given.startswith("/"):
        raise refuse("is neither an absolute path nor an s3://bucket/prefix URL")
    if len(given.encode("utf-8", "surrogatepass")) > _PATH_BYTES:
        raise refuse(f"is longer than {_PATH_BYTES} bytes, the longest path Linux takes")
    if ".." in given.split("/"):
        raise refuse(f"climbs with '..' (to {posixpath.normpath(given)!r} as written)")
    normal = posixpath.normpath(given)
    if normal != given:
        raise refuse(f"is not in normal form; write {normal!r}")
    mount = posixpath.normpath(mount_path) if mount_path else None
    if mount is None or not (normal == mount or normal.startswith(mount.rstrip("/") + "/")):
        raise refuse(f"is not on shared storage: the queue's nodes share {where}")
    return given


_PARAMETER_LEVEL = re.compile(r"[A-Za-z0-9_.-]+")
_PARAMETER_DEPTH = 15
_PARAMETER_ARN_LENGTH = 1011
_LONGEST_ARN_HEAD = len("arn:aws-us-gov:ssm:ap-southeast-4:123456789012:parameter")
"""What a parameter's ARN adds to its name, at most: the longest partition and Region names, an account id."""


def check_parameter_prefix(path: str, prefix: str, suffixes: Sequence[str]) -> None:
    """NEURON082: ``prefix`` followed by each of ``suffixes`` (``a/b``) is a Parameter Store name in a hierarchy:
    ``/`` then levels of ``A-Za-z0-9_.-``, at most 15 deep and 1,011 characters with the ARN, not beginning with
    ``aws`` or ``ssm`` (PutParameter Name)."""
    levels = prefix.split("/")
    fix = {"prefix": "'/neuron/<team>'"}
    if not prefix.startswith("/") or prefix.endswith("/"):
        raise PUBLISHED_NAME.error(path, f"prefix={prefix!r} does not begin with a slash or ends with one", **fix)
    bad = next((level for level in levels[1:] if not _PARAMETER_LEVEL.fullmatch(level)), None)
    if bad is not None:
        raise PUBLISHED_NAME.error(path, f"prefix={prefix!r} has the level {bad!r}", **fix)
    if levels[1].lower().startswith(("aws", "ssm")):
        raise PUBLISHED_NAME.error(path, f"prefix={prefix!r} begins with {levels[1][:3]!r}", **fix)
    for suffix in suffixes:
        name = f"{prefix}/{suffix}"
        depth = name.count("/")
        if depth > _PARAMETER_DEPTH:
            raise PUBLISHED_NAME.error(path, f"prefix={prefix!r} makes {name!r}, {depth} levels deep", **fix)
        if len(name) + _LONGEST_ARN_HEAD > _PARAMETER_ARN_LENGTH:
            raise PUBLISHED_NAME.error(
                path, f"prefix={prefix!r} makes a name of {len(name)} characters, too long with its ARN", **fix
            )


def check_default_strategy(path: str, cluster: str, named: Sequence[str], listed: Sequence[str] | None) -> None:
    """NEURON056: an imported cluster's default capacity provider strategy names only providers the association
    lists - ``listed``, the cluster's existing providers and those the library adds (PutClusterCapacityProviders: "A
    capacity provider must be associated with the cluster to be used in a capacity provider strategy"). ``named``:
    the strategy's literal provider names (the caller leaves deploy-time values out); ``listed`` ``None``: the
    existing providers were not given, so nothing is listed and the strategy could never be set."""
    if not named:
        return
    if listed is None:
        raise IMPORTED_CLUSTER_PROVIDERS.error(
            path,
            f"default_capacity_provider_strategy names {named[0]!r}, but existing_capacity_providers is not given, so "
            f"no association lists it",
            cluster=cluster,
        )
    for name in named:
        if name not in listed:
            raise IMPORTED_CLUSTER_PROVIDERS.error(
                path,
                f"default_capacity_provider_strategy names {name!r}, which the cluster's providers {list(listed)} "
                "(existing_capacity_providers and those added here) do not include",
                cluster=cluster,
            )


def environment_lnc(instance: NeuronInstanceType, environment: Mapping[str, str]) -> int:
    """The logical-core setting a container runs with: its ``NEURON_LOGICAL_NC_CONFIG`` where that is one the type
    takes, else the type's default (2 on Trainium2, else 1)."""
    stated = str(environment.get(LOGICAL_CORE_VARIABLE, ""))
    number = parse_whole_number(stated)
    return number if number is not None and number in instance.lnc_options else instance.default_lnc


def check_runtime_cores(
    path: str, environment: Mapping[str, str], instance: NeuronInstanceType, devices: Iterable[int]
) -> None:
    """NEURON019 for one container per instance: ``NEURON_RT_VISIBLE_CORES`` only names cores of the mapped devices
    (host numbering, logical cores at the environment's ``NEURON_LOGICAL_NC_CONFIG``), ``NEURON_RT_NUM_CORES`` from 1
    to their count."""
    per_chip = instance.cores_per_chip(environment_lnc(instance, environment))
    held = {d * per_chip + k for d in devices for k in range(per_chip)}
    visible = environment.get("NEURON_RT_VISIBLE_CORES")
    if visible is not None:
        cores = parse_core_list(visible)
        if cores is None or not cores <= held:
            raise SLICE_RUNTIME_VARIABLE.error(
                path,
                f"NEURON_RT_VISIBLE_CORES={visible} but the container maps cores {min(held)}-{max(held)}",
                cores=len(held),
            )
    requested = environment.get("NEURON_RT_NUM_CORES")
    count = parse_whole_number(requested) if requested is not None else None
    if requested is not None and (count is None or not 1 <= count <= len(held)):
        raise SLICE_RUNTIME_VARIABLE.error(
            path, f"NEURON_RT_NUM_CORES={requested} but the container maps {len(held)} NeuronCores", cores=len(held)
        )


MANAGED_INSTANCES_REJECTED_CONTAINER_FIELDS = {
    "docker_labels": "dockerLabels",
    "inference_accelerator_resources": "inferenceAccelerator resources",
}
NEURON_CONTAINER_FORBIDDEN_OPTIONS = ("gpu_count", "inference_accelerator_resources")


def room_to_stop(tasks: int) -> int:
    """The largest minimum healthy percent that lets ECS stop one of ``tasks`` tasks (rounded up, it stays below)."""
    return max(0, (tasks - 1) * 100 // tasks)


def room_to_start(tasks: int) -> int:
    """The smallest maximum percent that lets ECS start one task beyond ``tasks`` (rounded down, it reaches above)."""
    return -(-(tasks + 1) * 100 // tasks)


def deployment_stalls(tasks: int, minimum_healthy_percent: int, maximum_percent: int) -> bool:
    """NEURON040: with ``tasks`` desired, a rolling deployment can neither start a task nor stop one."""
    return (
        tasks > 0
        and rollouts.most_running(tasks, maximum_percent) <= tasks
        and rollouts.fewest_running(tasks, minimum_healthy_percent) >= tasks
    )


def check_deployment_percents(
    path: str,
    task_counts: Iterable[int],
    minimum: int,
    maximum: int,
    *,
    maximum_fixed: bool = False,
    minimum_set_by: str | None = None,
) -> None:
    """NEURON040 for every task count a service may run; ``maximum_fixed``: the caller cannot change the maximum
    (sliced services deploy with 100 %), so the other fix is more tasks; ``minimum_set_by``: the call that passed
    the minimum, for the message."""
    for tasks in task_counts:
        if deployment_stalls(tasks, minimum, maximum):
            upper = "the 100 % maximum slices deploy with" if maximum_fixed else f"max_healthy_percent={maximum}"
            passed = f" (passed to {minimum_set_by})" if minimum_set_by else ""
            raise DEPLOYMENT_STALLS.error(
                path,
                f"with {tasks} task{'s' if tasks != 1 else ''}, {upper} starts none beyond "
                f"{'them' if tasks != 1 else 'it'} and min_healthy_percent={minimum}{passed} stops none",
                percent=room_to_stop(tasks) if tasks == 1 else f"{room_to_stop(tasks)} or less",
                more_room=f"never run fewer than {tasks + 1} tasks"
                if maximum_fixed
                else f"max_healthy_percent={room_to_start(tasks)} or more",
            )


_SECRET_WORDS = frozenset({"SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS", "APIKEY"})
_NOT_A_SECRET_SUFFIX = ("_ARN", "_ID", "_NAME", "_PATH", "_FILE", "_URL", "_URI", "_REGION", "_ENDPOINT")
_NOT_A_SECRET_NAMES = frozenset({"GOOGLE_APPLICATION_CREDENTIALS"})
"""Names that by convention hold a file path."""
_KEYS_THAT_ARE_NOT_SECRETS = frozenset({"PUBLIC", "S3", "CACHE", "OBJECT", "PARTITION", "SORT", "PRIMARY", "ROUTING"})
"""A word before ``KEY`` that makes it a name, not a credential (``MODEL_S3_KEY``, ``CACHE_KEY``)."""


def secret_like(name: str) -> bool:
    """Whether an environment variable name says it holds a secret.

    A word (``_``-separated or camelCase) ``SECRET``, ``PASSWORD``, ``CREDENTIALS``, ``APIKEY`` anywhere
    (``DB_PASSWORD``, ``PGPASSWORD``), ``TOKEN`` as the last word (``HF_TOKEN``, ``hfToken``), or a last word
    ending in ``KEY`` (``API_KEY``, ``AWS_SECRET_ACCESS_KEY``); not ``MAX_TOKENS``,
    ``NEURON_TOKEN_GEN_BUCKETS``, ``TOKENIZERS_PARALLELISM``, ``SSH_PUBLIC_KEY`` or ``MODEL_S3_KEY``, and not a
    name that points at a secret (``*_ARN``, ``*_PATH``, ``*_FILE``, ``GOOGLE_APPLICATION_CREDENTIALS``...).
    """
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).upper().split("_")
    upper = "_".join(words)
    if upper.endswith(_NOT_A_SECRET_SUFFIX) or upper in _NOT_A_SECRET_NAMES:
        return False
    if _SECRET_WORDS & set(words) or any(w.endswith(("PASSWORD", "PASSWD")) for w in words):
        return True
    last = words[-1]
    if last == "TOKEN":
        return True
    return last.endswith("KEY") and last != "MONKEY" and not _KEYS_THAT_ARE_NOT_SECRETS & set(words)


def check_removal_policy(path: str, name: str, policy: str, what: str) -> None:
    """NEURON071: ``policy`` (a ``RemovalPolicy`` name) ``SNAPSHOT`` for ``what``, which CloudFormation cannot
    snapshot."""
    if policy == "SNAPSHOT":
        raise SNAPSHOT_REMOVAL.error(path, f"{name}=RemovalPolicy.SNAPSHOT for {what}", name=name)


LAMBDA_ENVIRONMENT_BYTES = 4096
"""Lambda's limit on a function's environment variables, names and values together (Lambda quotas: 4 KB)."""
DEPLOY_TIME_URL_BYTES = 270
"""What a URL known only at deploy time (a load balancer's DNS name) is counted as: ``https://``, the longest DNS name
(253 characters) and ``:65535``."""


def environment_bytes(environment: Mapping[str, str | None]) -> int:
    """The size of ``environment`` counted as its JSON object (names, values, quotes and separators): never less
    than the names and values alone. A ``None`` value is one known only at deploy time, counted as
    :data:`DEPLOY_TIME_URL_BYTES`."""
    size = 2 + max(len(environment) - 1, 0)  # {}, the commas
    for name, value in environment.items():
        size += len(json.dumps(name, ensure_ascii=False).encode()) + 1
        size += DEPLOY_TIME_URL_BYTES if value is None else len(json.dumps(value, ensure_ascii=False).encode())
    return size


def check_smoke_test_environment(path: str, environment: Mapping[str, str | None]) -> None:
    """NEURON080: the smoke test's environment (``None`` for a value known only at deploy time) within Lambda's 4 KB,
    naming the largest value to shorten."""
    size = environment_bytes(environment)
    if size <= LAMBDA_ENVIRONMENT_BYTES:
        return

    def value_bytes(name: str) -> int:
        value = environment[name]
        return DEPLOY_TIME_URL_BYTES if value is None else len(value.encode())

    largest = max(environment, key=value_bytes)
    raise SMOKE_TEST_ENVIRONMENT.error(
        path,
        f"the smoke test's environment takes about {size} bytes, {value_bytes(largest)} of them {largest}",
        what=_SMOKE_TEST_SETTINGS.get(largest, largest),
    )


_SMOKE_TEST_SETTINGS = {
    "SMOKE_TEST_BODY": "SmokeTest body",
    "SMOKE_TEST_PATH": "SmokeTest path",
    "SMOKE_TEST_HEADER": "header",
    "SMOKE_TEST_URL": "url",
}


_LOAD_BALANCER_DOMAINS = (".elb.amazonaws.com", ".elb.amazonaws.com.cn")
"""The domains of Elastic Load Balancing's own DNS names (the commercial and the China partitions)."""


def smoke_test_tls_warning(path: str, url: str, host: str | None) -> str | None:
    """NEURON123's message when the smoke test would send HTTPS to a name no certificate of yours covers: the load
    balancer's own DNS name, or a host known only at deploy time (``host`` None), which usually is that name."""
    if not url.lower().startswith("https://"):
        return None
    if host is not None and not host.lower().rstrip(".").endswith(_LOAD_BALANCER_DOMAINS):
        return None
    shown = "a host known only at deploy time (the load balancer's DNS name?)" if host is None else host
    return SMOKE_TEST_TLS_NAME.message(path, f"url= is HTTPS to {shown}")


def check_root_image(
    path: str, image: NeuronImage, *, shown: str, argument: str, how: str, library_images: Iterable[NeuronImage]
) -> NeuronImage | None:
    """NEURON068 for an image the library runs as root on the instance (privileged, or in the host network with the
    instance role): refused without a digest, unless it is one of ``library_images``, the library's own, which no
    source gives a digest for yet: that one is returned, for the NEURON116 warning. ``None`` for a pinned image.
    ``shown`` names the argument in the problem (``monitor_image``), ``argument`` in the fix, ``how`` says how the
    image runs."""
    if image.digest is not None:
        return None
    if any(image == known for known in library_images):
        return image
    constant = next((name for name, known in IMAGES.items() if known.uri == image.uri), "your_image")
    raise rules.UNPINNED_PRIVILEGED_IMAGE.error(
        path, f"{shown} {image.uri} has no digest, and {how}", argument=argument, constant=constant, uri=image.uri
    )
