"""``DoctorPolicy``: the least-privilege IAM managed policy ``neuron-ecs doctor`` runs with.

Every action it allows is one ``neuron-ecs doctor`` calls, a read, held to the resources it reads where the action
takes a resource (:data:`~neuron_constructs.knowledge.doctor_permissions.DOCTOR_PERMISSIONS`); the same document
ships as ``neuron_constructs/knowledge/doctor-policy.json`` for an account managed without the CDK.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from constructs import Construct

from neuron_constructs.base import compliance
from neuron_constructs.knowledge.doctor_permissions import policy_document

__all__ = ["DoctorPolicy"]


class DoctorPolicy(Construct):
    """A managed policy that lets ``neuron-ecs doctor`` run every check, and nothing else.

    ``roles``, ``users``, ``groups``: who gets it (default nobody: attach ``policy`` where the pipeline's or an
    engineer's role is). ``managed_policy_name``: default a name CloudFormation makes. The ``ec2:Describe*`` actions
    take no resource-level permission, so they name ``*`` (acknowledged for cdk-nag's IAM5 with that reason)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        roles: Sequence[iam.IRole] = (),
        users: Sequence[iam.IUser] = (),
        groups: Sequence[iam.IGroup] = (),
        managed_policy_name: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.policy = iam.ManagedPolicy(
            self,
            "Policy",
            description="neuron-ecs doctor: read-only checks of quotas, zones, reservations, AMIs, images, routes, "
            "service-linked roles and the CDK bootstrap",
            document=iam.PolicyDocument.from_json(policy_document(Aws.PARTITION)),
            roles=list(roles),
            users=list(users),
            groups=list(groups),
            managed_policy_name=managed_policy_name,
        )
        compliance.acknowledge_doctor_policy(self.policy)
