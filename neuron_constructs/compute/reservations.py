"""Reserved capacity: the :class:`CapacityReservation` a capacity launches into, and the checks of the ids and ARNs
it takes (NEURON140).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from neuron_constructs.base.arguments import is_token
from neuron_constructs.knowledge import rules

__all__ = ["CapacityReservation"]


@dataclass(frozen=True)
class CapacityReservation:
    """Reserved capacity for a Neuron capacity: where scarce instances come from.

    Build one with a class method:

    * :meth:`on_demand` - an On-Demand Capacity Reservation, by id (Auto Scaling capacity);
    * :meth:`on_demand_group` - the reservations of a Capacity Reservation resource group (Auto
      Scaling capacity, and the only kind ECS Managed Instances take);
    * :meth:`capacity_block` - an EC2 Capacity Block for ML, by id (Auto Scaling capacity of
      trn1.32xlarge or trn2.48xlarge). EC2 terminates the block's instances 30 minutes before it
      ends: scale the service and the group to zero before then.

    ``fallback_to_on_demand`` (reservations only): launch On-Demand instances when the reservation
    is full (``capacity-reservations-first``); default False, so instances launch only into the
    reservation (``capacity-reservations-only``).
    """

    kind: Literal["on-demand", "on-demand-group", "capacity-block"]
    target: str
    """The reservation id (``cr-...``) or the resource group ARN."""
    fallback_to_on_demand: bool = False

    @classmethod
    def on_demand(cls, reservation_id: str, *, fallback_to_on_demand: bool = False) -> CapacityReservation:
        """An On-Demand Capacity Reservation by id (``cr-...``; its ARN is refused, NEURON140)."""
        where = "CapacityReservation.on_demand"
        return cls("on-demand", _reservation_id(where, reservation_id), bool(fallback_to_on_demand))

    @classmethod
    def on_demand_group(cls, group_arn: str, *, fallback_to_on_demand: bool = False) -> CapacityReservation:
        """The On-Demand Capacity Reservations of a Capacity Reservation resource group, by its ARN (a reservation's
        ``cr-`` id is refused, NEURON140)."""
        arn = _text("group_arn", group_arn)
        if is_token(arn) or _GROUP_ARN.fullmatch(arn):
            return cls("on-demand-group", arn, bool(fallback_to_on_demand))
        reservation = arn if arn.startswith("cr-") else (m["id"] if (m := _RESERVATION_ARN.fullmatch(arn)) else None)
        what = "a Capacity Reservation's id" if arn.startswith("cr-") else "a Capacity Reservation's ARN"
        group = "the ARN of a resource group (arn:aws:resource-groups:<region>:<account>:group/<name>)"
        raise rules.RESERVATION_REFERENCE.error(
            "CapacityReservation.on_demand_group",
            f"group_arn={arn[:100]!r} is "
            + (f"{what}, not a resource group's ARN" if reservation else "not a resource group's ARN"),
            fix=(
                f"pass CapacityReservation.on_demand({reservation!r}) for that one reservation, or {group} that "
                "holds it"
                if reservation
                else f"pass {group}"
            ),
        )

    @classmethod
    def capacity_block(cls, reservation_id: str) -> CapacityReservation:
        """An EC2 Capacity Block for ML by its reservation id (``cr-...``; its ARN is refused, NEURON140; blocks
        cannot be grouped)."""
        return cls("capacity-block", _reservation_id("CapacityReservation.capacity_block", reservation_id))

    def describe(self) -> str:
        """How messages name it: ``Capacity Block cr-...``, ``reservation group arn:...``."""
        names = {"on-demand": "On-Demand Capacity Reservation", "on-demand-group": "reservation group"}
        return f"{names.get(self.kind, 'Capacity Block')} {self.target}"


def _text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise rules.WRONG_TYPE.error("CapacityReservation", f"{name}={value!r}", expected=f"{name} as a string")
    return value


_RESERVATION_ID = re.compile(r"[A-Za-z0-9_/-]{1,255}")
"""What ``CapacityReservationIds`` takes (EC2 Auto Scaling API reference: CapacityReservationTarget, pattern and
length); a Capacity Block's ``CapacityReservationId`` in a launch template is the same ``cr-`` id."""
_GROUP_ARN = re.compile(r"arn:aws(-[a-z]{1,10}){0,3}:resource-groups:[a-z0-9-]{1,30}:\d{12}:group/[\w.-]{1,128}")
"""A resource group's ARN (Resource Groups API reference: GroupArn, group names of letters, digits, ``_ . -``)."""
_RESERVATION_ARN = re.compile(r"arn:[a-z-]+:ec2:[a-z0-9-]*:\d*:capacity-reservation/(?P<id>cr-[A-Za-z0-9]+)")


def _reservation_id(where: str, value: object) -> str:
    """NEURON140: ``value``, a Capacity Reservation's id as the property takes it; its ARN is refused naming the id
    (nothing is rewritten). A deploy-time value is taken as given."""
    text = _text("reservation_id", value)
    if is_token(text) or _RESERVATION_ID.fullmatch(text):
        return text
    arn = _RESERVATION_ARN.fullmatch(text)
    if arn is not None:
        raise rules.RESERVATION_REFERENCE.error(
            where,
            f"reservation_id={text!r} is the reservation's ARN, and CapacityReservationIds takes ids",
            fix=f"pass the id the ARN ends with, {arn['id']!r}",
        )
    raise rules.RESERVATION_REFERENCE.error(
        where,
        f"reservation_id={text[:80]!r} is not a Capacity Reservation id",
        fix="pass the reservation's id as EC2 shows it (cr- followed by 17 letters and digits: aws ec2 "
        "describe-capacity-reservations)",
    )
