"""The Neuron instance catalog: instance type -> chips -> ``/dev/neuronN``.

Pure data, no AWS CDK import, so command-line tooling can read it without
starting the CDK's JavaScript runtime.

Sources
-------
* vCPUs, memory, chips and device paths: the Amazon ECS developer guide page
  "Amazon ECS task definitions for AWS Neuron machine learning workloads".
* trn1n.32xlarge and EFA counts: Neuron docs, "How to prepare trn1.32xlarge for
  multi-node execution" (trn1.32xlarge 8 EFA devices, trn1n.32xlarge 16,
  trn1.2xlarge none; "EFA is currently not available on the smaller instances sizes").
  trn2.48xlarge: 16 EFA interfaces, one per network card 0-15, as AWS's trn2 node group
  template attaches them (aws-neuron/aws-neuron-eks-samples, ``eks_trn2_ng_stack_al2023.yaml``).
* Network cards: the EC2 ``DescribeInstanceTypes`` figures AWS's VPC CNI ships
  (aws/amazon-vpc-cni-k8s, ``pkg/vpc/vpc_ip_resource_limit.go``): 8 on trn1.32xlarge, 16 on
  trn1n.32xlarge and trn2.48xlarge, 1 on the others.
* EFA bandwidth: Neuron architecture pages and the Trn1 launch (trn1.32xlarge 800 Gbps,
  trn1n.32xlarge 1,600 Gbps), trn2-arch ("EFAv3 bandwidth (Gbps) 3,200").
* NeuronCores and accelerator memory per chip: the Neuron architecture pages
  (inf1-arch, inf2-arch, trn1-arch, trn2-arch).
* Capacity Blocks for ML: the EC2 guide "Capacity Blocks for ML" lists trn1.32xlarge and
  trn2.48xlarge (trn2 in us-east-2) among the instance types Capacity Blocks offer; no Inferentia type.
* Device topology: the Neuron scheduler extension (aws-neuron-sdk,
  ``deploy/infrastructure/scheduler.rst``): inf1/inf2 chips form a ring and a
  container gets contiguous devices; trn1/trn1n 32xlarge chips form a 2D torus
  and a container takes 1, 4, 8 or 16 devices; one device or all devices is
  always valid. trn2: "In a trn2.48xlarge or trn2u.48xlarge instance, 16 Trainium2 chips are connected using a
  4x4, 2D Torus topology" (Neuron trn2-arch), and the Neuron DRA driver allocates "subsets of 1, 4, 8, or 16
  connected Neuron devices" (aws-neuron-sdk ``deploy/eks/dra.rst``; its diagram groups 4 as rows 0-3, 4-7, 8-11,
  12-15 and 8 as rows 0-7, 8-15, the same sets as the trn1 scheduler's).
* trn2.3xlarge (12 vCPUs, 128 GiB, one Trainium2, EFA on its one network card, 200 Gbps) and trn2u.48xlarge
  (192 vCPUs, 2,048 GiB, 16 network cards of 200 Gbps, no Spot): the EC2 page "Specifications for Amazon EC2
  accelerated computing instances"; a Trn2 UltraServer "comprises four trn2u.48xlarge instances" (Neuron
  trn2-arch). The library provisions trn2u.48xlarge as single instances; it does not build UltraServers (their
  capacity comes from UltraServer Capacity Blocks), nor the NeuronLink between the four.
* Logical NeuronCores: "LNC can only be set to 1 or 2 ... On Trn2, each chip has 8 physical NeuronCores. With
  LNC=2 (default), these are grouped into 4 Logical NeuronCores"; "On trn1, only lnc=1 is supported" (Neuron
  logical-neuroncore-config, compiler error EARG001). Trainium3 (8 NeuronCore-v4 and 144 GiB per chip) has no
  public per-instance table yet, so no trn3 type is in the catalog (docs: catalog, "Known unknowns").
* Inf1: Neuron SDK 2.21.0, whose runtime is 2.23, "Removed INF1 Support from Runtime library" (runtime release
  notes, Neuron 2.21.0; :mod:`~neuron_constructs.knowledge.neuron_releases`); the last Inf1 container images are
  Neuron SDK 2.20.2's (aws-neuron/deep-learning-containers README, ``pytorch-inference-neuron``), and from 2.27
  "Neuron no longer supports Inf1 virtual environments and AMIs" (Neuron announcement
  announce-eos-inf1-virtual-environments). The ECS Neuron AMI installs the newest driver at build and, on Inf1
  hardware, replaces it with ``aws-neuronx-dkms-2.21.*`` at boot (aws/amazon-ecs-ami
  ``scripts/al2023/neuron/neuron-inf1-downgrade.sh``).

A figure with no public source is ``None`` rather than a guess.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from neuron_constructs.knowledge.rules import UNKNOWN_INSTANCE_TYPE

__all__ = [
    "SCHEDULABLE_MEMORY_FRACTION",
    "Accelerator",
    "DeviceTopology",
    "NeuronInstanceType",
    "closest_instance_types",
    "ec2_instance_types",
    "instance_type_at",
]

Accelerator = Literal["inferentia", "inferentia2", "trainium", "trainium2"]


class DeviceTopology(Enum):
    """How an instance's Neuron chips are wired, which decides valid device sets."""

    SINGLE = "single"
    """One chip: the only valid set is ``{0}``."""
    RING = "ring"
    """inf1/inf2: chips form a ring; a container takes contiguous devices."""
    TORUS_2D = "2d-torus"
    """trn1/trn1n/trn2 with 16 chips: a 4x4 2D torus; a container takes 1, 4, 8 or 16 devices."""


