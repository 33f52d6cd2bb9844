"""The instance catalog: ECS table rows, per-chip facts, topology and look-ups."""

from __future__ import annotations

import pytest

from neuron_constructs import NeuronConfigurationError, NeuronInstanceType
from neuron_constructs.knowledge.catalog import DeviceTopology

# (type, vCPUs, GiB, chips) exactly as the ECS Neuron page lists them, plus trn1n.32xlarge (Neuron multi-node
# guide) and trn2.3xlarge and trn2u.48xlarge (EC2 accelerated computing specifications, Neuron trn2-arch).
ECS_TABLE = [
    ("trn1.2xlarge", 8, 32, 1),
    ("trn1.32xlarge", 128, 512, 16),
    ("trn2.48xlarge", 192, 2048, 16),
    ("inf1.xlarge", 4, 8, 1),
    ("inf1.2xlarge", 8, 16, 1),
    ("inf1.6xlarge", 24, 48, 4),
    ("inf1.24xlarge", 96, 192, 16),
    ("inf2.xlarge", 4, 16, 1),
    ("inf2.8xlarge", 32, 128, 1),
    ("inf2.24xlarge", 96, 384, 6),
    ("inf2.48xlarge", 192, 768, 12),
    ("trn1n.32xlarge", 128, 512, 16),
    ("trn2.3xlarge", 12, 128, 1),
    ("trn2u.48xlarge", 192, 2048, 16),
]


@pytest.mark.parametrize(("name", "vcpus", "memory_gib", "chips"), ECS_TABLE)
def test_catalog_rows_match_the_ecs_table(name: str, vcpus: int, memory_gib: int, chips: int) -> None:
    entry = NeuronInstanceType.of(name)
    assert (entry.vcpus, entry.memory_gib, entry.chips) == (vcpus, memory_gib, chips)
    assert entry.device_paths == tuple(f"/dev/neuron{i}" for i in range(chips))
    assert entry.family == name.split(".")[0]


def test_catalog_holds_exactly_the_sourced_types() -> None:
    assert sorted(e.name for e in NeuronInstanceType.all()) == sorted(row[0] for row in ECS_TABLE)


@pytest.mark.parametrize(
    ("name", "accelerator", "cores_per_chip", "hbm_gib", "efa", "managed"),
    [
        ("inf1.6xlarge", "inferentia", 4, 8, None, False),
        ("inf2.48xlarge", "inferentia2", 2, 32, None, True),
        ("trn1.2xlarge", "trainium", 2, 32, 0, True),
        ("trn1.32xlarge", "trainium", 2, 32, 8, True),
        ("trn1n.32xlarge", "trainium", 2, 32, 16, True),
        ("trn2.48xlarge", "trainium2", 8, 96, 16, True),
        ("trn2.3xlarge", "trainium2", 8, 96, 1, True),
        ("trn2u.48xlarge", "trainium2", 8, 96, 16, True),
    ],
)
def test_per_chip_facts(
    name: str, accelerator: str, cores_per_chip: int, hbm_gib: int, efa: int | None, managed: bool
) -> None:
    entry = NeuronInstanceType.of(name)
    assert entry.accelerator == accelerator
    assert entry.neuron_cores_per_chip == cores_per_chip
    assert entry.accelerator_memory_gib_per_chip == hbm_gib
    assert entry.efa_interfaces == efa
    assert entry.supports_managed_instances is managed


def test_entries_are_immutable() -> None:
    entry = NeuronInstanceType.of("inf2.xlarge")
    with pytest.raises(AttributeError):
        entry.chips = 2  # type: ignore[misc]


def test_lookup_is_case_insensitive() -> None:
    assert NeuronInstanceType.of(" Inf2.XLarge ") is NeuronInstanceType.of("inf2.xlarge")


@pytest.mark.parametrize(
    ("name", "suggested"),
    [("inf2.2xlarge", "inf2.xlarge"), ("trn1.48xlarge", "trn2.48xlarge"), ("p4d.24xlarge", None)],
)
def test_unknown_type_names_the_closest_known_types(name: str, suggested: str | None) -> None:
    with pytest.raises(NeuronConfigurationError, match=r"NEURON001.*closest: ") as raised:
        NeuronInstanceType.of(name)
    assert repr(name) in str(raised.value)
    if suggested:
        assert suggested in str(raised.value).split("closest:")[1]


@pytest.mark.parametrize(
    ("pattern", "names"),
    [
        ("inf2.*", {"inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge"}),
        ("trn1*", {"trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge"}),
        ("trn1.32xlarge", {"trn1.32xlarge"}),
        ("m7i.*", set()),
    ],
)
def test_patterns_match_like_ec2_allowed_instance_types(pattern: str, names: set[str]) -> None:
    assert {e.name for e in NeuronInstanceType.matching(pattern)} == names


