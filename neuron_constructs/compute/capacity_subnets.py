"""Where a cluster's capacity launches: the subnets a selection selects in the cluster's VPC, and whether any is
public."""

from __future__ import annotations

from typing import NamedTuple

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.knowledge import rules

__all__ = ["Subnets", "select_subnets"]


class Subnets(NamedTuple):
    """Subnets a capacity launches into, and whether any is public."""

    subnets: list[ec2.ISubnet]
    has_public: bool


def select_subnets(
    cluster: Construct,
    vpc: ec2.IVpc,
    path: str | None,
    selection: ec2.SubnetSelection | None,
    capacity_subnets: ec2.SubnetSelection,
) -> Subnets:
    """The subnets ``selection`` (default ``capacity_subnets``, the cluster's) selects in ``vpc``; NEURON033 for
    none."""
    option = "vpc_subnets" if selection is not None else "capacity_subnets"
    selection = selection or capacity_subnets
    fields = ("availability_zones", "one_per_az", "subnet_filters", "subnet_group_name", "subnet_type", "subnets")
    selected: ec2.SelectedSubnets | None = None
    try:
        selected = vpc.select_subnets(**{f: getattr(selection, f) for f in fields})
    except RuntimeError as error:  # aws-cdk-lib: "There are no 'Private' subnet groups in this VPC"
        reason = str(error).split(": ", 1)[-1].split("\n", 1)[0]
    else:
        reason = "it selects no subnet"
    if selected is None or not selected.subnets:
        available = sorted(
            {
                kind
                for kind, group in (
                    ("PUBLIC", vpc.public_subnets),
                    ("PRIVATE_WITH_EGRESS", vpc.private_subnets),
                    ("PRIVATE_ISOLATED", vpc.isolated_subnets),
                )
                if group
            }
        )
        raise rules.NO_SUBNETS.error(
            path or construct_path(cluster),
            f"{option} selects nothing in {construct_path(vpc)}: {reason}",
            available=", ".join(available) or "none",
        )
    return Subnets(list(selected.subnets), has_public=bool(selected.has_public))
