"""Rules on instance types and the capacity that launches them: Neuron instance types and the types EC2 offers,
Managed Instances capacity that selects Neuron instances, Auto Scaling group bounds and subnets, Spot, Capacity
Reservations and Capacity Blocks, and the root volume.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import ECS_NEURON_PAGE, Rule

__all__ = [
    "CAPACITY_BLOCK_TYPE",
    "CAPACITY_SIZE",
    "INF1_ON_MANAGED_INSTANCES",
    "MANAGED_INSTANCES_RESERVATION",
    "NON_NEURON_MANAGED_INSTANCES",
    "NO_SPOT",
    "NO_SUBNETS",
    "RESERVATION_REFERENCE",
    "SMALL_ROOT_VOLUME",
    "SPOT_WITH_RESERVATION",
    "UNKNOWN_EC2_TYPE",
    "UNKNOWN_INSTANCE_TYPE",
]

# ---------------------------------------------------------------- errors ---

UNKNOWN_INSTANCE_TYPE = Rule(
    "NEURON001",
    "Unknown or non-Neuron instance type",
    "only inf1, inf2, trn1, trn1n and trn2 instances carry Neuron devices",
    "use a catalog type; closest: {closest} (NeuronInstanceType.all() lists every type)",
    ECS_NEURON_PAGE,
    checked="both",
)
INF1_ON_MANAGED_INSTANCES = Rule(
    "NEURON002",
    "Inf1 on Managed Instances",
    "Inf1 is supported only on the EC2 launch type, not on ECS Managed Instances",
    "drop inf1/'inferentia' from this Managed Instances capacity and run Inf1 through "
    "NeuronCluster.add_ec2_capacity(..., instance_type='inf1.xlarge') with a ManualNeuronTaskDefinition",
    ECS_NEURON_PAGE,
    checked="both",
)
NON_NEURON_MANAGED_INSTANCES = Rule(
    "NEURON003",
    "Managed Instances capacity that selects no Neuron instance",
    "Neuron capacity selects acceleratorManufacturers amazon-web-services, acceleratorNames "
    "inferentia2/trainium/trainium2 and allowedInstanceTypes inf*/trn*",
    "use accelerators from {allowed} and lowercase instance-type patterns that match catalog types "
    "(e.g. 'inf2.*', 'trn*')",
    ECS_NEURON_PAGE,
)
CAPACITY_SIZE = Rule(
    "NEURON004",
    "Auto Scaling group bounds",
    "an Auto Scaling group needs 0 <= min_capacity <= max_capacity and max_capacity >= 1",
    "pass min_capacity and max_capacity with 0 <= min <= max and max >= 1",
    "EC2 Auto Scaling API",
    checked="both",
)
UNKNOWN_EC2_TYPE = Rule(
    "NEURON031",
    "Instance type EC2 does not offer",
    "EC2 launches only the instance types its API lists (the InstanceType values of the EC2 API)",
    "use an EC2 instance type; closest: {closest}",
    "EC2 API reference: InstanceType",
)
NO_SUBNETS = Rule(
    "NEURON033",
    "No subnets for the capacity",
    "an Auto Scaling group or a Managed Instances capacity launches into at least one subnet of its VPC",
    "pass NeuronCluster(capacity_subnets=...) a selection the VPC has ({available})",
    "EC2 Auto Scaling API: VPCZoneIdentifier",
)
SPOT_WITH_RESERVATION = Rule(
    "NEURON037",
    "Spot capacity with reserved capacity",
    "an instance launches in one market: Spot, a Capacity Block (market type capacity-block), or On-Demand, which "
    "On-Demand Capacity Reservations hold",
    "drop spot=True to use the reservation, or drop capacity_reservation= to run on Spot",
    "EC2 API reference: InstanceMarketOptionsRequest MarketType, CapacityReservationSpecification",
)
CAPACITY_BLOCK_TYPE = Rule(
    "NEURON038",
    "Capacity Block for a type Capacity Blocks do not offer",
    "EC2 Capacity Blocks for ML offer trn1.32xlarge and trn2.48xlarge among the Neuron types (and P GPU types); "
    "an Auto Scaling group targets one block, with one instance type and no mixed instances policy",
    "use an On-Demand Capacity Reservation for {instance_type}, or a Capacity Block of trn1.32xlarge or trn2.48xlarge",
    "EC2 guide: Capacity Blocks for ML; EC2 Auto Scaling guide: Use Capacity Blocks for machine learning workloads",
)
MANAGED_INSTANCES_RESERVATION = Rule(
    "NEURON039",
    "Reservation Managed Instances cannot target",
    "ECS Managed Instances launch into reservations through a Capacity Reservation resource group "
    "(CapacityReservations.ReservationGroupArn with capacity option type RESERVED); a single reservation id, or a "
    "Capacity Block (which cannot be put in a resource group), is not accepted",
    "pass CapacityReservation.on_demand_group(<resource group ARN>), or use Auto Scaling capacity "
    "(add_ec2_capacity) for {reservation}",
    "ECS API reference: InstanceLaunchTemplate capacityOptionType, CapacityReservationRequest; EC2 guide: "
    "Capacity Blocks for ML",
)
NO_SPOT = Rule(
    "NEURON065",
    "Spot for a type EC2 does not sell as Spot",
    "EC2 offers trn2u.48xlarge, the Trn2 UltraServer node, without Spot",
    "drop spot=True for {instance_type}, or buy it On-Demand, with a Capacity Reservation or a Capacity Block",
    "EC2 guide: specifications for accelerated computing instances (Trn2u: Spot support no)",
)

# -------------------------------------------------------------- warnings ---

SMALL_ROOT_VOLUME = Rule(
    "NEURON102",
    "Root volume under 100 GiB",
    "Neuron framework images are large; AWS's Neuron blueprints size the root volume at 100 GiB or more",
    "pass root_volume_gib=100 or more",
    "ecs-blueprints vllm-inferentia",
    severity="warning",
    checked="both",
)
RESERVATION_REFERENCE = Rule(
    "NEURON140",
    "Capacity Reservation named in a form its property does not take",
    "an Auto Scaling group takes On-Demand Capacity Reservations by id (CapacityReservationIds: letters, digits, - _ "
    "and /, such as cr-0123456789abcdef0) and reservation groups by resource group ARN "
    "(CapacityReservationResourceGroupArns); a launch template takes a Capacity Block by its id "
    "(CapacityReservationTarget.CapacityReservationId). A value of the other form fails at deploy",
    "{fix}",
    "EC2 Auto Scaling API reference: CapacityReservationTarget (CapacityReservationIds pattern and length); "
    "EC2 API reference: CapacityReservationTarget",
)