@pytest.mark.parametrize(
    ("name", "devices", "valid"),
    [
        ("inf2.48xlarge", [0, 1, 2], True),
        ("inf2.48xlarge", [0, 2, 4], False),
        ("inf2.48xlarge", [5], True),
        ("inf1.6xlarge", [1, 2, 3], True),
        ("inf1.6xlarge", [0, 3], False),
        ("trn1.32xlarge", [0, 1, 2, 3], True),
        ("trn1.32xlarge", [0, 1, 2], False),
        ("trn1.32xlarge", list(range(8)), True),
        ("trn1.32xlarge", list(range(16)), True),
        ("trn1n.32xlarge", [0, 1, 2, 3, 4, 5], False),
        ("trn2.48xlarge", [0], True),
        ("trn2.48xlarge", list(range(16)), True),
        ("trn2.48xlarge", [4, 5, 6, 7], True),
        ("trn2.48xlarge", list(range(8, 16)), True),
        ("trn2.48xlarge", [0, 1], False),
        ("trn2u.48xlarge", [12, 13, 14, 15], True),
    ],
)
def test_topology_decides_valid_device_sets(name: str, devices: list[int], valid: bool) -> None:
    assert NeuronInstanceType.of(name).is_valid_device_set(devices) is valid


def test_topologies_by_family() -> None:
    assert NeuronInstanceType.of("inf2.xlarge").topology is DeviceTopology.SINGLE
    assert NeuronInstanceType.of("inf1.24xlarge").topology is DeviceTopology.RING
    assert NeuronInstanceType.of("trn1n.32xlarge").topology is DeviceTopology.TORUS_2D
    # "16 Trainium2 chips are connected using a 4x4, 2D Torus topology" (Neuron trn2-arch).
    assert NeuronInstanceType.of("trn2.48xlarge").topology is DeviceTopology.TORUS_2D
    assert NeuronInstanceType.of("trn2u.48xlarge").topology is DeviceTopology.TORUS_2D
    assert NeuronInstanceType.of("trn2.3xlarge").topology is DeviceTopology.SINGLE


def test_trn2_slices_of_4_and_8_chips() -> None:
    """The Neuron DRA driver allocates connected groups of 1, 4, 8 or 16 trn2 devices."""
    assert NeuronInstanceType.of("trn2.48xlarge").slice_sizes() == (1, 4, 8, 16)
    assert NeuronInstanceType.of("trn2.48xlarge").copy_sizes() == (1, 4, 8, 16)


@pytest.mark.parametrize(
    ("name", "lnc", "per_chip", "cores"),
    [
        ("inf1.24xlarge", None, 4, 64),
        ("inf2.48xlarge", None, 2, 24),
        ("trn1.32xlarge", None, 2, 32),
        ("trn2.48xlarge", None, 4, 64),
        ("trn2.48xlarge", 2, 4, 64),
        ("trn2.48xlarge", 1, 8, 128),
        ("trn2.3xlarge", None, 4, 4),
    ],
)
def test_logical_cores_follow_the_lnc_setting(name: str, lnc: int | None, per_chip: int, cores: int) -> None:
    """LNC=2 (the Trainium2 default) groups a chip's 8 physical NeuronCores into 4 logical ones; other chips have 1."""
    entry = NeuronInstanceType.of(name)
    assert (entry.cores_per_chip(lnc), entry.cores(lnc)) == (per_chip, cores)
    assert entry.lnc_options == ((1, 2) if entry.accelerator == "trainium2" else (1,))


def test_trn2u_is_an_ultraserver_node_without_spot_and_inf1_is_out_of_current_support() -> None:
    ultra = NeuronInstanceType.of("trn2u.48xlarge")
    assert (ultra.spot, ultra.ultraserver_nodes) == (False, 4)
    assert (
        NeuronInstanceType.of("trn2.48xlarge").spot and NeuronInstanceType.of("trn2.48xlarge").ultraserver_nodes is None
    )
    assert [e.name for e in NeuronInstanceType.all() if not e.supported_by_current_neuron_sdk] == [
        "inf1.xlarge",
        "inf1.2xlarge",
        "inf1.6xlarge",
        "inf1.24xlarge",
    ]


def test_every_catalog_type_is_an_ec2_instance_type() -> None:
    from neuron_constructs.knowledge.catalog import ec2_instance_types

    assert {e.name for e in NeuronInstanceType.all()} <= ec2_instance_types()


@pytest.mark.parametrize(
    ("name", "cards", "gbps", "multi_node"),
    [
        ("trn1.2xlarge", 1, 0, False),
        ("trn1.32xlarge", 8, 800, True),
        ("trn1n.32xlarge", 16, 1600, True),
        ("trn2.48xlarge", 16, 3200, True),
        ("trn2.3xlarge", 1, 200, True),
        ("trn2u.48xlarge", 16, 3200, True),
        ("inf2.48xlarge", 1, None, False),
    ],
)
def test_training_facts(name: str, cards: int, gbps: int | None, multi_node: bool) -> None:
    entry = NeuronInstanceType.of(name)
    assert (entry.network_cards, entry.efa_gbps, entry.supports_multi_node) == (cards, gbps, multi_node)


def test_every_multi_card_type_has_an_efa_interface_per_card() -> None:
    for entry in NeuronInstanceType.all():
        if entry.supports_multi_node and entry.network_cards and entry.network_cards > 1:
            assert entry.efa_interfaces == entry.network_cards, entry.name