# Per-chip facts by accelerator: (NeuronCores per chip, accelerator GiB per chip).
_PER_CHIP: dict[Accelerator, tuple[int, int]] = {
    "inferentia": (4, 8),
    "inferentia2": (2, 32),
    "trainium": (2, 32),
    "trainium2": (8, 96),
}

_TORUS_DEVICE_COUNTS = (1, 4, 8, 16)
_LNC_OPTIONS: dict[Accelerator, tuple[int, ...]] = {"trainium2": (1, 2)}
_CAPACITY_BLOCK_TYPES = frozenset({"trn1.32xlarge", "trn2.48xlarge"})

SCHEDULABLE_MEMORY_FRACTION = 0.9
"""Share of nominal memory this library plans tasks into. ECS registers less than the nominal
size (the kernel and platform keep some: an m4.large registers 7985 of 8192 MiB, per the AWS
Batch memory-management guide), and AWS recommends a further 5 % buffer for the ECS agent and
system processes; 10 % covers both."""


@dataclass(frozen=True)
class NeuronInstanceType:
    """One EC2 instance type with AWS Neuron accelerators.

    Get entries with :meth:`of` or :meth:`all`; the constructor is not the
    public way in.
    """

    name: str
    family: str
    vcpus: int
    memory_gib: int
    chips: int
    accelerator: Accelerator
    efa_interfaces: int | None
    """EFA devices; 0 where the type has none, ``None`` where no public figure is known."""
    network_cards: int | None = None
    """Network cards (an EFA interface each on the multi-card types); ``None`` where unknown."""
    efa_gbps: int | None = None
    """EFA bandwidth, Gbps; 0 without EFA, ``None`` where no public figure is known."""
    spot: bool = True
    """Whether EC2 offers the type as Spot (trn2u.48xlarge: no)."""
    ultraserver_nodes: int | None = None
    """Instances of this type that form one UltraServer (trn2u.48xlarge: 4); ``None`` for a standalone type."""

    @property
    def supports_multi_node(self) -> bool:
        """Whether Neuron collectives can span instances of this type: it has EFA (trn1.32xlarge, trn1n.32xlarge and
        the trn2 types)."""
        return bool(self.efa_interfaces)

    @property
    def device_paths(self) -> tuple[str, ...]:
        """Host paths of the Neuron devices, ``("/dev/neuron0", ...)``."""
        return tuple(f"/dev/neuron{i}" for i in range(self.chips))

    @property
    def neuron_cores_per_chip(self) -> int:
        """Physical NeuronCores per chip (trn2: 8, or 4 logical cores with LNC=2)."""
        return _PER_CHIP[self.accelerator][0]

    @property
    def accelerator_memory_gib_per_chip(self) -> int:
        """Accelerator (HBM) memory per chip, GiB."""
        return _PER_CHIP[self.accelerator][1]

    @property
    def neuron_cores(self) -> int:
        """Physical NeuronCores on the whole instance."""
        return self.chips * self.neuron_cores_per_chip

    @property
    def lnc_options(self) -> tuple[int, ...]:
        """The logical-core settings (``NEURON_LOGICAL_NC_CONFIG``) the chip takes: 1 or 2 on Trainium2, else 1."""
        return _LNC_OPTIONS.get(self.accelerator, (1,))

    @property
    def default_lnc(self) -> int:
        """The logical-core setting the Neuron runtime uses unless told: 2 on Trainium2, else 1."""
        return 2 if self.accelerator == "trainium2" else 1

    def cores_per_chip(self, lnc: int | None = None) -> int:
        """(Logical) NeuronCores per chip at ``lnc`` (default :attr:`default_lnc`): what the runtime numbers."""
        return self.neuron_cores_per_chip // (self.default_lnc if lnc is None else lnc)

    def cores(self, lnc: int | None = None) -> int:
        """(Logical) NeuronCores on the instance at ``lnc``: the most one-core models it runs at once."""
        return self.chips * self.cores_per_chip(lnc)

    @property
    def supported_by_current_neuron_sdk(self) -> bool:
        """False for inf1: Neuron SDK 2.21.0 (runtime 2.23) removed Inf1 from the runtime; its last container images
        are SDK 2.20.2's."""
        return self.accelerator != "inferentia"

    @property
    def supports_managed_instances(self) -> bool:
        """False for inf1: Amazon ECS runs Inf1 only on the EC2 launch type."""
        return self.accelerator != "inferentia"

    @property
    def offers_capacity_blocks(self) -> bool:
        """Whether EC2 Capacity Blocks for ML offer this type (trn1.32xlarge, trn2.48xlarge)."""
        return self.name in _CAPACITY_BLOCK_TYPES

    @property
    def cpu_units(self) -> int:
        """Task CPU units the whole instance offers (1 vCPU = 1024 units)."""
        return self.vcpus * 1024

    @property
    def memory_mib(self) -> int:
        """Nominal instance memory, MiB (ECS registers somewhat less)."""
        return self.memory_gib * 1024

    @property
    def schedulable_memory_mib(self) -> int:
        """Memory tasks are planned into: :data:`SCHEDULABLE_MEMORY_FRACTION` of ``memory_mib``."""
        return int(self.memory_mib * SCHEDULABLE_MEMORY_FRACTION)

    @property
    def topology(self) -> DeviceTopology:
        """How the chips are wired; decides :meth:`is_valid_device_set`."""
        if self.chips == 1:
            return DeviceTopology.SINGLE
        if self.accelerator in ("inferentia", "inferentia2"):
            return DeviceTopology.RING
        return DeviceTopology.TORUS_2D

    def is_valid_device_set(self, devices: Sequence[int]) -> bool:
        """Whether the Neuron topology rules would hand out exactly these chips.

        Indices must already be in range and distinct. One device or every
        device is always valid; a ring wants contiguous indices; a 2D torus
        wants 1, 4, 8 or 16 devices, taken contiguously, as the scheduler
        extension and the Neuron DRA driver hand them out.
        """
        count = len(devices)
        if count in (1, self.chips):
            return True
        ordered = sorted(devices)
        contiguous = ordered == list(range(ordered[0], ordered[0] + count))
        if self.topology is DeviceTopology.RING:
            return contiguous
        return contiguous and count in _TORUS_DEVICE_COUNTS

    def copy_sizes(self) -> tuple[int, ...]:
        """Every ``devices_per_task`` one copy of a model on a fleet may hold: the sizes of contiguous device sets
        the topology allows (any on a ring, 1/4/8/16 on the 16-chip torus)."""
        return tuple(k for k in range(1, self.chips + 1) if self.is_valid_device_set(range(k)))

    def slice_sizes(self) -> tuple[int, ...]:
        """Every ``devices_per_task`` that cuts the chips into equal contiguous slices the topology allows.

        ``k`` qualifies when it divides ``chips`` and every slice ``[i*k, (i+1)*k)`` is a
        valid device set: any divisor on a ring (inf1/inf2), 1/4/8/16 on the trn1/trn1n/trn2 torus.
        """
        return tuple(
            k
            for k in range(1, self.chips + 1)
            if self.chips % k == 0
            and all(self.is_valid_device_set(range(i * k, (i + 1) * k)) for i in range(self.chips // k))
        )

    def to_json(self) -> dict[str, object]:
        """Every fact of this entry, JSON-ready (``None`` where no public figure exists)."""
        return {
            "name": self.name,
            "family": self.family,
            "vcpus": self.vcpus,
            "memory_gib": self.memory_gib,
            "chips": self.chips,
            "device_paths": list(self.device_paths),
            "accelerator": self.accelerator,
            "neuron_cores": self.neuron_cores,
            "neuron_cores_per_chip": self.neuron_cores_per_chip,
            "lnc_options": list(self.lnc_options),
            "default_lnc": self.default_lnc,
            "logical_neuron_cores": self.cores(),
            "accelerator_memory_gib_per_chip": self.accelerator_memory_gib_per_chip,
            "efa_interfaces": self.efa_interfaces,
            "network_cards": self.network_cards,
            "efa_gbps": self.efa_gbps,
            "multi_node": self.supports_multi_node,
            "topology": self.topology.value,
            "supports_managed_instances": self.supports_managed_instances,
            "supported_by_current_neuron_sdk": self.supported_by_current_neuron_sdk,
            "spot": self.spot,
            "ultraserver_nodes": self.ultraserver_nodes,
            "slice_sizes": list(self.slice_sizes()),
        }

    @classmethod
    def of(cls, name: str) -> NeuronInstanceType:
        """The catalog entry for ``name`` (e.g. ``"trn1.32xlarge"``).

        Raises
        ------
        NeuronConfigurationError
            for an unknown or non-Neuron type, naming the closest known types.
        """
        return instance_type_at("NeuronInstanceType", name, exact=False)

    @classmethod
    def find(cls, name: str) -> NeuronInstanceType | None:
        """The catalog entry for ``name`` (case and surrounding blanks ignored), or ``None``."""
        return _BY_NAME.get(name.strip().lower()) if isinstance(name, str) else None

    @classmethod
    def all(cls) -> tuple[NeuronInstanceType, ...]:
        """Every catalog entry, inf1 first, in catalog order."""
        return _CATALOG

    @classmethod
    def matching(cls, pattern: str) -> tuple[NeuronInstanceType, ...]:
        """Entries whose name matches an EC2 ``allowedInstanceTypes`` pattern.

        EC2 patterns use ``*`` as a wildcard (``"inf*"``, ``"trn1.*"``,
        ``"inf2.48xlarge"``).
        """
        import fnmatch

        lowered = pattern.lower()
        return tuple(e for e in _CATALOG if fnmatch.fnmatchcase(e.name, lowered))


def closest_instance_types(name: str, limit: int = 3, names: Sequence[str] | None = None) -> list[str]:
    """Names closest to ``name`` (catalog names unless ``names`` is given), for "did you mean" messages."""
    names = list(names) if names is not None else [e.name for e in _CATALOG]
    close = difflib.get_close_matches(name.lower(), names, n=limit, cutoff=0.0)
    return close or names[:limit]


def instance_type_at(path: str, name: str | NeuronInstanceType, *, exact: bool = True) -> NeuronInstanceType:
    """NEURON001: the catalog entry for ``name``, or an error naming ``path`` and the closest types.

    A :class:`NeuronInstanceType` is taken as it is. With ``exact`` (what the constructs use) the
    name must be spelled as EC2 spells it: ``'INF2.xlarge'`` is refused with the right spelling,
    because it would reach the template as written.
    """
    if isinstance(name, NeuronInstanceType):
        return name
    entry = NeuronInstanceType.find(name)
    if entry is not None and exact and entry.name != name:
        raise UNKNOWN_INSTANCE_TYPE.error(
            path, f"{name!r} is not how EC2 spells an instance type (lowercase, no blanks)", closest=repr(entry.name)
        )
    if entry is None:
        raise UNKNOWN_INSTANCE_TYPE.error(
            path,
            f"{name!r} is not a Neuron instance type in the catalog",
            closest=", ".join(closest_instance_types(str(name))),
        )
    return entry


def _entry(
    name: str,
    vcpus: int,
    memory_gib: int,
    chips: int,
    accelerator: Accelerator,
    efa: int | None,
    network_cards: int | None = 1,
    efa_gbps: int | None = None,
    *,
    spot: bool = True,
    ultraserver_nodes: int | None = None,
) -> NeuronInstanceType:
    return NeuronInstanceType(
        name=name,
        family=name.split(".", 1)[0],
        vcpus=vcpus,
        memory_gib=memory_gib,
        chips=chips,
        accelerator=accelerator,
        efa_interfaces=efa,
        network_cards=network_cards,
        efa_gbps=0 if efa == 0 else efa_gbps,
        spot=spot,
        ultraserver_nodes=ultraserver_nodes,
    )


_CATALOG: tuple[NeuronInstanceType, ...] = (
    _entry("inf1.xlarge", 4, 8, 1, "inferentia", None),
    _entry("inf1.2xlarge", 8, 16, 1, "inferentia", None),
    _entry("inf1.6xlarge", 24, 48, 4, "inferentia", None),
    _entry("inf1.24xlarge", 96, 192, 16, "inferentia", None),
    _entry("inf2.xlarge", 4, 16, 1, "inferentia2", None),
    _entry("inf2.8xlarge", 32, 128, 1, "inferentia2", None),
    _entry("inf2.24xlarge", 96, 384, 6, "inferentia2", None),
    _entry("inf2.48xlarge", 192, 768, 12, "inferentia2", None),
    _entry("trn1.2xlarge", 8, 32, 1, "trainium", 0),
    _entry("trn1.32xlarge", 128, 512, 16, "trainium", 8, network_cards=8, efa_gbps=800),
    _entry("trn1n.32xlarge", 128, 512, 16, "trainium", 16, network_cards=16, efa_gbps=1600),
    _entry("trn2.3xlarge", 12, 128, 1, "trainium2", 1, network_cards=1, efa_gbps=200),
    _entry("trn2.48xlarge", 192, 2048, 16, "trainium2", 16, network_cards=16, efa_gbps=3200),
    _entry(
        "trn2u.48xlarge",
        192,
        2048,
        16,
        "trainium2",
        16,
        network_cards=16,
        efa_gbps=3200,
        spot=False,
        ultraserver_nodes=4,
    ),
)

_BY_NAME: dict[str, NeuronInstanceType] = {e.name: e for e in _CATALOG}


def ec2_instance_types() -> frozenset[str]:
    """Every instance type the EC2 API lists (its ``InstanceType`` values, as botocore ships them).

    Read from botocore's EC2 service model on first use (about 0.1 s), no AWS call.
    """
    return _ec2_instance_types()


@functools.cache
def _ec2_instance_types() -> frozenset[str]:
    from botocore.loaders import Loader

    model = Loader().load_service_model("ec2", "service-2")
    return frozenset(model["shapes"]["InstanceType"]["enum"])
